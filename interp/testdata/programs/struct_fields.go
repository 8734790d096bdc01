package main

import (
	"fmt"
)

type Point struct {
	X, Y  int
	label string
}

func main() {
	p := Point{1, 2, "origin"}
	fmt.Printf("%+v\n", p)
}
