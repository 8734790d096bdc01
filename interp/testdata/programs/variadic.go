package main

import (
	"fmt"
)

func sum(nums ...int) int {
	t := 0
	for _, n := range nums {
		t += n
	}
	return t
}

func main() {
	xs := []int{1, 2, 3}
	fmt.Println(sum(), sum(4, 5), sum(xs...))
}
