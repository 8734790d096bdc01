package main

import "fmt"

func first(n int) int { return second(n) + 1 }

func second(n int) int {
	if n <= 0 {
		return 0
	}
	return first(n-1) * 2
}

func main() {
	fmt.Println(first(3), second(4))
	fmt.Println(helper("x"))
}

func helper(s string) string { return s + s }
