package main

import (
	"fmt"
)

func main() {
	fmt.Printf("|%5d|%-5s|%05.1f|%x|%q|\n", 42, "ab", 3.14159, 255, 'x')
	fmt.Printf("%v %v\n", []string{"a"}, map[string]int{"k": 1})
}
