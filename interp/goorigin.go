package interp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A goroutine that a cell started can recurse without end after its cell ended, and a widget
// callback can recurse while it runs: with no cell running, the depth watcher (depth.go) used
// to sleep, and the Go stack's overflow killed the kernel. The watcher now watches while
// goroutines of cells run (liveGoroutines > 0) and while callbacks run (RunCallback). A
// goroutine found too deep stops the session's interpreted code, as an interrupt does (yaegi
// has no way to stop one goroutine), and its RecursionError goes to the output of the cell
// that started it, found through this registry of goroutine ids.

// origin is where a goroutine of a cell reports: its session and the output of the cell
// that started it (or whose goroutines did).
type origin struct {
	s   *Session
	out Output
	// counted: the goroutine (of a go func literal) claimed its admission (gopending.go).
	counted bool
}

// goOrigins maps the ids of goroutines that cells started, and of the cells' own goroutines
// that started some, to their origin.
var goOrigins = struct {
	sync.Mutex
	m map[uint64]origin
}{m: map[uint64]origin{}}

// lastSession is the session that last started a goroutine: the one stopped when a deep
// goroutine's origin is unknown.
var lastSession atomic.Pointer[Session]

// goroutineID parses the id on the first line of a goroutine's traceback ("goroutine 7 [").
func goroutineID(tb []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(tb, []byte("goroutine "))
	if !ok {
		return 0, false
	}
	if i := bytes.IndexByte(rest, ' '); i > 0 {
		rest = rest[:i]
	}
	id, err := strconv.ParseUint(string(rest), 10, 64)
	return id, err == nil
}

// selfGoID is the running goroutine's id (the first line of its traceback).
func selfGoID() uint64 {
	var buf [64]byte
	id, _ := goroutineID(buf[:runtime.Stack(buf[:], false)])
	return id
}

// parentGoID is the id of the goroutine that started the running one ("created by ... in
// goroutine N", the last line of its traceback; a goroutine of a go statement starts shallow).
func parentGoID() uint64 {
	bp := stackBufs.Get().(*[]byte)
	defer stackBufs.Put(bp)
	buf := *bp
	tb := buf[:runtime.Stack(buf, false)]
	i := bytes.LastIndex(tb, []byte(" in goroutine "))
	if i < 0 {
		return 0
	}
	rest := tb[i+len(" in goroutine "):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	id, _ := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
	return id
}

// stackBufs hold the tracebacks parentGoID reads, one per go statement.
var stackBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// originOf is the origin of goroutine id, else the running cell's output.
func (s *Session) originOf(id uint64) origin {
	goOrigins.Lock()
	o, ok := goOrigins.m[id]
	goOrigins.Unlock()
	if ok {
		return o
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return origin{s: s, out: s.curOut}
}

// setOrigin records goroutine id's origin; del removes it when the goroutine ends.
func setOrigin(id uint64, o origin) {
	goOrigins.Lock()
	goOrigins.m[id] = o
	goOrigins.Unlock()
}

func delOrigin(id uint64) {
	goOrigins.Lock()
	delete(goOrigins.m, id)
	goOrigins.Unlock()
}

// noteParent is called by a go statement of a cell before it starts the goroutine: a cell's
// own goroutine that starts one is recorded with the running cell's output, for the child
// (goBegin) to find through its parent's id. It returns the caller's origin.
func (s *Session) noteParent() origin {
	lastSession.Store(s)
	id := selfGoID()
	goOrigins.Lock()
	o, ok := goOrigins.m[id]
	goOrigins.Unlock()
	if ok {
		return o
	}
	o = s.originOf(id)
	if o.out != nil {
		setOrigin(id, o)
	}
	return o
}

// goBegin is the first call of a `go func() {...}()` of a cell (gnrt.GoBegin): it records
// the goroutine's origin, its parent's.
func (s *Session) goBegin() {
	o := s.originOf(parentGoID())
	o.counted = s.claimAdmission()
	setOrigin(selfGoID(), o)
}

// goDone is a go func literal's first deferred call, compiled, so that yaegi runs it even when
// an interrupt or the depth watcher stopped the goroutine's frames (the interpreted deferred
// recover does not run then): it releases the goroutine goAdmit counted, claimed by goBegin,
// else (stopped before goBegin) claimed now, unless an interrupt's sweep released it.
func (s *Session) goDone() {
	id := selfGoID()
	goOrigins.Lock()
	o, ok := goOrigins.m[id]
	delete(goOrigins.m, id)
	goOrigins.Unlock()
	if ok && o.counted || !ok && s.claimAdmission() {
		liveGoroutines.Add(-1)
	}
}

// backgroundDepth is the watcher's background entry: registered once, watched while
// goroutines of cells run and no cell or callback does.
var backgroundDepth sync.Once

// watchGoroutines makes the watcher watch the goroutines of cells (from the first go
// statement of a cell on).
func (s *Session) watchGoroutines() {
	limit := s.maxCallDepth()
	backgroundDepth.Do(func() {
		background = &watched{stop: stopDeepGoroutine, limit: limit, background: true}
		depthWatcher.add(background)
	})
	// One entry for every session: the smallest limit; stopDeepGoroutine checks the
	// session's own.
	depthWatcher.mu.Lock()
	background.limit = min(background.limit, limit)
	depthWatcher.mu.Unlock()
	depthWatcher.poke()
}

// background is the watcher's entry for goroutines of cells.
var background *watched

// stoppedDeep is the id of the last deep goroutine stopped: the watcher may see it again
// while it unwinds.
var stoppedDeep atomic.Uint64

// stopDeepGoroutine stops the interpreted code of the session that started the deep
// goroutine de names, and reports its RecursionError to the cell that started it. It runs
// under the watcher's lock: the work is done in a goroutine.
func stopDeepGoroutine(de *depthError) {
	if de.goroutine != 0 && stoppedDeep.Swap(de.goroutine) == de.goroutine {
		return
	}
	goOrigins.Lock()
	o, ok := goOrigins.m[de.goroutine]
	goOrigins.Unlock()
	if !ok {
		o = origin{s: lastSession.Load()}
	}
	if o.s == nil || de.depth < o.s.maxCallDepth() && de.stack < 512<<20 {
		return
	}
	go o.s.stopForGoroutine(de, o.out)
}

// stopForGoroutine stops every interpreted frame of the session (between cells: a cell that
// runs now is stopped by its own entry) and reports the deep goroutine's RecursionError.
func (s *Session) stopForGoroutine(de *depthError, out Output) {
	s.mu.Lock()
	base, haveBase := runID(s.i)
	unwound := s.stopInterpreted()
	// Unwound before the next cell runs (see RunCallback): its origin goes when it ends.
	for gone := false; !gone; {
		goOrigins.Lock()
		_, alive := goOrigins.m[de.goroutine]
		goOrigins.Unlock()
		if gone = !alive; !gone {
			time.Sleep(time.Millisecond)
		}
	}
	s.restoreRunID(base, haveBase, unwound) // runid.go
	s.mu.Unlock()
	cerr := s.depthTrace(de, segment{})
	cerr.Value = "in a goroutine started by this cell: " + cerr.Value
	cerr.Traceback = append([]string{"RecursionError: " + cerr.Value,
		"  the session's interpreted code was stopped, as an interrupt stops it: the other goroutines of cells too; the variables stay"},
		cerr.Traceback[1:]...)
	if s.yaegiStopped.Load() {
		cerr.Traceback = append(cerr.Traceback, interruptNote)
	}
	fmt.Fprintf(os.Stderr, "gpunotes: RecursionError %s\n", cerr.Value)
	if out == nil {
		select {
		case s.goPanics <- cerr:
		default:
		}
		return
	}
	reportError(out, cerr)
}

// reportError shows a cell error in out: as an error output where out has them (the kernel's
// cell output), else as stderr text.
func reportError(out Output, cerr *CellError) {
	if e, ok := out.(interface {
		Error(ename, evalue string, traceback []string)
	}); ok {
		e.Error(cerr.Name, cerr.Value, cerr.Traceback)
		return
	}
	out.Stream("stderr", strings.Join(cerr.Traceback, "\n")+"\n")
}

// stopInterpreted stops every running interpreted frame of the session: yaegi does so only
// when the context of an EvalWithContext is done, so a receive that never completes is
// evaluated under a cancelled context. The receive itself then ends at once: yaegi's channel
// operations also wait on the stop. ("for {}", used before, spun forever when yaegi started it
// after the stop.) The caller holds s.mu. It reports whether the stopped code unwound
// (unwind.go).
func (s *Session) stopInterpreted() (unwound bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = s.i.EvalWithContext(ctx, "<-make(chan struct{})")
	unwound = waitEvalsUnwound(5 * time.Second)
	s.sweepAdmissions() // gopending.go
	return unwound
}
