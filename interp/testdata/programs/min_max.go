package main

import (
	"fmt"
)

func main() {
	a, b := 3, 7
	fmt.Println(min(a, b), max(a, b), min(2.5, 1.5), max("x", "y"))
}
