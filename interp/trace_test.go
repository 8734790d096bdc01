package interp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// countedOut is a recOut that tells the session its execution count, as the kernel does.
type countedOut struct {
	*recOut
	n int
}

func (c countedOut) ExecutionCount() int { return c.n }

var (
	goFrameRE   = regexp.MustCompile(`(?m)^main\.[^\n]*\n\t[^\n]*\.go:(\d+)(?: |$)`)
	cellFrameRE = regexp.MustCompile(`^  (?:in|called from) .*Cell In\[7\], line (\d+(?: or \d+)*)$`)
)

// TestPanicTraceLines pastes whole programs that panic in a cell and checks that the
// traceback names the cell and, frame by frame, the line that go run's own trace names (among
// at most three candidates where the function calls the failing one more than once).
func TestPanicTraceLines(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	progs := map[string]string{
		"index": `package main

import "fmt"

func at(xs []int, i int) int {
	fmt.Println("looking up", i)
	v := xs[i]
	return v
}

func sum(xs []int) int {
	s := 0
	for i := 0; i <= len(xs); i++ {
		s += at(xs, i)
	}
	return s
}

func main() {
	fmt.Println(sum([]int{1, 2}))
}
`,
		"nilmap": `package main

func fill(m map[string]int) {
	for _, k := range []string{"a", "b"} {
		m[k] = len(k)
	}
}

func main() {
	var m map[string]int
	fill(m)
}
`,
		"explicit": `package main

import "errors"

type store struct{ items []string }

func (s *store) mustGet(i int) string {
	if i >= len(s.items) {
		panic(errors.New("no such item"))
	}
	return s.items[i]
}

func main() {
	s := &store{}
	_ = s.mustGet(3)
}
`,
		"divide": `package main

import "fmt"

func ratio(a, b int) int {
	return a / b
}

func main() {
	fmt.Println(ratio(1, 1))
	fmt.Println(ratio(1, 0))
}
`,
	}
	dir := t.TempDir()
	for name, src := range progs {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".go")
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("go", "run", file).CombinedOutput()
			if err == nil {
				t.Fatalf("go run did not panic:\n%s", out)
			}
			var want []string
			for _, m := range goFrameRE.FindAllStringSubmatch(string(out), -1) {
				want = append(want, m[1])
			}
			s := newSession(t)
			_, cerr := s.Execute(context.Background(), src, countedOut{newRec(), 7})
			ce, ok := cerr.(*CellError)
			if !ok {
				t.Fatalf("cell error %v", cerr)
			}
			var got []string
			for _, l := range ce.Traceback {
				if m := cellFrameRE.FindStringSubmatch(l); m != nil {
					got = append(got, m[1])
				}
			}
			ok = len(got) == len(want) && len(want) > 0
			for i := 0; ok && i < len(want); i++ {
				ok = slices.Contains(strings.Split(got[i], " or "), want[i])
			}
			if !ok {
				t.Errorf("frames at lines %v, go run's at %v\ntraceback:\n%s\ngo run:\n%s", got, want, strings.Join(ce.Traceback, "\n"), out)
			}
		})
	}
}

// TestPanicTraceAcrossCells checks that a frame names the cell its function was declared in.
func TestPanicTraceAcrossCells(t *testing.T) {
	s := newSession(t)
	if _, err := s.Execute(context.Background(), "import \"fmt\"\n\nfunc last(xs []string) string {\n\tfmt.Println(len(xs))\n\treturn xs[len(xs)-1]\n}", countedOut{newRec(), 2}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Execute(context.Background(), "names := []string{}\nfunc() { fmt.Println(\"start\") }()\nfmt.Println(last(names))", countedOut{newRec(), 3})
	ce, ok := err.(*CellError)
	if !ok {
		t.Fatalf("cell error %v", err)
	}
	tb := strings.Join(ce.Traceback, "\n")
	for _, want := range []string{"  in last, Cell In[2], line 5\n    \treturn xs[len(xs)-1]", "  called from the cell's statements, Cell In[3], line 3\n    fmt.Println(last(names))"} {
		if !strings.Contains(tb, want) {
			t.Errorf("traceback lacks %q:\n%s", want, tb)
		}
	}
}

// TestLateGoroutineOutput checks that what a goroutine prints after its cell ended reaches the
// next cell's output, after a note, and that a goroutine printing while its cell runs still
// reaches that cell.
func TestLateGoroutineOutput(t *testing.T) {
	// The goroutine prints its second line once the first cell has ended (Release), and the
	// test runs the second cell once that line is printed (Printed): events, not sleeps.
	release, printed := make(chan struct{}), make(chan struct{})
	s := newHookedSession(t, map[string]any{
		"Release": func() { <-release },
		"Printed": func() { close(printed) },
	})
	_, out, err := run(t, s, "import (\"fmt\"; \"gpunotes.test/hook\")\ndone := make(chan bool)\nstarted := make(chan bool)\ngo func() {\n\tfmt.Println(\"during\")\n\tstarted <- true\n\thook.Release()\n\tfmt.Println(\"after the cell\")\n\thook.Printed()\n\tdone <- true\n}()\n<-started")
	if err != nil {
		t.Fatal(err)
	}
	if got := out.out("stdout"); got != "during\n" {
		t.Fatalf("first cell printed %q", got)
	}
	close(release)
	<-printed
	_, out, err = run(t, s, "<-done\nfmt.Println(\"second\")")
	if err != nil {
		t.Fatal(err)
	}
	if got := out.out("stdout"); got != "after the cell\nsecond\n" {
		t.Errorf("second cell printed %q", got)
	}
	if !strings.Contains(out.out("stderr"), "goroutines of earlier cells") {
		t.Errorf("no note on stderr: %q", out.out("stderr"))
	}
	_, out, _ = run(t, s, "fmt.Println(\"third\")")
	if out.out("stdout") != "third\n" || out.out("stderr") != "" {
		t.Errorf("third cell: %q %q", out.out("stdout"), out.out("stderr"))
	}
}

// TestFailedCellLeavesNoBrokenFuncs checks that the funcs of a cell that failed to compile do
// not stay behind as empty bodies (yaegi declares them before it meets the error): a func
// declared earlier keeps its old definition, a new one panics saying why, and the traceback
// names what the interpreter keeps.
func TestFailedCellLeavesNoBrokenFuncs(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "import \"fmt\"\nfunc good() int { return 7 }"); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, s, "func good() int { return 1 }\nfunc other(a int) (int, error) { return a, nil }\nvar g = 5\nfunc bad() int { return undefinedThing }")
	ce, ok := err.(*CellError)
	if !ok || ce.Name != "CompileError" {
		t.Fatalf("want a compile error, got %v", err)
	}
	tb := strings.Join(ce.Traceback, "\n")
	for _, want := range []string{"kept from earlier cells: good", "panics saying so): other, bad", "zero values and methods with empty bodies: g"} {
		if !strings.Contains(tb, want) {
			t.Errorf("traceback lacks %q:\n%s", want, tb)
		}
	}
	_, out, err := run(t, s, "fmt.Println(good())")
	if err != nil || out.out("stdout") != "7\n" {
		t.Errorf("good() after the failed cell: %q %v", out.out("stdout"), err)
	}
	_, _, err = run(t, s, "fmt.Println(other(3))")
	if err == nil || !strings.Contains(err.Error(), "other is not defined: the cell that declared it failed to compile") {
		t.Errorf("other(3) after the failed cell: %v", err)
	}
	// Once the cell compiles, its definitions replace the stubs.
	if _, _, err := run(t, s, "func good() int { return 1 }\nfunc other(a int) (int, error) { return a, nil }\nvar g = 5\nfunc bad() int { return 2 }"); err != nil {
		t.Fatal(err)
	}
	_, out, err = run(t, s, "fmt.Println(good(), g, bad())\nfmt.Println(other(3))")
	if err != nil || out.out("stdout") != "1 5 2\n3 <nil>\n" {
		t.Errorf("after the fixed cell: %q %v", out.out("stdout"), err)
	}
}

// TestCellDefers checks that the defers of a cell's statements run once, when the cell ends,
// last first, with their arguments taken at the defer (yaegi kept them in its global frame
// and ran them again after every later cell), and that recover() in one ends a panic.
func TestCellDefers(t *testing.T) {
	s := newSession(t)
	cells := []struct{ code, want, err string }{
		{"import \"fmt\"\nfor i := 0; i < 3; i++ {\n\tdefer fmt.Println(\"defer\", i)\n}\nx := 1\ndefer fmt.Println(\"x was\", x)\nx = 2\nfmt.Println(\"end\", x)", "end 2\nx was 1\ndefer 2\ndefer 1\ndefer 0\n", ""},
		{"fmt.Println(\"next\")", "next\n", ""},
		{"defer func() {\n\tif r := recover(); r != nil {\n\t\tfmt.Println(\"recovered:\", r)\n\t}\n}()\nvar m map[string]int\nm[\"a\"] = 1\nfmt.Println(\"not reached\")", "recovered: assignment to entry in nil map\n", ""},
		{"defer fmt.Println(\"cleanup\")\npanic(\"boom\")", "cleanup\n", "panic: boom"},
		{"fmt.Println(\"after\")", "after\n", ""},
	}
	for _, c := range cells {
		_, out, err := run(t, s, c.code)
		if got := out.out("stdout"); got != c.want {
			t.Errorf("%q printed %q, want %q", c.code, got, c.want)
		}
		if (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("%q: error %v, want %q", c.code, err, c.err)
		}
	}
}

// TestGenericDefineAtTopLevel checks that `x := slices.Max(xs)` and `t := Reduce(...)` (a
// cell's generic func) at a cell's top level, which yaegi cannot compile there, run, and that
// the variables they define (and the others of the same statements) are there for later
// cells with their values.
func TestGenericDefineAtTopLevel(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "import (\"fmt\"; \"strings\"; \"slices\")\nfunc Reduce[T, A any](xs []T, init A, f func(A, T) A) A {\n\tacc := init\n\tfor _, x := range xs {\n\t\tacc = f(acc, x)\n\t}\n\treturn acc\n}\nfunc Filter[T any](xs []T, keep func(T) bool) []T {\n\tvar out []T\n\tfor _, x := range xs {\n\t\tif keep(x) {\n\t\t\tout = append(out, x)\n\t\t}\n\t}\n\treturn out\n}\ntype P struct{ X int }"); err != nil {
		t.Fatal(err)
	}
	cells := []struct{ code, want string }{
		{"words := []string{\"go\", \"gopher\", \"rust\"}\ntotal := Reduce(words, 0, func(n int, w string) int { return n + len(w) })\nfmt.Println(total)", "12\n"},
		{"g := Filter(words, func(w string) bool { return strings.HasPrefix(w, \"g\") })\nfmt.Println(g, len(g), total)", "[go gopher] 2 12\n"},
		{"m := slices.Max([]int{3, 9, 2})\nps := Filter([]P{{1}, {2}}, func(p P) bool { return p.X > 1 })", ""},
		{"fmt.Println(g, words, total, m+1, ps[0].X)", "[go gopher] [go gopher rust] 12 10 2\n"},
	}
	for _, c := range cells {
		_, out, err := run(t, s, c.code)
		// Nothing on stderr: the variables are kept, and yaegi's "nil type" log line is not shown.
		if err != nil || out.out("stdout") != c.want || out.out("stderr") != "" {
			t.Errorf("%q printed %q (stderr %q), want %q; error %v", c.code, out.out("stdout"), out.out("stderr"), c.want, err)
		}
	}
}

// TestCellLogOutput checks that the log package's output of a cell reaches its stderr (it went
// into the buffer of yaegi's panic frames and was lost) while panics keep their traceback.
func TestCellLogOutput(t *testing.T) {
	s := newSession(t)
	_, out, err := run(t, s, "import \"log\"\nlog.SetFlags(0)\nlog.Println(\"hello\")\nlog.Printf(\"x=%d\", 3)")
	if err != nil || out.out("stderr") != "hello\nx=3\n" {
		t.Errorf("stderr %q, error %v", out.out("stderr"), err)
	}
	_, _, err = run(t, s, "func boom() {\n\tlog.Println(\"about to fail\")\n\tpanic(\"boom\")\n}\nboom()")
	ce, ok := err.(*CellError)
	if !ok || !strings.Contains(strings.Join(ce.Traceback, "\n"), "in boom, line 3 of its cell") {
		t.Errorf("traceback %v", err)
	}
}

// TestTopLevelCompileCrashes checks two inputs that crashed yaegi's compiler at a cell's top
// level: `v := sync.OnceValue(f)` runs, with v kept for later cells, and a return there (also
// inside an if) is a compile error that says why, at the return's position, and runs nothing.
func TestTopLevelCompileCrashes(t *testing.T) {
	s := newSession(t)
	_, out, err := run(t, s, "import (\"fmt\"; \"sync\")\nn := 0\nv := sync.OnceValue(func() int { n++; return 7 })\nfmt.Println(v(), v(), n)")
	if err != nil || out.out("stdout") != "7 7 1\n" || out.out("stderr") != "" {
		t.Fatalf("OnceValue: printed %q (stderr %q), error %v", out.out("stdout"), out.out("stderr"), err)
	}
	_, out, err = run(t, s, "a, b := sync.OnceValues(func() (int, error) { return 3, nil })()\nfmt.Println(v()+a, b, n)")
	if err != nil || out.out("stdout") != "10 <nil> 1\n" {
		t.Fatalf("OnceValues: printed %q (stderr %q), error %v", out.out("stdout"), out.out("stderr"), err)
	}
	for _, c := range []struct{ code, pos string }{
		{"x := 3\nif x > 2 {\n\tfmt.Println(\"early\")\n\treturn\n}\nfmt.Println(\"late\")", "4:2"},
		{"fmt.Println(\"early\")\nreturn", "2:1"},
	} {
		_, out, err := run(t, s, c.code)
		ce, ok := err.(*CellError)
		if !ok || ce.Name != "CompileError" || !strings.HasPrefix(ce.Value, c.pos+": return at a cell's top level") || out.out("stdout") != "" {
			t.Errorf("%q: printed %q, error %v", c.code, out.out("stdout"), err)
		}
	}
	_, out, err = run(t, s, "f := func() int {\n\tif n > 0 {\n\t\treturn 1\n\t}\n\treturn 0\n}\nfmt.Println(f())")
	if err != nil || out.out("stdout") != "1\n" {
		t.Errorf("return in a func literal: printed %q, error %v", out.out("stdout"), err)
	}
}

// TestRangeGenericMethodAcrossCells checks a range over an iterator method of a generic type
// whose variable an earlier cell defined (`st := &Stack[string]{}`), as when a program's main
// is split across cells: the type arguments come from that cell's statement.
func TestRangeGenericMethodAcrossCells(t *testing.T) {
	s := newSession(t)
	cells := []struct{ code, want string }{
		{"import (\"fmt\"; \"iter\")\ntype Stack[T any] struct{ items []T }\nfunc (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }\nfunc (s *Stack[T]) Top() iter.Seq[T] {\n\treturn func(yield func(T) bool) {\n\t\tfor i := len(s.items) - 1; i >= 0; i-- {\n\t\t\tif !yield(s.items[i]) {\n\t\t\t\treturn\n\t\t\t}\n\t\t}\n\t}\n}", ""},
		{"st := &Stack[string]{}\nst.Push(\"a\")\nst.Push(\"bb\")", ""},
		{"for w := range st.Top() {\n\tif w == \"a\" {\n\t\tbreak\n\t}\n\tfmt.Println(w, len(w))\n}", "bb 2\n"},
	}
	for _, c := range cells {
		_, out, err := run(t, s, c.code)
		if err != nil || out.out("stdout") != c.want {
			t.Errorf("%q printed %q, want %q; error %v", c.code, out.out("stdout"), c.want, err)
		}
	}
}
