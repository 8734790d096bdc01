package interp

import (
	"context"
	"errors"
	"strconv"
	"testing"
)

// TestGoroutineBoundAfterInterruptedFlood: a cell that starts goroutines in a loop until it
// is interrupted leaves some started by yaegi but stopped before their first statement, and
// some admitted whose go statement never ran. They must give their count back to the
// goroutine bound: once the flood is stopped the count returns to where it was, and the next
// cell can start the bound's worth of goroutines.
func TestGoroutineBoundAfterInterruptedFlood(t *testing.T) {
	const bound = 3000
	s, err := New(Options{Preload: []string{}, MaxGoroutines: bound})
	if err != nil {
		t.Fatal(err)
	}
	base := liveGoroutines.Load()
	if _, _, err := run(t, s, "n := 0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(ctx, "for { go func() { n++ }() }", newRec())
		done <- err
	}()
	// Interrupt once goroutines of the flood run (an event, not a delay).
	waitFor(t, func() bool { return liveGoroutines.Load() > base })
	cancel()
	var ce *CellError
	if err := <-done; !errors.As(err, &ce) || ce.Name != "KeyboardInterrupt" {
		t.Fatalf("the interrupted flood: %v", err)
	}
	// The next cell runs, and the count is back where it was: one admission leaked would
	// also make the bound's last goroutine below fail.
	if _, _, err := run(t, s, "n >= 0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return liveGoroutines.Load() == base })
	code := "ch := make(chan int)\nfor i := 0; i < " + strconv.Itoa(bound) + "; i++ { go func() { <-ch }() }\nclose(ch)\n7"
	if res, _, err := run(t, s, code); err != nil || plainOf(t, res) != "7" {
		t.Fatalf("the bound's worth of goroutines after the interrupts: %v, %v", res, err)
	}
	waitFor(t, func() bool { return liveGoroutines.Load() == base })
}
