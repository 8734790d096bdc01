package main

import (
	"fmt"
)

func pairs(yield func(int, string) bool) {
	for i, s := range []string{"x", "y"} {
		if !yield(i, s) {
			return
		}
	}
}

func main() {
	for i, s := range pairs {
		fmt.Println(i, s)
	}
}
