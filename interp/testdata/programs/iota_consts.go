package main

import (
	"fmt"
)

const (
	KB = 1 << (10 * (iota + 1))
	MB
	GB
)

func main() {
	fmt.Println(KB, MB, GB)
}
