package main

import (
	"fmt"
)

func worker(jobs <-chan int, results chan<- int) {
	for j := range jobs {
		results <- j * 10
	}
}

func main() {
	jobs := make(chan int, 5)
	results := make(chan int, 5)
	for w := 0; w < 3; w++ {
		go worker(jobs, results)
	}
	for j := 1; j <= 5; j++ {
		jobs <- j
	}
	close(jobs)
	sum := 0
	for i := 0; i < 5; i++ {
		sum += <-results
	}
	fmt.Println(sum)
}
