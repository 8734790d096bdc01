package gcwait

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestUntilWaitsForCleanups: an unreachable object's cleanup has run when Until returns, and
// Until gives up after its wait when nothing is freed.
func TestUntilWaitsForCleanups(t *testing.T) {
	var freed atomic.Bool
	func() {
		x := new([64]byte)
		runtime.AddCleanup(x, func(f *atomic.Bool) { f.Store(true) }, &freed)
	}()
	Until(freed.Load)
	if !freed.Load() {
		t.Fatal("the cleanup had not run when Until returned")
	}
	t0 := time.Now()
	Until(func() bool { return false })
	if d := time.Since(t0); d < 90*time.Millisecond {
		t.Errorf("Until with nothing to free returned after %v, want at least its 100 ms wait", d)
	}
}
