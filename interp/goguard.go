package interp

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// A cell that started 1e6 goroutines that block (`for i := 0; i < 1e6; i++ { go func() {
// <-ch }() }`) used the machine's last 3 GB: the kernel stayed alive with its heartbeat dead,
// and a front end then reported a dead kernel with no reason. Python refuses such threads
// with "can't start new thread" long before. Every go statement of a cell goes through goStart
// (gnrt.Go, or gnrt.GoAdmit before a go statement of a func literal), which counts the goroutines cells started that still run, and refuses one more
// than the session's bound with an error of the cell.

// goroutineBytes is what one blocked goroutine of a cell is taken to cost when the bound is
// sized from memory: yaegi runs it through reflect and its runCfg frames, on a stack of 8 to
// 32 KiB, with the frame's values on the heap.
const goroutineBytes = 32 << 10

// liveGoroutines counts the goroutines started by cells (of every session) that still run.
var liveGoroutines atomic.Int64

// maxGoroutines is the bound: Options.MaxGoroutines, else GPUNOTES_MAX_GOROUTINES, else a
// quarter of the memory the process can still get at goroutineBytes each, between 1,000 and
// 1,000,000.
func (s *Session) maxGoroutines() (int64, string) {
	if s.opts.MaxGoroutines > 0 {
		return int64(s.opts.MaxGoroutines), "the session's MaxGoroutines"
	}
	if v, err := strconv.ParseInt(os.Getenv("GPUNOTES_MAX_GOROUTINES"), 10, 64); err == nil && v > 0 {
		return v, "GPUNOTES_MAX_GOROUTINES"
	}
	now := time.Now().UnixNano()
	if now-memBoundAt.Load() > int64(time.Second) { // /proc/meminfo once a second, not per go statement
		n := int64(makeLimit() / 4 / goroutineBytes)
		memBound.Store(min(max(n, 1000), 1_000_000))
		memBoundAt.Store(now)
	}
	return memBound.Load(), "sized from free memory; GPUNOTES_MAX_GOROUTINES sets another"
}

// memBound is the bound sized from memory, as read at memBoundAt (Unix ns).
var memBound, memBoundAt atomic.Int64

// goAdmit reserves a goroutine for a go statement of a cell, or panics (an error of the cell)
// when the bound is reached. The caller releases it with liveGoroutines.Add(-1).
func (s *Session) goAdmit() { s.admit() }

// admit is goAdmit; it also returns the origin of the goroutine about to start (goorigin.go)
// and has the depth watcher watch it.
func (s *Session) admit() origin {
	limit, why := s.maxGoroutines()
	if n := liveGoroutines.Add(1); n > limit {
		liveGoroutines.Add(-1)
		panic(fmt.Sprintf("go statement: %d goroutines started by cells are still running, the bound (%s); "+
			"this one was not started. Let goroutines end (close the channel they wait on, cancel their context), "+
			"or use a worker pool", limit, why))
	}
	if s.maxCallDepth() > 0 {
		s.watchGoroutines()
	}
	return s.noteParent()
}

// goEnd was the last deferred call of a `go func() {...}()` of a cell (goDone and goPanic are
// now): it reports the goroutine's panic r (nil: none) and releases the goroutine goAdmit
// counted.
func (s *Session) goEnd(r any) {
	liveGoroutines.Add(-1)
	s.goPanic(r)
}
