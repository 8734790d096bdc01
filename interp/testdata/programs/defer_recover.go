package main

import "fmt"

func mayPanic(n int) int {
	if n > 2 {
		panic(fmt.Sprintf("n too large: %d", n))
	}
	return n * 10
}

func main() {
	defer func() {
		if r := recover(); r != nil {
			fmt.Println("Recovered. Error:\n", r)
		}
	}()
	for i := 1; i <= 3; i++ {
		defer fmt.Println("deferred", i)
		fmt.Println(mayPanic(i))
	}
	fmt.Println("After mayPanic()")
}
