package main

import (
	"cmp"
	"fmt"
)

func Larger[T cmp.Ordered](a, b T) T {
	if a > b {
		return a
	}
	return b
}

func main() {
	fmt.Println(Larger(1.5, 2), Larger(3, 1), Larger("a", "b"))
	fmt.Println(cmp.Compare(2.5, 1), cmp.Less(-0.5, 0))
}
