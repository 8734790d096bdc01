package main

import (
	"fmt"
)

func main() {
	a := [3]int{1, 2, 3}
	b := a
	b[0] = 9
	s := a[:]
	s[1] = 7
	fmt.Println(a, b, len(s), cap(s))
}
