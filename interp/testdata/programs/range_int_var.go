package main

import (
	"fmt"
)

func main() {
	n := 3
	total := 0
	for i := range n {
		total += i
	}
	fmt.Println("total", total)
}
