package main

import (
	"fmt"
	"sync"
)

// A closure created in a loop and called before the next one is used: yaegi v0.16.1 restored
// the literal's slot in the loop's frame when a closure returned, so the next iteration's
// closure read back as nil (and a goroutine started on it killed the process).
var prev func()

func use(f func(), _ int) {
	fmt.Println("nil:", f == nil)
	prev = f
}

func callPrev() int {
	if prev != nil {
		prev()
	}
	return 0
}

func main() {
	for i := 0; i < 3; i++ {
		use(func() { fmt.Println("closure", i) }, callPrev())
	}
	prev()

	// The same, with goroutines that finish while the loop starts the next ones.
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			n++
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Println(n)
}
