package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The common generic functions of slices and maps, on slices from literals, from compiled
// functions (strings.Fields) and of a named type, with compiled comparison funcs.
type IDs []int

func main() {
	s := []int{3, 1, 2, 3, 3}
	fmt.Println(slices.Index(s, 2), slices.Contains(s, 3), slices.Max(s), slices.Min(s))
	c := slices.Clone(s)
	slices.Reverse(c)
	fmt.Println(c)
	fmt.Println(slices.Equal(s, c), slices.Compare(s, c))
	slices.Sort(c)
	fmt.Println(slices.Compact(c))
	i, found := slices.BinarySearch(c, 2)
	fmt.Println(i, found)
	fmt.Println(slices.Insert([]int{1, 2}, 1, 9), slices.Delete([]int{1, 2, 3, 4}, 1, 3))
	fmt.Println(slices.Concat([]int{1}, []int{2, 3}))
	fmt.Println(slices.IndexFunc(s, func(v int) bool { return v < 2 }), slices.ContainsFunc(s, func(v int) bool { return v > 5 }))
	fmt.Println(slices.Repeat([]string{"a"}, 3))
	ids := IDs{5, 4}
	slices.Sort(ids)
	fmt.Println(ids, slices.Index(ids, 5))
	m := map[string]int{"b": 2, "a": 1}
	fmt.Println(slices.Sorted(maps.Keys(m)), slices.Sorted(maps.Values(m)))
	m2 := maps.Clone(m)
	fmt.Println(maps.Equal(m, m2), len(m2))
	maps.DeleteFunc(m2, func(k string, v int) bool { return v > 1 })
	fmt.Println(m2)
	fmt.Println(slices.Collect(maps.Keys(m2)))
	words := strings.Fields("b a c")
	slices.SortFunc(words, strings.Compare)
	fmt.Println(words, slices.IsSorted(words))
	for ch := range slices.Chunk([]int{1, 2, 3, 4, 5}, 2) {
		fmt.Print(ch)
	}
	fmt.Println()
	fmt.Println(slices.MaxFunc(words, strings.Compare))
}
