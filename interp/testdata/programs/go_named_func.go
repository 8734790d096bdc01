package main

import (
	"fmt"
	"sort"
)

func work(id int, out chan<- string) {
	out <- fmt.Sprintf("worker %d done", id)
}

func main() {
	out := make(chan string)
	for i := 1; i <= 3; i++ {
		go work(i, out)
	}
	var got []string
	for i := 0; i < 3; i++ {
		got = append(got, <-out)
	}
	sort.Strings(got)
	for _, g := range got {
		fmt.Println(g)
	}
}
