package main

import (
	"fmt"
)

type Greeter struct{ name string }

func (g Greeter) Greet(p string) string { return g.name + " greets " + p }

func main() {
	f := Greeter{"ann"}.Greet
	fmt.Println(f("bob"))
}
