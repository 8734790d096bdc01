package main

import (
	"fmt"
	"math"
)

type Shape interface {
	Area() float64
}

type Rect struct{ W, H float64 }

type Circle struct{ R float64 }

func (r Rect) Area() float64 { return r.W * r.H }

func (c Circle) Area() float64 { return math.Pi * c.R * c.R }

func main() {
	shapes := []Shape{Rect{2, 3}, Circle{1}}
	for _, s := range shapes {
		fmt.Printf("%.2f\n", s.Area())
	}
}
