package main

import (
	"fmt"
	"maps"
	"slices"
)

// Ranging directly over the standard library's iterators (Go 1.23): slices.Backward,
// slices.All, slices.Values, maps.All, with closures that keep the loop's variables.
func main() {
	words := []string{"go", "is", "fun"}
	for i, w := range slices.Backward(words) {
		fmt.Println(i, w)
	}
	var later []func() string
	for i, w := range slices.Backward(words) {
		later = append(later, func() string { return fmt.Sprint(i, w) })
	}
	for _, f := range later {
		fmt.Print(f(), " ")
	}
	fmt.Println()
	calls := 0
	get := func() []int { calls++; return []int{1, 2, 3} }
	sum := 0
	for _, v := range slices.Backward(get()) {
		sum = sum*10 + v
	}
	fmt.Println(sum, calls)
	for i := range slices.Backward(words) {
		fmt.Print(i)
	}
	fmt.Println()
	for i, w := range slices.All(words) {
		if i == 1 {
			continue
		}
		fmt.Print(w, " ")
	}
	fmt.Println()
	for w := range slices.Values(words) {
		if w == "fun" {
			break
		}
		fmt.Print(w, " ")
	}
	fmt.Println()
	m := map[string]int{"a": 1, "b": 2, "c": 3}
	total := 0
	for k, v := range maps.All(m) {
		total += v * len(k)
	}
	fmt.Println(total)
	fmt.Println(lastNegative([]int{4, -1, 5, -2, 6}))
}

func lastNegative(xs []int) (int, int) {
	for i, x := range slices.Backward(xs) {
		if x < 0 {
			return i, x
		}
	}
	return -1, 0
}
