package interp

import (
	"context"
	"strings"
	"testing"
	"time"
)

// errOut is a cell output that also takes error outputs (as the kernel's does), and says
// when one arrived.
type errOut struct {
	*recOut
	errs chan *CellError
}

func (o *errOut) Error(ename, evalue string, tb []string) {
	o.errs <- &CellError{Name: ename, Value: evalue, Traceback: tb}
}

// TestGoroutineRecursionAfterItsCell: a goroutine that a cell started and that recurses
// without end after the cell ended is stopped with a RecursionError sent to that cell's
// output, not a stack overflow that kills the process; the goroutine bound's count is given
// back and the next cell runs with the session's variables. Both forms of go statement.
func TestGoroutineRecursionAfterItsCell(t *testing.T) {
	s, err := New(Options{Preload: []string{}, MaxCallDepth: 20_000})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, s, "kept := 41\nfunc rec(n int) int { return rec(n+1) + 1 }"); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"go func() { rec(0) }()", "go rec(0)"} {
		before := liveGoroutines.Load()
		out := &errOut{recOut: newRec(), errs: make(chan *CellError, 4)}
		if _, err := s.Execute(context.Background(), code, out); err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		ce := <-out.errs // the watcher stops it: no wait of a given length
		t.Logf("%s: %s: %s\n%s", code, ce.Name, ce.Value, strings.Join(ce.Traceback, "\n"))
		if ce.Name != "RecursionError" || !strings.Contains(ce.Value, "in a goroutine started by this cell") ||
			!strings.Contains(ce.Value, "rec called itself") {
			t.Fatalf("%s: error %s: %s", code, ce.Name, ce.Value)
		}
		res, _, err := run(t, s, "kept + 1")
		if err != nil || plainOf(t, res) != "42" {
			t.Fatalf("%s: the next cell: %v, %v", code, res, err)
		}
		// The stopped goroutine gave its count back (its deferred recover did not run).
		waitFor(t, func() bool { return liveGoroutines.Load() == before })
	}
}

// TestCallbackRecursion: a widget callback (RunCallback) that recurses without end fails
// with a RecursionError naming the function; the session goes on.
func TestCallbackRecursion(t *testing.T) {
	var cb func()
	s := newHookedSession(t, map[string]any{"Set": func(f func()) { cb = f }})
	if _, _, err := run(t, s, "import \"gpunotes.test/hook\"\nkept := 41\nfunc deep(n int) int { return deep(n+1) + 1 }\nhook.Set(func() { deep(0) })"); err != nil {
		t.Fatal(err)
	}
	err := s.RunCallback(context.Background(), newRec(), cb)
	ce, ok := err.(*CellError)
	if !ok || ce.Name != "RecursionError" || !strings.Contains(ce.Value, "in a widget callback") || !strings.Contains(ce.Value, "deep called itself") {
		t.Fatalf("callback error: %v", err)
	}
	t.Log(strings.Join(ce.Traceback, "\n"))
	if res, _, err := run(t, s, "kept + 1"); err != nil || plainOf(t, res) != "42" {
		t.Fatalf("the next cell: %v, %v", res, err)
	}
}

// waitFor polls cond until it holds; the bound only keeps a broken test from hanging.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition did not hold within 2 minutes")
		}
		time.Sleep(time.Millisecond)
	}
}
