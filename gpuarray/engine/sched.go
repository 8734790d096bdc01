package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Inline runs tasks one after the other on the calling goroutine (gpuarray.Inline).
type Inline struct{}

// Run executes tasks in order on the CPU (package cpu), calling done(1) after each.
func (Inline) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	outs := make([]*plan.Output, len(tasks))
	for i, t := range tasks {
		o, err := cpu.Execute(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("chunk %d at %v: %w", t.Index, t.Offset, err)
		}
		outs[i] = o
		done(1)
	}
	return outs, nil
}

// Threads runs tasks on N goroutines (0: GOMAXPROCS), the default CPU scheduler
// (gpuarray.Threads).
type Threads struct{ N int }

// Run executes tasks on the CPU (package cpu) on s.N goroutines, calling done(1) after each;
// the first error cancels the rest.
func (s *Threads) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	n := s.N
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	n = min(n, len(tasks))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outs := make([]*plan.Output, len(tasks))
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o, err := cpu.Execute(ctx, tasks[i])
				if err != nil {
					once.Do(func() {
						firstErr = fmt.Errorf("chunk %d at %v: %w", tasks[i].Index, tasks[i].Offset, err)
						cancel()
					})
					continue
				}
				outs[i] = o
				done(1)
			}
		}()
	}
feed:
	for i := range tasks {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return outs, nil
}
