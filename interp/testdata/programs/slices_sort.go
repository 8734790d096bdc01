package main

import (
	"fmt"
	"slices"
)

func main() {
	xs := []int{5, 2, 8, 1}
	slices.Sort(xs)
	fmt.Println(xs, slices.Contains(xs, 8), slices.Index(xs, 5))
}
