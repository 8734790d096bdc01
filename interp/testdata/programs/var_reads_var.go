package main

import (
	"fmt"
)

var base = 10
var derived = base * 2

func main() {
	fmt.Println(base, derived)
}
