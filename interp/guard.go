package interp

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/traefik/yaegi/interp"
)

// currentStdout writes to whatever os.Stdout is now. The interpreter gets it instead of the
// *os.File itself, so that cells see the real os.Stdout variable, and a file that a cell closed
// can be replaced for the next cells (reopenStdio).
type currentStdout struct{}

// Write hands the running cell's stdout pump p directly when that keeps the order of the
// output (pump.direct), saving the write syscall of each print; else it writes to os.Stdout.
func (currentStdout) Write(p []byte) (int, error) {
	if pp := stdoutPump.Load(); pp != nil && os.Stdout == capturedStdout.Load() && pp.direct(p) {
		return len(p), nil
	}
	return os.Stdout.Write(p)
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
	return interp.Exports{"time/time": {
		"AfterFunc": reflect.ValueOf(func(d time.Duration, f func()) *time.Timer {
			return time.AfterFunc(d, func() {
				defer s.recoverCallback("a time.AfterFunc callback")
				f()
			})
		}),
	}}
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
