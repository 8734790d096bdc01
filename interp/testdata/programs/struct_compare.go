package main

import (
	"fmt"
)

type P struct{ X, Y int }

func main() {
	a, b := P{1, 2}, P{1, 2}
	seen := map[P]bool{a: true}
	fmt.Println(a == b, seen[b])
}
