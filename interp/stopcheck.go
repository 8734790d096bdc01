package interp

import (
	"bytes"
	"errors"
	"go/ast"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/traefik/yaegi/interp"
)

// Interrupts are cooperative. yaegi v0.16.1 stops interpreted code by moving its run id on,
// and every frame keeps the id it was made with: closures made inside a function body before
// such a stop (a widget's Observe or OnClick callback, an Interact function) return at once,
// doing nothing, for the rest of the session. So the rewrite (rewriteGo) puts a check at the
// head of every loop body and function body of a cell, a read of the session's stop flag;
// an interrupt raises the flag, and the check panics with interruptSignal, which unwinds the
// interpreted code as any panic does and leaves every run id as it was. yaegi's own stop is
// the fallback: for code blocked where no check runs (a channel operation, a sleep, a
// compiled call that does not return) and for goroutines of cells still running once the
// interrupted code has unwound.

// stopCheck is the statement at the head of loop and function bodies. It reads the flag
// through a pointer: yaegi takes a compiled package's variable in a comparison for a constant,
// read once when the cell compiles. An atomic load called through reflection would cost a
// loop iteration several times over; this read costs about one addition.
const stopCheck = "if *gnrt.Stop != 0 { gnrt.Interrupted() }; "

// interruptSignal is the panic of a stop check. Its text is the one yaegi's runCfg leaves out
// of its "panic:" frame reports (it takes it for net/http's ErrAbortHandler), so an interrupt
// adds no frames to the next traceback.
type interruptSignal struct{}

func (interruptSignal) Error() string { return "net/http: abort Handler" }

// interrupted is gnrt.Interrupted: a stop check found the flag raised.
func interrupted() { panic(interruptSignal{}) }

// isInterrupt reports whether r, a recovered panic or an error of yaegi, is a stop check's.
func isInterrupt(r any) bool {
	switch r := r.(type) {
	case interruptSignal:
		return true
	case interp.Panic:
		return isInterrupt(r.Value)
	case error:
		var p interp.Panic
		return errors.As(r, &p) && isInterrupt(p.Value)
	}
	return false
}

// stopChecks adds stopCheck to the bodies of f's loops and functions. A statement
// segment's wrapper (the file's first func) gets none at its head; nor do func literals of go
// and defer statements: a go'd literal begins with its admission's bookkeeping (goStmt), and
// a deferred one must run its cleanup while an interrupt unwinds.
func (r *rewriter) stopChecks(f *ast.File, stmtSeg bool) {
	skip := map[*ast.FuncLit]bool{}
	add := func(b *ast.BlockStmt) {
		if b != nil {
			r.edits = append(r.edits, edit{r.off(b.Lbrace) + 1, 0, stopCheck})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
				skip[lit] = true
			}
		case *ast.DeferStmt:
			if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
				skip[lit] = true
			}
		case *ast.FuncDecl:
			if !stmtSeg || len(f.Decls) == 0 || f.Decls[0] != n {
				add(n.Body)
			}
		case *ast.FuncLit:
			if !skip[n] {
				add(n.Body)
			}
		case *ast.ForStmt:
			add(n.Body)
		case *ast.RangeStmt:
			add(n.Body)
		}
		return true
	})
}

// Waiting for a cooperative stop: a goroutine that runs interpreted code reaches a check
// within microseconds once it is scheduled; one seen blocked (not running or runnable) for
// blockedFor, or still not done after stopWait, is stopped by yaegi.
const (
	blockedFor = 50 * time.Millisecond
	stopWait   = 10 * time.Second
	// goroutinesWait: goroutines of cells still live after the interrupted code unwound
	// end at their next check while the flag is up; ones that do not (blocked) within this
	// long after the last ended are stopped by yaegi.
	goroutinesWait = 100 * time.Millisecond
)

// raiseStop raises the session's stop flag for an interrupt; lowerStop lowers it.
func (s *Session) raiseStop() {
	s.yaegiStopped.Store(false)
	atomic.StoreInt32(&s.stop, 1)
}

func (s *Session) lowerStop() { atomic.StoreInt32(&s.stop, 0) }

// interruptTrace is an interrupt's traceback: first, and interruptNote when yaegi's stop
// ended the code.
func (s *Session) interruptTrace(first string) []string {
	if s.yaegiStopped.Load() {
		return []string{first, interruptNote}
	}
	return []string{first}
}

// awaitStop waits, with the stop flag raised, until done is closed or receives. It reports
// false when the code must be stopped by yaegi instead: a goroutine that sel picks from a
// dump of all goroutines' stacks stayed blocked for blockedFor, or stopWait passed.
func awaitStop(done <-chan struct{}, sel func(tb []byte) bool) bool {
	start := time.Now()
	var blockedSince time.Time
	buf := make([]byte, 1<<20)
	for {
		select {
		case <-done:
			return true
		case <-time.After(time.Millisecond):
		}
		now := time.Now()
		if now.Sub(start) > stopWait {
			return false
		}
		n := runtime.Stack(buf, true)
		if n == len(buf) && len(buf) < 64<<20 {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if goroutineBlocked(buf[:n], sel) {
			if blockedSince.IsZero() {
				blockedSince = now
			} else if now.Sub(blockedSince) > blockedFor {
				return false
			}
		} else {
			blockedSince = time.Time{}
		}
	}
}

// goroutineBlocked reports whether a goroutine of the dump that sel picks waits (a channel,
// a sleep, a lock, a system call) rather than runs.
func goroutineBlocked(dump []byte, sel func(tb []byte) bool) bool {
	for _, tb := range bytes.Split(dump, []byte("\n\n")) {
		if !sel(tb) {
			continue
		}
		i, j := bytes.IndexByte(tb, '['), bytes.IndexByte(tb, ']')
		if i < 0 || j < i {
			continue
		}
		state, _, _ := strings.Cut(string(tb[i+1:j]), ",")
		switch {
		case state == "running", state == "runnable", state == "preempted", strings.Contains(state, "GC"):
		default:
			return true
		}
	}
	return false
}

// inYaegiEval picks the goroutine in which an EvalWithContext runs its code.
func inYaegiEval(tb []byte) bool { return bytes.Contains(tb, yaegiEvalFrame) }

// goroutineNamed picks the goroutine of id.
func goroutineNamed(id uint64) func(tb []byte) bool {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	return func(tb []byte) bool { return bytes.HasPrefix(tb, head) }
}

// awaitGoroutines waits, with the stop flag raised, until no goroutine of a cell is live; it
// reports false when some stay live goroutinesWait after the last one ended.
func awaitGoroutines() bool {
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
