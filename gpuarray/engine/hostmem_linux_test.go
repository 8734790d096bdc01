package engine

import (
	"runtime"
	"testing"
	"time"
)

// TestHostBufferUnmapsWithItsOwner: a held array's host copy is fresh zeroed memory, and it
// goes back to the system once the buffer that owns it is unreachable.
func TestHostBufferUnmapsWithItsOwner(t *testing.T) {
	base := mapped.Load()
	func() {
		owner := &struct{ b [64]byte }{} // not a tiny allocation, whose cleanups may not run
		v, err := HostBuffer(owner, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range v {
			if x != 0 {
				t.Fatalf("element %d = %v in fresh memory", i, x)
			}
		}
		v[len(v)-1] = 3
		if got := mapped.Load() - base; got != 8<<20 {
			t.Fatalf("mapped %d bytes, want %d", got, 8<<20)
		}
		runtime.KeepAlive(owner)
	}()
	for i := 0; i < 100 && mapped.Load() > base; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if got := mapped.Load(); got != base {
		t.Errorf("after the owner became unreachable %d bytes stay mapped, %d before", got, base)
	}
}
