package dtype

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestKeepAliveHoldsTheOwner: a Slice made with KeepAlive, and a Slice of it, keep the owner
// reachable (its cleanup, which would unmap the values, does not run); once neither is held,
// the owner is collected.
func TestKeepAliveHoldsTheOwner(t *testing.T) {
	var freed atomic.Bool
	type owner struct{ _ [64]byte }
	s := func() Slice {
		o := &owner{}
		runtime.AddCleanup(o, func(f *atomic.Bool) { f.Store(true) }, &freed)
		return KeepAlive(OfFloat64(make([]float64, 100)), o).Slice(10, 20)
	}()
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if freed.Load() {
		t.Fatal("the owner was collected while a Slice of its values was held")
	}
	if s.Len() != 10 {
		t.Fatalf("Len %d", s.Len())
	}
	runtime.KeepAlive(s)
	s = Slice{}
	for i := 0; i < 100 && !freed.Load(); i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if !freed.Load() {
		t.Fatal("the owner was never collected once no Slice held it")
	}
}
