package interp

import (
	"strings"
	"testing"
)

// TestForwardReference checks that a cell's func may call funcs that later cells declare, as
// in a Go file: the cell compiles (with a note on stderr), a call before the later cell panics
// saying what is missing, and after it every caller reaches the real func, mutual recursion
// across cells and callers compiled in between included. A cell with other errors, or one
// that declares a variable, still fails as before.
func TestForwardReference(t *testing.T) {
	s := newSession(t)
	cells := []struct{ code, out, err, stderr string }{
		{code: "import \"fmt\""},
		{code: "func first() string { return \"first calls \" + second() }", stderr: "note: first uses second, which no cell has declared yet"},
		{code: "fmt.Println(first())", err: "first is not defined yet: it uses second, which no cell has declared"},
		{code: "func even(n int) bool { if n == 0 { return true }; return odd(n - 1) }"},
		// odd is compiled against even's trampoline, before even compiles.
		{code: "func odd(n int) bool { if n == 0 { return false }; return even(n - 1) }"},
		{code: "func viaFirst() string { return \"via \" + first() }"},
		{code: "func second() string { return \"second\" }"},
		{code: "fmt.Println(first(), viaFirst(), even(10), odd(7), even(3))", out: "first calls second via first calls second true true false\n"},
		{code: "func sum(xs ...int) (n int) { for _, x := range xs { n += weight(x) }; return }"},
		{code: "func weight(x int) int { return 2 * x }"},
		{code: "fmt.Println(sum(1, 2, 3))", out: "12\n"},
		{code: "func bad() int { return 1 + \"x\" + later() }", err: "CompileError"},
		{code: "var v = 1\nfunc withVar() int { return v + notYet() }", err: "undefined: notYet"},
	}
	for i, c := range cells {
		_, out, err := run(t, s, c.code)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("cell %d: %v", i, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("cell %d: error %v, want one with %q", i, err, c.err)
		}
		if got := out.out("stdout"); got != c.out {
			t.Errorf("cell %d printed %q, want %q", i, got, c.out)
		}
		if got := out.out("stderr"); !strings.Contains(got, c.stderr) {
			t.Errorf("cell %d: stderr %q lacks %q", i, got, c.stderr)
		}
	}
}
