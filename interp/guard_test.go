package interp

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestHugeMakeIsACellError: a make larger than the memory the process can get is the cell's
// error and allocates nothing (make([]byte, 30<<30) on a 23 GB machine killed the kernel with
// "out of memory"); ordinary makes, of any element type, are unchanged. The session goes on.
func TestHugeMakeIsACellError(t *testing.T) {
	s := newSession(t)
	_, _, err := run(t, s, "b := make([]byte, 1<<50)\n_ = b")
	if err == nil || !strings.Contains(err.Error(), "more than this process can get") {
		t.Fatalf("huge make: %v", err)
	}
	_, _, err = run(t, s, "func alloc(n int64) []float64 { return make([]float64, 1, n) }\n_ = alloc(1 << 50)")
	if err == nil || !strings.Contains(err.Error(), "more than this process can get") {
		t.Fatalf("huge make in a function: %v", err)
	}
	for code, want := range map[string]string{
		"x := make([]int, 3, 10)\nlen(x) + cap(x)":                                 "13",
		"type P struct{ A, B int }\nps := make([]P, 4,)\nlen(ps)":                  "4",
		"var n32 int32 = 5\nlen(make([]string, n32))":                              "5",
		"m := make(map[string]int, 8)\nm[\"a\"] = 1\nlen(m)":                       "1",
		"len(make([]int, len(make([]byte, 7))))":                                   "7",
		"grid := make([][]float64, 2)\ngrid[0] = make([]float64, 3)\nlen(grid[0])": "3",
	} {
		res, _, err := run(t, s, code)
		if err != nil {
			t.Fatalf("%q: %v", code, err)
		}
		if got := plainOf(t, res); got != want {
			t.Errorf("%q = %s, want %s", code, got, want)
		}
	}
}

// TestSystemMemoryLimit: the limit is 90% of MemTotal, and make's guard never allows more.
func TestSystemMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	got := SetSystemMemoryLimit()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip("no /proc/meminfo")
	}
	var kb int64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if want := kb << 10 / 10 * 9; got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("limit %d (runtime says %d), want %d", got, debug.SetMemoryLimit(-1), want)
	}
	if l := makeLimit(); l > uint64(got) {
		t.Fatalf("make's limit %d is above the memory limit %d", l, got)
	}
}

// TestCallbackPanicsAreCellErrors: a panic in a function the runtime calls later on its own
// goroutine (time.AfterFunc, context.AfterFunc) is the cell's error, not the process's end.
func TestCallbackPanicsAreCellErrors(t *testing.T) {
	var s *Session
	s = newHookedSession(t, map[string]any{"Reported": reported(&s)})
	// Each cell waits until the callback's panic has been reported, however late it runs.
	const wait = "\nfor !hook.Reported() {\n\ttime.Sleep(time.Millisecond)\n}"
	for _, code := range []string{
		"import (\"time\"; \"gpunotes.test/hook\")\ntime.AfterFunc(time.Millisecond, func() { panic(\"boom\") })" + wait,
		"import \"context\"\nctx, cancel := context.WithCancel(context.Background())\ncontext.AfterFunc(ctx, func() { panic(\"boom\") })\ncancel()" + wait,
	} {
		_, _, err := run(t, s, code)
		if err == nil || !strings.Contains(err.Error(), "AfterFunc callback") || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("%q: %v", code, err)
		}
	}
	if res, _, err := run(t, s, "1 + 1"); err != nil || plainOf(t, res) != "2" {
		t.Fatalf("session after callback panics: %v", err)
	}
}
