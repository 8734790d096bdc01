package main

import (
	"fmt"
)

func counter() (n int) {
	defer func() { n *= 2 }()
	n = 3
	return n
}

func main() {
	fmt.Println(counter())
}
