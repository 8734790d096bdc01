package main

import (
	"fmt"
)

type op func(int, int) int

func apply(f op, a, b int) int { return f(a, b) }

func main() {
	add := func(a, b int) int { return a + b }
	ops := map[string]op{"add": add, "mul": func(a, b int) int { return a * b }}
	fmt.Println(apply(ops["add"], 2, 3), apply(ops["mul"], 2, 3))
}
