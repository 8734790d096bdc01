package main

import (
	"fmt"
)

func main() {
	x := 1
	if x := 2; x > 1 {
		fmt.Println("inner", x)
	}
	{
		x := 3
		_ = x
	}
	fmt.Println("outer", x)
}
