package main

import (
	"fmt"
	"strings"
)

func Reduce[T, A any](xs []T, init A, f func(A, T) A) A {
	acc := init
	for _, x := range xs {
		acc = f(acc, x)
	}
	return acc
}

func Filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

func main() {
	words := []string{"go", "gopher", "rust", "gc"}
	total := Reduce(words, 0, func(n int, w string) int { return n + len(w) })
	fmt.Println(total)
	g := Filter(words, func(w string) bool { return strings.HasPrefix(w, "g") })
	fmt.Println(g, len(g))
	joined := Reduce(g, "", func(acc string, w string) string { return acc + "/" + w })
	fmt.Println(joined)
}
