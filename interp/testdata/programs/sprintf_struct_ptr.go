package main

import (
	"fmt"
)

type T struct {
	A int
	B string
}

func main() {
	t := &T{1, "x"}
	fmt.Printf("%v %+v\n", *t, *t)
}
