package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Collecting Go 1.23 iterators of maps and slices, and iterators of strings into them.
func main() {
	ages := map[string]int{"ann": 31, "bob": 25, "cy": 40}
	names := slices.Sorted(maps.Keys(ages))
	fmt.Println(names)
	vals := slices.Collect(maps.Values(ages))
	slices.Sort(vals)
	fmt.Println(vals, len(vals))
	fields := slices.Collect(strings.FieldsSeq("b a c"))
	fmt.Println(fields, slices.Sorted(slices.Values(fields)))
	byIndex := maps.Collect(slices.All([]string{"x", "y"}))
	fmt.Println(byIndex[0], byIndex[1], len(byIndex))
	more := map[string]int{"dee": 22}
	maps.Insert(more, maps.All(ages))
	fmt.Println(len(more), more["dee"], more["cy"])
	fmt.Println(slices.AppendSeq([]string{"z"}, slices.Values(names)))
	slices.Backward(names)(func(i int, v string) bool {
		fmt.Print(i, v, " ")
		return true
	})
	fmt.Println()
	words := slices.Collect(strings.SplitSeq("go,is,fun", ","))
	fmt.Println(len(words), strings.Join(words, " "))
}
