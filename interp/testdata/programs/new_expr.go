package main

import "fmt"

type Point struct{ X, Y int }

func main() {
	p := new(42)
	f := new(2.5)
	s := new("hi" + "!")
	pt := new(Point{1, 2})
	b := new(true)
	n := new(len("four"))
	*p++
	fmt.Println(*p, *f, *s, *pt, *b, *n)
	fmt.Printf("%T %T %T\n", p, f, s)
	z := new(int)
	fmt.Println(*z)
}
