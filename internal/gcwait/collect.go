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
