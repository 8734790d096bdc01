package main

import (
	"fmt"
)

func makeCounter() func() int {
	c := 0
	return func() int {
		c++
		return c
	}
}

func main() {
	next := makeCounter()
	next()
	next()
	fmt.Println(next())
}
