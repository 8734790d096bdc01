package main

import (
	"fmt"
	"sync"
	"sync/atomic"
)

type Config struct {
	Version int
}

func main() {
	var cur atomic.Pointer[Config]
	fmt.Println(cur.Load() == nil)
	cur.Store(&Config{Version: 1})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				old := cur.Load()
				if cur.CompareAndSwap(old, &Config{Version: old.Version + 1}) {
					return
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println(cur.Load().Version)
	prev := cur.Swap(&Config{Version: 100})
	fmt.Println(prev.Version, cur.Load().Version)
}
