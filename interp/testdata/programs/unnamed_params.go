package main

import (
	"fmt"
	"sort"
	"strings"
)

// Functions with unnamed parameters, called by compiled code (sort, strings) and directly.
func always(string, int) bool { return true }

func main() {
	xs := []int{3, 1, 2}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	fmt.Println(xs)
	n := 0
	up := strings.Map(func(rune) rune { n++; return 'x' }, "abc")
	fmt.Println(up, n)
	keep := 0
	sort.SliceStable(xs, func(int, int) bool { keep++; return false })
	fmt.Println(xs, keep > 0)
	fmt.Println(always("a", 1))
	var f func(string, int) bool = always
	fmt.Println(f("b", 2))
}
