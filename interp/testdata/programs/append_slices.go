package main

import (
	"fmt"
)

func main() {
	var s []int
	for i := 0; i < 5; i++ {
		s = append(s, i*i)
	}
	t := make([]int, 2)
	n := copy(t, s)
	fmt.Println(s, t, n, s[1:3])
}
