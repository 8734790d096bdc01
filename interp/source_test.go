package interp

import (
	"context"
	"strings"
	"testing"
)

func TestSourceOfAndCallInFreshSession(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "import \"strings\"\nconst scale = 10\ntype pair struct{ a, b int }\nfunc (p pair) sum() int { return p.a + p.b }\nfunc helper(x int) int { return x * scale }\nfunc work(x, y int) string { return strings.Repeat(\"*\", helper(pair{x, y}.sum())/10) }\nlocal := 3"); err != nil {
		t.Fatal(err)
	}
	src, err := s.SourceOf("work")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"import \"strings\"", "const scale", "type pair", "func (p pair) sum", "func helper", "func work"} {
		if !strings.Contains(src, want) {
			t.Errorf("source lacks %q:\n%s", want, src)
		}
	}
	worker := newSession(t)
	out, err := worker.Call(context.Background(), src, "work", []any{2, int64(3)})
	if err != nil || len(out) != 1 || out[0] != "*****" {
		t.Fatalf("%v %v", out, err)
	}
	// Cached: calling again does not re-evaluate (and must not fail on redeclaration).
	if out, err = worker.Call(context.Background(), src, "work", []any{1, 1}); err != nil || out[0] != "**" {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := worker.Call(context.Background(), src, "work", []any{1}); err == nil {
		t.Fatal("wrong arity accepted")
	}
	if _, err := s.SourceOf("local"); err == nil || !strings.Contains(err.Error(), "variable") {
		t.Fatalf("a statement variable is not a func: %v", err)
	}
	run(t, s, "func usesLocal() int { return local }")
	if _, err := s.SourceOf("usesLocal"); err == nil || !strings.Contains(err.Error(), "local") {
		t.Fatalf("capturing a statement variable must be refused: %v", err)
	}
	if _, err := s.SourceOf("nosuch"); err == nil {
		t.Fatal("unknown func accepted")
	}
}

func TestCallReturnsErrorResult(t *testing.T) {
	s := newSession(t)
	run(t, s, "import \"errors\"\nfunc check(x int) (int, error) { if x < 0 { return 0, errors.New(\"negative\") }; return x * 2, nil }")
	src, err := s.SourceOf("check")
	if err != nil {
		t.Fatal(err)
	}
	w := newSession(t)
	if out, err := w.Call(context.Background(), src, "check", []any{4}); err != nil || out[0] != 8 {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := w.Call(context.Background(), src, "check", []any{-1}); err == nil || err.Error() != "negative" {
		t.Fatalf("%v", err)
	}
}

// TestSourceOfIgnoresThePackageClause: a cell variable named p (the package name the
// declarations are parsed under) is no use of p by a func.
func TestSourceOfIgnoresThePackageClause(t *testing.T) {
	s := newSession(t)
	run(t, s, "p := 3\n_ = p")
	run(t, s, "func two() int { return 2 }")
	if _, err := s.SourceOf("two"); err != nil {
		t.Fatalf("two uses no cell variable: %v", err)
	}
}

func TestResultTypesOfCellFuncs(t *testing.T) {
	s := newSession(t)
	run(t, s, "type point struct{ X, Y float64 }")
	run(t, s, "func mk(x float64) (point, int, error) { return point{X: x}, 1, nil }")
	ts, err := s.ResultTypes("mk")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Kind().String() != "struct" || ts[0].NumField() != 2 || ts[1].Kind().String() != "int" {
		t.Fatalf("result types of mk: %v", ts)
	}
	if _, err := s.ResultTypes("point"); err == nil {
		t.Fatal("a type has no result types")
	}
}
