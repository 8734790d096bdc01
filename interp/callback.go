package interp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpunotes/gpunotes/display"
)

// Comm forwards a widget's comm message to the cell's output when it reaches the front end's
// comms (the kernel's); elsewhere (a headless run) it is dropped: the widget keeps its state.
func (f flushingSink) Comm(msgType string, content, metadata map[string]any, buffers [][]byte) {
	if c, ok := f.Output.(display.CommSink); ok {
		c.Comm(msgType, content, metadata, buffers)
	}
}

// interruptNote ends the traceback of an interrupt whose code did not unwind (blocked in a
// compiled call; runid.go). yaegi v0.16.1 stops interpreted code by moving its run id on,
// and a frame keeps the id it was made with: functions made inside a function body before
// the interrupt (closures, also those of a cell's top-level if and for blocks, which run as
// func literals) return at once from then on, doing nothing, unless the id is moved back.
// Functions declared or written at a cell's top level run again.
const interruptNote = "note: the interrupted code did not stop (blocked in a call), so closures made inside functions " +
	"before this interrupt no longer run (a limit of the interpreter); run again the cells that made callbacks inside a function or block"

// interruptTrace is an interrupt's traceback: first, and interruptNote if the run id stayed
// moved on.
func (s *Session) interruptTrace(first string) []string {
	if s.yaegiStopped.Load() {
		return []string{first, interruptNote}
	}
	return []string{first}
}

// RunCallback runs fn, Go code of the cells called for a front-end event (a widget's observer
// or click handler), as a cell runs: its fd 1/2 output and displays go to out, and ctx's
// cancellation (an interrupt) stops its interpreted loops. A panic becomes a *CellError, and
// so does runaway recursion (a RecursionError, from the depth watcher, as for cells).
func (s *Session) RunCallback(ctx context.Context, out Output, fn func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cap, err := startCapture(out.Stream)
	if err != nil {
		return &CellError{Name: "InternalError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if limit := s.maxCallDepth(); limit > 0 {
		defer depthWatcher.watch(cancel, limit)()
	}
	restore := display.Bind(ctx, flushingSink{out, cap})
	defer cap.stop()
	defer restore()
	done, ended := make(chan *CellError, 1), make(chan struct{})
	base, haveBase := runID(s.i)
	go func() {
		var cerr *CellError
		defer close(ended)
		defer func() {
			if r := recover(); r != nil {
				msg := fmt.Sprint(r)
				cerr = &CellError{Name: "panic", Value: msg, Traceback: []string{"panic in a widget callback: " + msg}}
			}
			done <- cerr
		}()
		fn()
	}()
	select {
	case cerr := <-done:
		if cerr != nil {
			return cerr
		}
		return nil
	case <-ctx.Done():
		// yaegi stops interpreted code only from EvalWithContext (goorigin.go).
		unwound := s.stopInterpreted()
		select {
		case <-ended:
		case <-time.After(5 * time.Second): // blocked in a compiled call
			unwound = false
		}
		s.restoreRunID(base, haveBase, unwound) // runid.go
		var de *depthError
		if errors.As(context.Cause(ctx), &de) {
			// Unwound before the next cell runs: each Eval gives yaegi's top frame the new run
			// id, and a call made from it would go on recursing.
			<-done
			cerr := s.depthTrace(de, segment{})
			cerr.Value = "in a widget callback: " + cerr.Value
			cerr.Traceback[0] = "RecursionError: " + cerr.Value
			if s.yaegiStopped.Load() {
				cerr.Traceback = append(cerr.Traceback, interruptNote)
			}
			return cerr
		}
		return &CellError{Name: "KeyboardInterrupt", Value: "interrupted", Traceback: s.interruptTrace("KeyboardInterrupt: the widget callback was interrupted")}
	}
}
