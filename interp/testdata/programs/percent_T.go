package main

import (
	"fmt"
)

type Celsius float64

type T struct{ S string }

func main() {
	fmt.Printf("%T %T\n", &T{"x"}, Celsius(3))
}
