package main

import (
	"fmt"
)

func grade(n int) string {
	switch {
	case n >= 90:
		return "A"
	case n >= 80:
		return "B"
	}
	return "C"
}

func main() {
	switch x := 2; x {
	case 2:
		fmt.Println("two")
		fallthrough
	case 3:
		fmt.Println("three")
	}
	fmt.Println(grade(95), grade(85), grade(10))
}
