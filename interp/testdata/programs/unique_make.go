package main

import (
	"fmt"
	"unique"
)

type point struct{ X, Y int }

func canon(names []string) []unique.Handle[string] {
	var hs []unique.Handle[string]
	for _, n := range names {
		hs = append(hs, unique.Make(n))
	}
	return hs
}

func main() {
	hs := canon([]string{"gpu", "cpu", "g" + "pu"})
	fmt.Println(hs[0] == hs[2], hs[0] == hs[1], hs[0].Value(), hs[1].Value())
	p := unique.Make(point{1, 2})
	fmt.Println(p.Value().X, p == unique.Make(point{1, 2}), p == unique.Make(point{2, 1}))
	n := unique.Make(42)
	fmt.Println(n.Value()+1, n == unique.Make(40+2))
}
