package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

func main() {
	words := []string{"go", "is", "fun"}
	for i, w := range slices.All(words) {
		fmt.Println(i, w)
	}
	var funcs []func() string
	for w := range slices.Values(words) {
		funcs = append(funcs, func() string { return w })
	}
	for _, f := range funcs {
		fmt.Print(f(), " ")
	}
	fmt.Println()
	ages := map[string]int{"ann": 31, "bob": 25, "cy": 40}
	var names []string
	for name := range maps.Keys(ages) {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Println(names)
	total := 0
	for a := range maps.Values(ages) {
		total += a
	}
	fmt.Println(total)
	n := 0
	for k, v := range maps.All(ages) {
		if v > 30 {
			n += len(k)
		}
	}
	fmt.Println(n)
}
