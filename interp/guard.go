package interp

import (
	"context"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"math"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/traefik/yaegi/interp"
)

// currentStdout writes to whatever os.Stdout is now. The interpreter gets it instead of the
// *os.File itself, so that cells see the real os.Stdout variable, and a file that a cell closed
// can be replaced for the next cells (reopenStdio).
type currentStdout struct{ s *Session }

// Write hands the running cell's stdout pump p directly when that keeps the order of the
// output (pump.direct), saving the write syscall of each print; else it writes to os.Stdout.
// Between cells (a goroutine of an ended cell printing) it keeps p for the next cell.
func (c currentStdout) Write(p []byte) (int, error) {
	pp := stdoutPump.Load()
	if pp == nil && c.s != nil && os.Stdout == capturedStdout.Load() {
		c.s.late.add(p)
		return len(p), nil
	}
	if pp != nil && os.Stdout == capturedStdout.Load() && pp.direct(p) {
		return len(p), nil
	}
	return os.Stdout.Write(p)
}

// lateOutput keeps what interpreted code prints while no cell runs (a goroutine that outlived
// its cell), for the next cell's output; past lateMax bytes it counts what it drops.
// (Compiled code writing to fd 1 between cells still reaches the kernel's own stdout.)
type lateOutput struct {
	mu      sync.Mutex
	buf     []byte
	dropped int
}

const lateMax = 1 << 20

func (l *lateOutput) add(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(len(p), lateMax-len(l.buf))
	l.buf = append(l.buf, p[:n]...)
	l.dropped += len(p) - n
}

// deliver writes what was kept into out, after a note saying where it comes from.
func (l *lateOutput) deliver(out Output) {
	l.mu.Lock()
	text, dropped := string(l.buf), l.dropped
	l.buf, l.dropped = nil, 0
	l.mu.Unlock()
	if text == "" && dropped == 0 {
		return
	}
	note := "gpunotes: printed by goroutines of earlier cells after their cell ended:\n"
	if dropped > 0 {
		note = fmt.Sprintf("gpunotes: printed by goroutines of earlier cells after their cell ended (the last %d bytes were dropped):\n", dropped)
	}
	out.Stream("stderr", note)
	if text != "" {
		out.Stream("stdout", text)
	}
}

// reopenStdio gives os.Stdout and os.Stderr new files on fds 1 and 2 when a cell closed them
// (os.Stdout.Close() would otherwise silence every later print of the session). It returns
// a note for the cell that closed them, or "".
func reopenStdio() string {
	note := ""
	for _, f := range []struct {
		file **os.File
		fd   uintptr
		name string
	}{{&os.Stdout, 1, "os.Stdout"}, {&os.Stderr, 2, "os.Stderr"}} {
		if _, err := (*f.file).Stat(); errors.Is(err, os.ErrClosed) {
			*f.file = os.NewFile(f.fd, "/dev/"+f.name[3:])
			note += "gpunotes: the cell closed " + f.name + "; it was reopened for the next cells\n"
		}
	}
	return note
}

// ReportCrashesTo makes the runtime also write a fatal error's report (stack overflow, out of
// memory, a panic nothing recovered) to w, which should be the process's real stderr saved
// before any cell runs: fds 1 and 2 belong to the running cell's capture, whose reader stops
// with the rest of the process. (The capture pipes' 1 MB buffer, pipeSize, is what lets the
// runtime finish writing there and exit: with 64 KB, a stack overflow's 80 KB report blocked
// and the kernel hung with a dead heartbeat.)
func ReportCrashesTo(w *os.File) error {
	if err := debug.SetCrashOutput(w, debug.CrashOptions{}); err != nil {
		return fmt.Errorf("crash output: %w", err)
	}
	return nil
}

// guardedSymbols replaces standard library functions that run a cell's function later, on a
// goroutine of their own, with versions that recover its panic: a panic in a time.AfterFunc
// callback killed the kernel with no message anywhere.
func (s *Session) guardedSymbols() interp.Exports {
	return interp.Exports{
		"time/time": {
			"AfterFunc": reflect.ValueOf(func(d time.Duration, f func()) *time.Timer {
				return time.AfterFunc(d, func() {
					defer s.recoverCallback("a time.AfterFunc callback")
					f()
				})
			}),
		},
		"context/context": {
			"AfterFunc": reflect.ValueOf(func(ctx context.Context, f func()) (stop func() bool) {
				return context.AfterFunc(ctx, func() {
					defer s.recoverCallback("a context.AfterFunc callback")
					f()
				})
			}),
		},
	}
}

// recoverCallback reports a callback's panic as goWrap reports a goroutine's: to the running
// (or next) cell as its error, and on stderr.
func (s *Session) recoverCallback(what string) {
	r := recover()
	if r == nil {
		return
	}
	e := &CellError{Name: "panic", Value: fmt.Sprintf("in %s: %v", what, r),
		Traceback: []string{fmt.Sprintf("panic in %s started by a cell: %v", what, r)}}
	select {
	case s.goPanics <- e:
	default:
	}
	fmt.Fprintf(os.Stderr, "panic in %s: %v\n", what, r)
}

// guardMakes rewrites each make([]T, n[, c]) of a cell into
// make([]T, gnrt.MakeLen(int64(n), new(T))[, gnrt.MakeLen(int64(c), new(T))]): a slice larger
// than the memory the process can get becomes the cell's error instead of a fatal "out of
// memory" (make([]byte, 30<<30) on a 23 GB machine killed the kernel with no message). Only
// the slice form is rewritten: maps and channels grow, or are small.
func guardMakes(src string) string {
	if !strings.Contains(src, "make(") {
		return src
	}
	var s scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	s.Init(file, []byte(src), nil, 0)
	type tok struct {
		pos int
		tok token.Token
		lit string
	}
	var toks []tok
	for {
		p, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		toks = append(toks, tok{file.Offset(p), t, lit})
	}
	type edit struct {
		at   int
		text string
	}
	var edits []edit
	for i := 0; i+3 < len(toks); i++ {
		if toks[i].tok != token.IDENT || toks[i].lit != "make" || toks[i+1].tok != token.LPAREN ||
			toks[i+2].tok != token.LBRACK || toks[i+3].tok != token.RBRACK {
			continue
		}
		// The element type runs to the first comma at depth 1; arguments to commas at depth 1
		// and the closing parenthesis at depth 0.
		depth, j := 0, i+1
		var commas []int
		end := -1
		for ; j < len(toks); j++ {
			switch toks[j].tok {
			case token.LPAREN, token.LBRACK, token.LBRACE:
				depth++
			case token.RPAREN, token.RBRACK, token.RBRACE:
				depth--
			case token.COMMA:
				if depth == 1 {
					commas = append(commas, j)
				}
			}
			if depth == 0 {
				end = j
				break
			}
		}
		if end < 0 || len(commas) == 0 || len(commas) > 2 {
			continue
		}
		elem := strings.TrimSpace(src[toks[i+3].pos+1 : toks[commas[0]].pos])
		if elem == "" {
			continue
		}
		bounds := append(append([]int(nil), commas...), end)
		for k := 0; k+1 < len(bounds); k++ {
			from := toks[bounds[k]].pos + 1
			to := toks[bounds[k+1]].pos
			if toks[bounds[k+1]-1].tok == token.COMMA { // a trailing comma
				continue
			}
			arg := src[from:to]
			if strings.TrimSpace(arg) == "" {
				continue
			}
			edits = append(edits, edit{from, " gnrt.MakeLen(int64(" + strings.TrimSpace(arg) + "), new(" + elem + "))"}, edit{to, "\x00"})
		}
	}
	if len(edits) == 0 {
		return src
	}
	var b strings.Builder
	last := 0
	for k := 0; k < len(edits); k += 2 {
		if edits[k].at < last {
			continue // a make inside an argument already rewritten: left as is
		}
		b.WriteString(src[last:edits[k].at])
		b.WriteString(edits[k].text)
		last = edits[k+1].at
	}
	b.WriteString(src[last:])
	return b.String()
}

// makeLimit is how many bytes one make may ask for: what the system can still give (available
// memory and swap), or the Go memory limit when one is set and lower.
func makeLimit() uint64 {
	limit := uint64(math.MaxInt64)
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		limit = uint64(l)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var avail, swap uint64
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			v, _ := strconv.ParseUint(f[1], 10, 64)
			switch f[0] {
			case "MemAvailable:":
				avail = v << 10
			case "SwapFree:":
				swap = v << 10
			}
		}
		if avail > 0 && avail+swap < limit {
			limit = avail + swap
		}
	}
	return limit
}

// makeLen checks one length of a rewritten make: elem is new(T).
func makeLen(n int64, elem any) int64 {
	size := uint64(reflect.TypeOf(elem).Elem().Size())
	if n <= 0 || size == 0 {
		return n
	}
	limit := makeLimit()
	if uint64(n) > limit/size {
		panic(fmt.Sprintf("make: %d elements of %d bytes (%.1f GiB) is more than this process can get (%.1f GiB free); nothing was allocated",
			n, size, float64(n)*float64(size)/(1<<30), float64(limit)/(1<<30)))
	}
	return n
}

// SetSystemMemoryLimit sets the Go memory limit (debug.SetMemoryLimit) to 90% of the
// machine's memory, unless GOMEMLIMIT chose one: near it the collector works harder instead of
// letting garbage push the process into the kernel's OOM killer. It returns the limit set (0:
// left alone).
func SetSystemMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			limit := kb << 10 / 10 * 9
			debug.SetMemoryLimit(limit)
			return limit
		}
	}
	return 0
}

// quietYaegiLog keeps the standard logger from writing yaegi's log.Panic messages ("nil
// type" before a compile crash that the session reports or works around) into the cell's
// stderr; anything else the standard logger writes still reaches os.Stderr. Cells' own log
// calls use the interpreter's logger, not this one.
var quietYaegiLog sync.Once

type yaegiLogFilter struct{}

func (yaegiLogFilter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if i := strings.LastIndex(msg, " "); i >= 0 && strings.Count(msg[:i], ":") >= 2 {
		// After log's date and time.
		switch rest := msg[strings.Index(msg, " ")+1:]; {
		case strings.HasSuffix(rest, " nil type"), strings.HasSuffix(rest, " nil reflect type"), strings.Contains(rest, "compositeGenerator not implemented"):
			return len(p), nil
		}
	}
	return os.Stderr.Write(p)
}
