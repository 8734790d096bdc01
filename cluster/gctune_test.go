package cluster

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// TestGCPercentFor checks the collector's percent: growth past the live heap by the working
// heap (the live heap net of the stored results) or gcFloor, within [gcMinPercent, 100].
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, stored uint64
		want         int
	}{
		{0, 0, 100},
		{32 * mib, 0, 100},          // a small heap: the default
		{1000 * mib, 0, 100},        // no stored results: the default
		{1000 * mib, 500 * mib, 50}, // half of it working
		{480 * mib, 448 * mib, 13},  // a shuffle's: the floor, 64 of 480
		{160 * mib, 150 * mib, 40},  // the floor, 64 of 160
		{8000 * mib, 8000 * mib, gcMinPercent},
		{100 * mib, 200 * mib, 64}, // stored counted past the live heap: the floor
	} {
		if got := gcPercentFor(c.live, c.stored); got != c.want {
			t.Errorf("gcPercentFor(%d MiB live, %d MiB stored) = %d, want %d", c.live/mib, c.stored/mib, got, c.want)
		}
	}
}

// gcPercentNow reads the collector's percent.
func gcPercentNow(t *testing.T) int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Skip("no /gc/gogc:percent metric")
	}
	return int(s[0].Value.Uint64())
}

// TestGCTunerFollowsTheStore checks that a store's host results lower the collector's
// percent after a collection, and that it is back to the default once the store is gone.
func TestGCTunerFollowsTheStore(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the tuner is off")
	}
	if p := gcPercentNow(t); p != 100 {
		t.Skipf("the collector's percent is %d before the test, not the default", p)
	}
	st := newStore(0, 0, t.TempDir())
	defer st.close()
	st.putBlob("a", &blob{Data: make([]byte, 256<<20)}) // never touched: no resident pages
	remove := tuneGCFor(st)
	// The percent is set at the end of a collection; the safety net is generous, the check
	// is on the percent, not on the time.
	deadline := time.Now().Add(30 * time.Second)
	for gcPercentNow(t) >= 100 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	p := gcPercentNow(t)
	remove()
	if p < gcMinPercent || p > 30 {
		t.Fatalf("percent %d with 256 MiB stored in a heap of about that: want about the floor's, 64 MiB of it (%d-30)", p, gcMinPercent)
	}
	if p := gcPercentNow(t); p != 100 {
		t.Fatalf("percent %d after the store left, want 100", p)
	}
	runtime.KeepAlive(st)
}

// TestReleaseFree checks when a worker gives its free heap pages back: past gcFloor or an
// eighth of the live heap, whichever is more.
func TestReleaseFree(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, free uint64
		want       bool
	}{
		{0, 0, false},
		{100 * mib, 64 * mib, false},
		{100 * mib, 65 * mib, true},
		{510 * mib, 63 * mib, false}, // a shuffle worker's at its peak: 64 MiB allowed
		{510 * mib, 165 * mib, true}, // what it kept before
		{4000 * mib, 400 * mib, false},
		{4000 * mib, 600 * mib, true},
	} {
		if got := releaseFree(c.live, c.free); got != c.want {
			t.Errorf("releaseFree(%d MiB live, %d MiB free) = %v, want %v", c.live/mib, c.free/mib, got, c.want)
		}
	}
}

// TestGCTunerGivesFreePagesBack checks that free heap pages past the floor left by a
// collection are given back to the system while a store is tuned.
func TestGCTunerGivesFreePagesBack(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the tuner is off")
	}
	free := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	st := newStore(0, 0, t.TempDir())
	defer st.close()
	remove := tuneGCFor(st)
	defer remove()
	// 192 MiB in 4 MiB buffers, written, then garbage: the collection frees their pages.
	bufs := make([][]byte, 48)
	for i := range bufs {
		bufs[i] = make([]byte, 4<<20)
		for j := 0; j < len(bufs[i]); j += 4096 {
			bufs[i][j] = 1
		}
	}
	bufs = nil
	runtime.KeepAlive(bufs)
	deadline := time.Now().Add(30 * time.Second) // a safety net: the check is on the bytes
	for free() > gcFloor && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if f := free(); f > gcFloor {
		t.Fatalf("%d MiB of free heap pages kept after the collections, want at most %d MiB", f>>20, gcFloor>>20)
	}
}
