package cluster

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// The collector's percent (GOGC) lets garbage grow in proportion to the live heap: at its
// default, 100, the heap may reach twice what the last collection found live. A worker's live
// heap is mostly its store's results and shuffle pieces, large buffers that make no garbage
// while they are held; the garbage comes from the tasks' working buffers. A shuffle worker
// holding 480 MB of input and received pieces was let grow to about 1 GB. So, after every
// collection, a worker sets the percent that lets the heap grow past the live heap by the
// working heap (the live heap net of the stores' host results), or by gcFloor when that is
// more: the collector runs about as often per byte of the tasks' buffers as with the default,
// and the stored results are not counted twice. The memory limit, when set, caps it as before.
// GOGC in the environment turns this off.

// gcFloor is the least growth past the live heap a worker's collector allows.
const gcFloor = 64 << 20

// gcMinPercent bounds the percent from below: a store of many GB does not make the collector
// run for every gcFloor bytes allocated.
const gcMinPercent = 10

// gcPercentFor returns the collector's percent for a live heap of live bytes of which stored
// are the stores' host results: growth by the rest of the live heap or gcFloor, whichever is
// more, as a percent of live, within [gcMinPercent, 100].
func gcPercentFor(live, stored uint64) int {
	if live == 0 {
		return 100
	}
	work := uint64(gcFloor)
	if live > stored && live-stored > work {
		work = live - stored
	}
	p := work * 100 / live
	return int(min(max(p, gcMinPercent), 100))
}

// gcTuner sets the process's collector percent after every collection from the stores of the
// workers it runs (one process may run several, in tests).
var gcTuner struct {
	mu     sync.Mutex
	stores map[*store]bool
	armed  bool
	last   int
}

// gcSentinel is the object whose collection marks the end of a cycle (it holds a pointer,
// so it is never in a tiny-allocator block that something else keeps alive).
type gcSentinel struct{ _ *byte }

// tuneGCFor adds st to the stores the collector's percent follows and returns the function
// that takes it out again. It does nothing when GOGC is set in the environment.
func tuneGCFor(st *store) (remove func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcTuner.mu.Lock()
	if gcTuner.stores == nil {
		gcTuner.stores = map[*store]bool{}
	}
	gcTuner.stores[st] = true
	arm := !gcTuner.armed
	gcTuner.armed = true
	gcTuner.mu.Unlock()
	if arm {
		armGCTuner()
	}
	return func() {
		gcTuner.mu.Lock()
		defer gcTuner.mu.Unlock()
		delete(gcTuner.stores, st)
		if len(gcTuner.stores) == 0 && gcTuner.last != 100 {
			debug.SetGCPercent(100) // the default; the armed cycle, finding no store, stops
			gcTuner.last = 100
		}
	}
}

// armGCTuner makes the end of the next collection call gcCycle.
func armGCTuner() {
	runtime.AddCleanup(&gcSentinel{}, func(struct{}) { gcCycle() }, struct{}{})
}

// gcCycle, called at the end of a collection, sets the percent for the live heap it found
// and arms the next call; with no store left it stops (the default set as the last left).
func gcCycle() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	var live, free uint64
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		free = s[1].Value.Uint64()
	}
	gcTuner.mu.Lock()
	var stored uint64
	for st := range gcTuner.stores {
		stored += st.hostBytes()
	}
	rearm := len(gcTuner.stores) > 0
	if p := gcPercentFor(live, stored); rearm && p != gcTuner.last {
		debug.SetGCPercent(p)
		gcTuner.last = p
	}
	gcTuner.armed = rearm
	gcTuner.mu.Unlock()
	if rearm {
		armGCTuner()
	}
	if rearm && releaseFree(live, free) && gcReleasing.CompareAndSwap(false, true) {
		go func() {
			defer gcReleasing.Store(false)
			debug.FreeOSMemory()
		}()
	}
}

// gcReleasing is set while a worker gives its heap's free pages back to the system. The
// collector keeps the pages it freed for later allocations, but a worker's large buffers
// leave holes that buffers of other sizes do not fill (an unpack's 4 MB partition beside the
// 58 kB pieces it frees), and the runtime's background scavenger returns them slowly: a
// shuffle worker at 3e7 rows held 160-190 MiB of free pages at its peak, beside 510 MiB of
// objects. Past gcFloor or an eighth of the live heap they are given back at once (a forced
// collection, then all free pages; those reused come back at a page fault).
var gcReleasing atomic.Bool

// releaseFree reports whether free bytes of free heap pages beside a live heap of live bytes
// are to be given back now.
func releaseFree(live, free uint64) bool { return free > max(gcFloor, live/8) }
