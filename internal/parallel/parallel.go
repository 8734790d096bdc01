// Package parallel runs independent pieces of work (the lines of a block, say) on all cores.
package parallel

import (
	"context"
	"runtime"
	"sync"
)

// ForEach runs f(k) for k = 0 … count-1 on GOMAXPROCS goroutines. Each goroutine gets its own
// f from newWorker, so it can keep buffers or plans that are not safe to share; the indices
// are handed out in runs of about count/(8*workers). It stops early, between runs, when ctx is
// cancelled, and returns ctx's error then.
func ForEach(ctx context.Context, count int, newWorker func() func(k int)) error {
	workers := min(runtime.GOMAXPROCS(0), count)
	if workers <= 1 {
		f := newWorker()
		for k := 0; k < count; k++ {
			if k&63 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			f(k)
		}
		return ctx.Err()
	}
	var mu sync.Mutex
	next := 0
	step := max(1, count/(8*workers))
	take := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		lo := next
		next = min(count, next+step)
		return lo, next
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := newWorker()
			for {
				lo, hi := take()
				if lo >= hi || ctx.Err() != nil {
					return
				}
				for k := lo; k < hi; k++ {
					f(k)
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
