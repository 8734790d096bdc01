package parallel_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gpunotes/gpunotes/internal/parallel"
)

func TestForEachRunsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		seen := make([]atomic.Int32, n)
		var workers atomic.Int32
		err := parallel.ForEach(context.Background(), n, func() func(int) {
			workers.Add(1)
			return func(k int) { seen[k].Add(1) }
		})
		if err != nil {
			t.Fatal(err)
		}
		for k := range seen {
			if c := seen[k].Load(); c != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, k, c)
			}
		}
		if n > 0 && workers.Load() == 0 {
			t.Fatalf("n=%d: no worker made", n)
		}
	}
}

func TestForEachStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int64
	err := parallel.ForEach(ctx, 1<<20, func() func(int) { return func(int) { ran.Add(1) } })
	if err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if ran.Load() == 1<<20 {
		t.Fatal("every index ran although the context was cancelled")
	}
}
