package main

import (
	"fmt"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	x := 1
	wg.Add(1)
	go func(v int) {
		defer wg.Done()
		fmt.Println("got", v)
	}(x)
	x = 2
	wg.Wait()
	fmt.Println("x is", x)
}
