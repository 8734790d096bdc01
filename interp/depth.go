package interp

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Runaway recursion in a cell used to grow the Go stack of yaegi's evaluating goroutine to the
// runtime's 1 GB limit, and "fatal error: stack overflow" killed the kernel with every variable
// of the session. The Go runtime cannot recover from that, but the interpreter can stop long
// before: yaegi (v0.16.1) runs each interpreted call as one more runCfg frame on the Go stack,
// so the number of runCfg frames of a goroutine is its interpreted call depth.
//
// Counting in interpreted code would cost every call (a counter and its check made recursive
// fib 60-70% slower here), and yaegi has no hook per call, so the depth is watched from
// outside: while a cell runs, a watcher reads the stack memory of the process (runtime/metrics,
// no stop of the world) every depthPoll. Only when stacks hold more than small goroutines
// explain does it take a goroutine dump (the runtime prints the innermost and outermost 50
// frames of each goroutine and the count of those in between), and estimate the deepest
// goroutine's interpreted depth from the share of runCfg frames among the frames printed.
// Past the limit the running cell is stopped as an interrupt stops it (yaegi unwinds every
// frame), and the cell fails with a RecursionError; the session's variables stay.

// DefaultMaxCallDepth is the interpreted call depth at which a cell is stopped, unless
// Options.MaxCallDepth or GPUNOTES_MAX_CALL_DEPTH says otherwise. It is twice the depth 1e5
// that a small recursive function of a pasted Go program may reach; at it, yaegi's Go stack
// is 130 MB (a call through a func literal: about 3 times that), under the runtime's 1 GB.
const DefaultMaxCallDepth = 200_000

// depthPoll is how often the watcher reads the stack memory while a cell runs.
const depthPoll = 10 * time.Millisecond

// depthError is the cause a cell is stopped with at the depth limit.
type depthError struct {
	depth, limit int
	stack        uint64 // the process's stack memory when it was stopped
	goroutine    uint64 // the deepest goroutine's id
}

func (e *depthError) Error() string {
	return fmt.Sprintf("maximum call depth exceeded: about %d interpreted calls deep (the limit is %d)", e.depth, e.limit)
}

// maxCallDepth is the session's limit: Options.MaxCallDepth, else GPUNOTES_MAX_CALL_DEPTH,
// else DefaultMaxCallDepth.
func (s *Session) maxCallDepth() int {
	if s.opts.MaxCallDepth != 0 {
		return s.opts.MaxCallDepth
	}
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_MAX_CALL_DEPTH")); err == nil && v > 0 {
		return v
	}
	return DefaultMaxCallDepth
}

// depthWatch is the process's one watcher (stack memory is the process's): the evaluations
// and widget callbacks running now, each with the stop of its context and its limit, and the
// background entry for goroutines that cells started and that outlive them (goorigin.go),
// watched while such goroutines run.
type depthWatch struct {
	mu      sync.Mutex
	running map[*watched]bool
	wake    chan struct{}
}

type watched struct {
	stop       func(*depthError)
	limit      int
	background bool // watched only while goroutines of cells run (liveGoroutines > 0)
}

var depthWatcher = &depthWatch{running: map[*watched]bool{}, wake: make(chan struct{}, 1)}

var startDepthWatch sync.Once

// depthDumps counts the goroutine dumps the watcher took (for the benchmark).
var depthDumps atomic.Int64

// watch registers an evaluation until the returned func is called.
func (d *depthWatch) watch(cancel context.CancelCauseFunc, limit int) func() {
	w := &watched{stop: func(de *depthError) { cancel(de) }, limit: limit}
	d.add(w)
	return func() {
		d.mu.Lock()
		delete(d.running, w)
		d.mu.Unlock()
	}
}

// add registers w and wakes the watcher.
func (d *depthWatch) add(w *watched) {
	startDepthWatch.Do(func() { go d.loop() })
	d.mu.Lock()
	d.running[w] = true
	d.mu.Unlock()
	d.poke()
}

// poke wakes a watcher that sleeps (nothing watched), without blocking.
func (d *depthWatch) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// active counts the entries watched now.
func (d *depthWatch) active() int {
	goroutines := liveGoroutines.Load() > 0
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for w := range d.running {
		if !w.background || goroutines {
			n++
		}
	}
	return n
}

func (d *depthWatch) loop() {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/sched/goroutines:goroutines"}}
	t := time.NewTicker(depthPoll)
	defer t.Stop()
	var lastStack uint64
	var lastDump time.Time
	var dumpTook time.Duration
	for {
		if d.active() == 0 {
			t.Stop()
			<-d.wake
			t.Reset(depthPoll)
			continue
		}
		<-t.C
		metrics.Read(samples)
		if samples[0].Value.Kind() != metrics.KindUint64 || samples[1].Value.Kind() != metrics.KindUint64 {
			continue
		}
		stack, gs := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		// Small goroutines explain up to 16 KiB each; a dump of very many goroutines would
		// stop the world for long (a goroutine flood has its own bound, goguard.go).
		// The smallest limit running decides from which stack size a dump is worth it: about
		// 650 bytes of Go stack per interpreted call, counted at 256.
		d.mu.Lock()
		least := DefaultMaxCallDepth
		for w := range d.running {
			least = min(least, w.limit)
		}
		d.mu.Unlock()
		if gs > 50_000 || stack < min(32<<20, uint64(least)*256)+gs*16<<10 {
			lastStack = 0
			continue
		}
		// The runtime walks every frame of a deep goroutine to count those it leaves out (a
		// dump at depth 2e5 takes tens of ms, the world stopped). Stacks grow by doubling, so
		// a dump is taken when the stack memory changed, or else once 20 times the last
		// dump's duration passed (at most 5% of the time goes to dumps).
		if stack == lastStack && time.Since(lastDump) < 20*dumpTook {
			continue
		}
		lastStack, lastDump = stack, time.Now()
		depthDumps.Add(1)
		depth, calls, gid := deepestInterpretedDepth(allStacks())
		dumpTook = time.Since(lastDump)
		// A running cell or callback is stopped (stopping it stops every interpreted frame,
		// a deep goroutine's too); with none running, the background entry stops the
		// goroutines and reports to the cell that started the deep one.
		goroutines := liveGoroutines.Load() > 0
		d.mu.Lock()
		foreground := false
		for w := range d.running {
			foreground = foreground || !w.background
		}
		for w := range d.running {
			if w.background && (foreground || !goroutines) || !w.background && !foreground {
				continue
			}
			// Past 512 MiB of stacks, a deep goroutine stops at any depth: its calls are
			// large, and the runtime's 1 GB would come before the limit.
			if depth >= w.limit || stack >= 512<<20 && calls >= 10_000 {
				w.stop(&depthError{depth: depth, limit: w.limit, stack: stack, goroutine: gid})
			}
		}
		d.mu.Unlock()
	}
}

// allStacks is runtime.Stack of every goroutine, in a buffer grown until it fits (at most
// 64 MB: what does not fit is left out).
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

var elidedRE = regexp.MustCompile(`(?m)^\.\.\.(\d+) frames elided\.\.\.$`)

// runCfgFrame opens the line of a traceback frame that is one interpreted call.
const runCfgFrame = "github.com/traefik/yaegi/interp.runCfg("

// deepestInterpretedDepth estimates, from a dump of all goroutines, the largest number of
// interpreted calls any goroutine has on its stack: its runCfg frames, where frames the
// runtime left out count in the proportion of those it printed.
// It also returns the runCfg frames counted in that goroutine's printed frames, and its id.
func deepestInterpretedDepth(dump []byte) (depth, printed int, goroutine uint64) {
	best, bestCalls, bestID := 0, 0, uint64(0)
	for _, g := range bytes.Split(dump, []byte("\n\n")) {
		if !bytes.Contains(g, []byte(runCfgFrame)) {
			continue
		}
		frames, calls := 0, 0
		for _, line := range bytes.Split(g, []byte("\n")) {
			if len(line) == 0 || line[0] == '\t' || bytes.HasPrefix(line, []byte("goroutine ")) ||
				bytes.HasPrefix(line, []byte("created by ")) || bytes.HasPrefix(line, []byte("...")) {
				continue
			}
			frames++
			if bytes.HasPrefix(line, []byte(runCfgFrame)) {
				calls++
			}
		}
		depth := calls
		if m := elidedRE.FindSubmatch(g); m != nil && frames > 0 {
			elided, _ := strconv.Atoi(string(m[1]))
			depth = int(float64(calls) * float64(frames+elided) / float64(frames))
		}
		if depth > best {
			best, bestCalls = depth, calls
			bestID, _ = goroutineID(g)
		}
	}
	return best, bestCalls, bestID
}

// depthTrace is the error of a cell stopped at the depth limit: the recursive cell functions
// the segment's statements reach (from the sources of the session's declarations), with the
// first frame (the cell's call) and the last (the recursive call).
func (s *Session) depthTrace(de *depthError, seg segment) *CellError {
	funcs := s.recursiveFuncs(seg)
	what := "the cell's calls"
	if len(funcs) == 1 {
		what = funcs[0] + " called itself"
	} else if len(funcs) > 1 {
		what = strings.Join(funcs, ", ") + " called each other"
	}
	val := fmt.Sprintf("maximum call depth exceeded: %s about %d deep (the limit is %d calls; set GPUNOTES_MAX_CALL_DEPTH for another)", what, de.depth, de.limit)
	tb := []string{"RecursionError: " + val}
	loc := func(line int, pos declPos) string {
		if pos.cell != "" {
			return fmt.Sprintf("%s, line %d", pos.cell, line)
		}
		return fmt.Sprintf("line %d of its cell", line)
	}
	if len(funcs) > 0 {
		entry := funcs[0]
		if seg.kind == segStmt && seg.src != "" {
			fset := token.NewFileSet()
			if f, err := parser.ParseFile(fset, "cell", wrapPrefix(segStmt)+seg.src+"\n}", parser.SkipObjectResolution); err == nil && len(f.Decls) > 0 {
				body := f.Decls[0].(*ast.FuncDecl).Body
				for _, fn := range funcs {
					if lines := candidateLines(fset, body, nil, fn, false); len(lines) > 0 {
						entry = fn
						pos := declPos{cell: s.cell, line: seg.line, col: seg.col}
						tb = append(tb, "  first: the cell's statements, "+loc(pos.line+lines[0]-1, pos))
						if src := strings.Split(seg.src, "\n"); lines[0] <= len(src) {
							tb = append(tb, "    "+strings.TrimSpace(src[lines[0]-1]))
						}
						break
					}
				}
			}
		}
		tb = append(tb, fmt.Sprintf("  ... about %d calls of %s ...", de.depth, strings.Join(funcs, " and ")))
		// The last frame: the call in the cycle's function that goes on recursing.
		for _, fn := range append([]string{entry}, funcs...) {
			body, fset, pos, src, ok := s.funcBody(fn)
			if !ok {
				continue
			}
			for _, callee := range funcs {
				if lines := candidateLines(fset, body, nil, callee, false); len(lines) > 0 {
					tb = append(tb, fmt.Sprintf("  last: %s, %s", fn, loc(pos.line+lines[0]-1, pos)))
					if sl := strings.Split(src, "\n"); lines[0] <= len(sl) {
						tb = append(tb, "    "+strings.TrimSpace(sl[lines[0]-1]))
					}
					return &CellError{Name: "RecursionError", Value: val, Traceback: tb}
				}
			}
		}
	}
	return &CellError{Name: "RecursionError", Value: val, Traceback: tb}
}

// recursiveFuncs returns the cell functions on a cycle of calls that the segment reaches
// (entry first when the segment calls one of them; else sorted). Calls are found by name:
// f(...) for funcs, x.M(...) for methods.
func (s *Session) recursiveFuncs(seg segment) []string {
	s.declMu.RLock()
	srcs := map[string]string{}
	for k, v := range s.decls {
		srcs[k] = v
	}
	s.declMu.RUnlock()
	// calls[name] = the names of cell funcs and methods (by method name) its body calls.
	calls := map[string]map[string]bool{}
	short := map[string]string{} // method name -> "T.M"
	for k := range srcs {
		if i := strings.IndexByte(k, '.'); i >= 0 {
			short[k[i+1:]] = k
		}
	}
	called := func(n ast.Node) map[string]bool {
		out := map[string]bool{}
		ast.Inspect(n, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch f := c.Fun.(type) {
			case *ast.Ident:
				if _, ok := srcs[f.Name]; ok {
					out[f.Name] = true
				}
			case *ast.SelectorExpr:
				if k, ok := short[f.Sel.Name]; ok {
					out[k] = true
				}
			}
			return true
		})
		return out
	}
	for k, src := range srcs {
		name, method := k, ""
		if i := strings.IndexByte(k, '.'); i >= 0 {
			method, name = k[:i], k[i+1:]
		}
		f, err := parser.ParseFile(token.NewFileSet(), "cell", "package p;"+src, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name && (fd.Recv != nil) == (method != "") && fd.Body != nil {
				calls[k] = called(fd.Body)
			}
		}
	}
	reaches := func(from, to string) bool {
		seen := map[string]bool{}
		stack := []string{from}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for c := range calls[n] {
				if c == to {
					return true
				}
				if !seen[c] {
					seen[c] = true
					stack = append(stack, c)
				}
			}
		}
		return false
	}
	var roots map[string]bool
	if f, err := parser.ParseFile(token.NewFileSet(), "cell", wrapPrefix(segStmt)+seg.src+"\n}", parser.SkipObjectResolution); err == nil && seg.kind == segStmt {
		roots = called(f)
	}
	var out []string
	for k := range calls {
		if !reaches(k, k) {
			continue
		}
		if roots != nil {
			ok := roots[k]
			for r := range roots {
				ok = ok || reaches(r, k)
			}
			if !ok {
				continue
			}
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if roots[out[i]] != roots[out[j]] {
			return roots[out[i]]
		}
		return out[i] < out[j]
	})
	return out
}
