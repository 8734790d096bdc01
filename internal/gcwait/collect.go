// Package gcwait asks the garbage collector for memory it does not see: GPU blocks and host
// mappings that cleanups (runtime.AddCleanup) give back when the arrays holding them become
// unreachable. Cleanups run on their own goroutine after a collection, so the caller waits
// for them.
package gcwait

import (
	"runtime"
	"time"
)

// Until runs the collector, then waits up to 100 ms, in 5 ms steps, until freed reports that
// cleanups have given memory back.
func Until(freed func() bool) {
	runtime.GC()
	for i := 0; i < 20 && !freed(); i++ {
		time.Sleep(5 * time.Millisecond)
	}
}

// Collect runs the collector and waits until the cleanups it queued have run: it queues a
// sentinel's cleanup behind them with a second collection and waits for it, up to a generous
// limit (a busy machine delays the cleanup goroutines; nothing waits on a clock in the common
// case). Unlike Until it does not stop at the first memory given back, so every array that
// was unreachable when it was called has given its memory back when it returns.
func Collect() {
	runtime.GC()
	// Cleanups run on several goroutines, a block of them at a time: two rounds of sentinels
	// let a goroutine that took an earlier block finish it.
	for range 2 {
		done := make(chan struct{})
		func() {
			// Larger than the tiny allocator's blocks, which can keep a small object alive.
			x := new([32]uint64)
			runtime.AddCleanup(x, func(c chan struct{}) { close(c) }, done)
		}()
		runtime.GC()
		select {
		case <-done:
		case <-time.After(collectWait):
		}
	}
}

// collectWait is how long Collect waits for the sentinel's cleanup at most: a cleanup that
// blocks (a cluster chunk's release over the network) must not stall an allocation for long;
// past it the caller frees what has been given back by then.
const collectWait = 5 * time.Second
