package main

import (
	"fmt"
)

func main() {
	fmt.Println(first())
}

func first() string { return "first calls " + second() }

func second() string { return "second" }
