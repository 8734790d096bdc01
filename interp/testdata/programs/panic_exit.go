package main

import (
	"fmt"
)

func main() {
	defer fmt.Println("deferred before panic")
	fmt.Println("start")
	var m map[string]int
	m["x"] = 1
}
