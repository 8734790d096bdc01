package main

import (
	"fmt"
	"sort"
)

func Equal[S ~[]E, E comparable](a, b S) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func Keys[M ~map[K]V, K comparable, V any](m M) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func MapValues[K comparable, V, R any](m map[K]V, f func(V) R) map[K]R {
	out := make(map[K]R, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}

type IDs []int

func main() {
	fmt.Println(Equal([]int{1, 2}, []int{1, 2}), Equal(IDs{1}, IDs{2}))
	ks := Keys(map[string]int{"b": 2, "a": 1})
	sort.Strings(ks)
	fmt.Println(ks)
	sq := MapValues(map[string]int{"x": 3}, func(v int) string { return fmt.Sprint(v * v) })
	fmt.Println(sq["x"])
}
