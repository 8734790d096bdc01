package main

import (
	"fmt"
)

func main() {
	var x any = 42
	if n, ok := x.(int); ok {
		fmt.Println("int", n)
	}
	s, ok := x.(string)
	fmt.Printf("%q %v\n", s, ok)
}
