package interp

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
)

// TestInterruptedLoopStaysStopped: a cell's top-level loop that is interrupted must not run
// on after the interrupt is reported. yaegi's EvalWithContext returned before the loop saw the
// stop, and the next cell's Eval made the loop's frame current again, so `for { n++ }` went on
// counting in the background for the rest of the session.
func TestInterruptedLoopStaysStopped(t *testing.T) {
	s, err := New(Options{Preload: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, s, "n := 0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(ctx, "for { n++ }", newRec())
		done <- err
	}()
	// Interrupt once the loop runs (an event, not a delay): its goroutine spins in runCfg.
	waitFor(t, func() bool {
		buf := make([]byte, 1<<20)
		return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("yaegi/interp.runCfg("))
	})
	cancel()
	var ce *CellError
	if err := <-done; !errors.As(err, &ce) || ce.Name != "KeyboardInterrupt" {
		t.Fatalf("the interrupted loop: %v", err)
	}
	// The next cells reset n and spin a loop of their own: a loop still alive would count
	// meanwhile (both run on the machine's cores; the Go scheduler preempts).
	if _, _, err := run(t, s, "n = 0"); err != nil {
		t.Fatal(err)
	}
	res, _, err := run(t, s, "for i := 0; i < 2000000; i++ {}\nn")
	if err != nil {
		t.Fatal(err)
	}
	if got := plainOf(t, res); got != "0" {
		t.Fatalf("n = %s after the interrupt: the interrupted loop still runs", got)
	}
}
