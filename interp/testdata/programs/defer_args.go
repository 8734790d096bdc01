package main

import (
	"fmt"
)

func run() {
	y := 1
	defer fmt.Println("deferred y =", y)
	y = 2
	fmt.Println("y =", y)
}

func main() {
	run()
}
