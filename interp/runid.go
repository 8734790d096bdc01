package interp

import (
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/traefik/yaegi/interp"
)

// yaegi v0.16.1 stops interpreted code (an interrupt, EvalWithContext's cancelled context) by
// moving the interpreter's run id on: every frame keeps the id it was made with and runs
// only while its id is the current one. The next Eval gives the top frame the new id, but a
// closure made inside a function body keeps its frame's, so such closures (a widget's Observe
// or OnClick callback, an Interact function) returned at once, doing nothing, for the rest of
// the session. Once every goroutine that ran interpreted code has unwound, nothing can resume
// with the old id, and the session moves the id back (restoreRunID): the closures run again.
// Where some code does not unwind (blocked in a compiled call), the id stays moved on and the
// interrupt's traceback says which closures stop (interruptNote). Left: a closure made by
// the interrupted cell itself keeps that run's channel of cancellation, which the stop
// closed, so a channel operation in it ends at once when it runs later.
//
// Stop checks written into loops and function heads by the rewrite instead (a cooperative
// interrupt that never moves the id) were measured first and cost too much: 1.54x fib(27),
// 1.35x a loop of 1e7 small calls, 1.66x a loop of 1e7 additions (bench/RESULTS.md).

// runIDField is the offset of yaegi's run id in its Interpreter, found by name and type once;
// ok is false if this yaegi has no such field (then no id is ever moved back).
var runIDField = func() (off uintptr, ok bool) {
	f, found := reflect.TypeOf(interp.Interpreter{}).FieldByName("id")
	if !found || f.Type.Kind() != reflect.Uint64 || len(f.Index) != 1 {
		return 0, false
	}
	return f.Offset, true
}

// runID is i's current run id, and false if it cannot be read.
func runID(i *interp.Interpreter) (uint64, bool) {
	off, ok := runIDField()
	if !ok {
		return 0, false
	}
	return atomic.LoadUint64((*uint64)(unsafe.Add(unsafe.Pointer(i), off))), true
}

// setRunID makes id i's current run id again.
func setRunID(i *interp.Interpreter, id uint64) {
	if off, ok := runIDField(); ok {
		atomic.StoreUint64((*uint64)(unsafe.Add(unsafe.Pointer(i), off)), id)
	}
}

// goroutinesWait: goroutines of cells that an interrupt stopped end at their next step; ones
// still live this long after the last one ended are taken to be blocked in compiled code.
const goroutinesWait = 200 * time.Millisecond

// goroutinesEnded waits until no goroutine started by a cell is live; it reports false when
// some stay live goroutinesWait after the last one ended.
func goroutinesEnded() bool {
	last, since := liveGoroutines.Load(), time.Now()
	for {
		n := liveGoroutines.Load()
		if n <= 0 {
			return true
		}
		if n < last {
			last, since = n, time.Now()
		} else if time.Since(since) > goroutinesWait {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// restoreRunID ends an interrupt that moved the run id on from base: when unwound (every
// goroutine that ran the stopped code, the caller's included, has returned) and the
// goroutines of cells have ended, base is current again and closures made under it run;
// else the id stays moved on and yaegiStopped marks the interrupt for interruptNote.
func (s *Session) restoreRunID(base uint64, haveBase, unwound bool) {
	if cur, ok := runID(s.i); haveBase && ok && cur == base {
		return // nothing was stopped
	}
	if haveBase && unwound && goroutinesEnded() {
		setRunID(s.i, base)
		// The top frame took the moved id when the stopping Eval started; top-level func
		// literals run in frames made from it at each call. An Eval gives it the current id.
		_, _ = s.i.Eval("0")
		s.yaegiStopped.Store(false)
		return
	}
	s.yaegiStopped.Store(true)
}
