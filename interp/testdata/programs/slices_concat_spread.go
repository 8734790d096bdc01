package main

import (
	"fmt"
	"slices"
)

func main() {
	parts := [][]int{{1, 2}, {3}, {4, 5}}
	all := slices.Concat(parts...)
	fmt.Println(all, len(all))
	words := slices.Concat([]string{"a"}, []string{"b", "c"})
	fmt.Println(words)
	var none [][]float64
	fmt.Println(slices.Concat(none...) == nil)
}
