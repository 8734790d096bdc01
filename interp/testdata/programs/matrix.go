package main

import (
	"fmt"
)

func main() {
	const n = 3
	var m [n][n]int
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			m[i][j] = i * j
		}
	}
	for _, row := range m {
		fmt.Println(row)
	}
}
