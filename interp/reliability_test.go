package interp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// cellErr runs code and returns its *CellError (failing the test when it succeeds).
func cellErr(t *testing.T, s *Session, code string) *CellError {
	t.Helper()
	_, _, err := run(t, s, code)
	var ce *CellError
	if !errors.As(err, &ce) {
		t.Fatalf("%q: want a cell error, got %v", code, err)
	}
	return ce
}

func TestRunawayRecursionIsACellError(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "x := 41"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, s, "func rec(n int) int { return rec(n+1) + 1 }"); err != nil {
		t.Fatal(err)
	}
	ce := cellErr(t, s, "y := 1\nrec(0)")
	tb := strings.Join(ce.Traceback, "\n")
	t.Logf("%s: %s\n%s", ce.Name, ce.Value, tb)
	if ce.Name != "RecursionError" || !strings.Contains(ce.Value, "rec called itself about") ||
		!strings.Contains(ce.Value, "the limit is 200000") {
		t.Errorf("error = %s: %s", ce.Name, ce.Value)
	}
	for _, want := range []string{"first: the cell's statements, line 2", "rec(0)", "last: rec, line 1", "return rec(n+1) + 1"} {
		if !strings.Contains(tb, want) {
			t.Errorf("traceback lacks %q", want)
		}
	}
	res, _, err := run(t, s, "x + 1")
	if err != nil || plainOf(t, res) != "42" {
		t.Fatalf("after the recursion: %v %v", res, err)
	}
}

func TestMutualRecursionNamesBoth(t *testing.T) {
	s, err := New(Options{Preload: []string{}, MaxCallDepth: 20_000})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, s, "func ping(n int) int { return pong(n+1) }\nfunc pong(n int) int { return ping(n+1) }\nfunc other(n int) int { return other(n) }"); err != nil {
		t.Fatal(err)
	}
	ce := cellErr(t, s, "ping(0)")
	t.Logf("%s: %s\n%s", ce.Name, ce.Value, strings.Join(ce.Traceback, "\n"))
	if ce.Name != "RecursionError" || !strings.Contains(ce.Value, "ping, pong called each other") || !strings.Contains(ce.Value, "the limit is 20000") {
		t.Errorf("error = %s: %s", ce.Name, ce.Value)
	}
	if res, _, err := run(t, s, "2 * 21"); err != nil || plainOf(t, res) != "42" {
		t.Fatalf("next cell: %v %v", res, err)
	}
}

// Deep but finite recursion that go run completes still completes.
func TestDeepFiniteRecursionCompletes(t *testing.T) {
	s := newSession(t)
	res, _, err := run(t, s, "func down(n int) int { if n == 0 { return 0 }; return down(n-1) + 1 }\ndown(100000)")
	if err != nil {
		t.Fatal(err)
	}
	if got := plainOf(t, res); got != "100000" {
		t.Fatalf("down(100000) = %s", got)
	}
}

func TestDepthEstimateFromDump(t *testing.T) {
	var b strings.Builder
	b.WriteString("goroutine 7 [running]:\n")
	for i := 0; i < 50; i++ {
		b.WriteString(runCfgFrame + "0x1, 0x2)\n\t/x/run.go:234 +0x265\ngithub.com/traefik/yaegi/interp.call.func9(0x3)\n\t/x/run.go:1401 +0x7d8\n")
	}
	b.WriteString("...1000 frames elided...\n")
	b.WriteString("main.main()\n\t/x/main.go:1 +0x1\n\ngoroutine 8 [chan receive]:\nmain.f()\n\t/x/main.go:2 +0x1\n")
	// 100 frames printed, 50 of them runCfg; 1000 more elided: about 550 calls.
	if got, _, _ := deepestInterpretedDepth([]byte(b.String())); got < 540 || got > 560 {
		t.Fatalf("depth = %d, want about 550", got)
	}
}

// A user expression that opens with func used to declare a func main that yaegi ran again
// before every later cell: after `func() int { for {} }()` was interrupted, `1+1` hung.
func TestUserExpressionOpeningWithFunc(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "n := 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EvalExpr(context.Background(), "func() int { n++; return n }()"); err != nil {
		t.Fatal(err)
	}
	res, _, err := run(t, s, "n")
	if err != nil || plainOf(t, res) != "1" {
		t.Fatalf("n after one user expression: %v %v (the expression ran again)", res, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.EvalExpr(ctx, "func() int { for {} }()")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the interrupted expression returned no error")
	}
	next := make(chan string, 1)
	go func() {
		out := newRec()
		res, err := s.Execute(context.Background(), "1+1", out)
		if err != nil || res == nil {
			next <- "error"
			return
		}
		next <- plainOf(t, res)
	}()
	select {
	case got := <-next:
		if got != "2" {
			t.Fatalf("1+1 after the interrupted expression = %s", got)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("1+1 gave no result within 2 minutes of the interrupted user expression")
	}
}

func TestGoroutineBound(t *testing.T) {
	s, err := New(Options{Preload: []string{}, MaxGoroutines: 2000})
	if err != nil {
		t.Fatal(err)
	}
	base := liveGoroutines.Load()
	ce := cellErr(t, s, "ch := make(chan int)\nfor i := 0; i < 1000000; i++ { go func() { <-ch }() }")
	t.Logf("%s: %s", ce.Name, ce.Value)
	if !strings.Contains(ce.Value, "2000 goroutines started by cells are still running") || !strings.Contains(ce.Value, "MaxGoroutines") {
		t.Errorf("error = %s", ce.Value)
	}
	if _, _, err := run(t, s, "close(ch)"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for liveGoroutines.Load() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := liveGoroutines.Load(); n > base {
		t.Fatalf("%d goroutines still counted after they ended", n-base)
	}
	res, _, err := run(t, s, "done := make(chan int)\ngo func() { done <- 42 }()\n<-done")
	if err != nil || plainOf(t, res) != "42" {
		t.Fatalf("a goroutine after the bound: %v %v", res, err)
	}
}
