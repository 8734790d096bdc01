package interp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/gpunotes/gpunotes/display"
)

type recOut struct {
	mu      sync.Mutex
	streams map[string]*strings.Builder
	shown   []display.Data
	inputs  []string
}

func newRec() *recOut {
	return &recOut{streams: map[string]*strings.Builder{"stdout": {}, "stderr": {}}}
}

func (r *recOut) Stream(name, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streams[name].WriteString(text)
}
func (r *recOut) Display(d display.Data, update bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shown = append(r.shown, d)
}
func (r *recOut) Clear(bool) {}
func (r *recOut) Input(prompt string, password bool) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.inputs) == 0 {
		return "", errors.New("no stdin")
	}
	in := r.inputs[0]
	r.inputs = r.inputs[1:]
	return in, nil
}
func (r *recOut) out(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams[name].String()
}

func newSession(t *testing.T) *Session {
	t.Helper()
	return newHookedSession(t, nil)
}

// newHookedSession is newSession with hooks, functions of the test that cells call as
// hook.Name: the events a cell waits for, so that no test depends on how fast a busy machine
// runs goroutines.
func newHookedSession(t *testing.T, hooks map[string]any) *Session {
	t.Helper()
	syms := interp.Exports{}
	if hooks != nil {
		m := map[string]reflect.Value{}
		for k, v := range hooks {
			m[k] = reflect.ValueOf(v)
		}
		syms["gpunotes.test/hook/hook"] = m
	}
	s, err := New(Options{Symbols: syms, Preload: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reported is a hook that says whether a goroutine's panic has reached the session.
func reported(s **Session) func() bool {
	return func() bool { return len((*s).goPanics) > 0 }
}

func run(t *testing.T, s *Session, code string) (*display.Data, *recOut, error) {
	t.Helper()
	out := newRec()
	res, err := s.Execute(context.Background(), code, out)
	return res, out, err
}

func plainOf(t *testing.T, d *display.Data) string {
	t.Helper()
	if d == nil {
		t.Fatal("no result")
	}
	return fmt.Sprint(d.MIME["text/plain"])
}

func TestMixedCellAndState(t *testing.T) {
	s := newSession(t)
	res, out, err := run(t, s, "x := 20\nfunc double(v int) int { return 2 * v }\nimport \"fmt\"\nfmt.Println(\"hello\")\ntype P struct{ A int }\ndouble(x) + 1")
	if err != nil {
		t.Fatal(err)
	}
	if got := plainOf(t, res); got != "41" {
		t.Fatalf("result %q", got)
	}
	if out.out("stdout") != "hello\n" {
		t.Fatalf("stdout %q", out.out("stdout"))
	}
	res, _, err = run(t, s, "func double(v int) int { return 3 * v }\ndouble(x)")
	if err != nil || plainOf(t, res) != "60" {
		t.Fatalf("redefined func: %v %v", res, err)
	}
	res, _, err = run(t, s, "P{A: x}")
	if err != nil || plainOf(t, res) != "{20}" {
		t.Fatalf("type across cells: %v %v", res, err)
	}
}

func TestPrintIsNotResult(t *testing.T) {
	s := newSession(t)
	res, out, err := run(t, s, "import \"fmt\"\nfmt.Println(\"a\")")
	if err != nil || res != nil || out.out("stdout") != "a\n" {
		t.Fatalf("res %v err %v out %q", res, err, out.out("stdout"))
	}
}

func TestCompiledAndGoroutineOutputCaptured(t *testing.T) {
	s := newSession(t)
	_, out, err := run(t, s, "import (\"fmt\"; \"os\"; \"sync\")\nvar wg sync.WaitGroup\nwg.Add(1)\ngo func() { defer wg.Done(); fmt.Fprintln(os.Stdout, \"from goroutine\") }()\nwg.Wait()\nfmt.Fprintln(os.Stderr, \"err line\")")
	if err != nil {
		t.Fatal(err)
	}
	if out.out("stdout") != "from goroutine\n" || out.out("stderr") != "err line\n" {
		t.Fatalf("stdout %q stderr %q", out.out("stdout"), out.out("stderr"))
	}
}

func TestManyLinesArrive(t *testing.T) {
	s := newSession(t)
	_, out, err := run(t, s, "import \"fmt\"\nfor i := 0; i < 10000; i++ { fmt.Println(i) }")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.out("stdout"), "\n"); n != 10000 {
		t.Fatalf("got %d lines", n)
	}
}

func TestSyntaxErrorPosition(t *testing.T) {
	s := newSession(t)
	_, _, err := run(t, s, "x := 1\ny := x +\n")
	var ce *CellError
	if !errors.As(err, &ce) || ce.Name != "SyntaxError" || !strings.HasPrefix(ce.Value, "3:1") {
		t.Fatalf("%#v", err)
	}
	_, _, err = run(t, s, "a := 1\nprintln(a, undefinedName)")
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Value, "2:") || !strings.Contains(ce.Value, "undefined: undefinedName") {
		t.Fatalf("compile error position: %#v", err)
	}
}

// TestMinMaxClear checks Go 1.21's min, max and clear, which yaegi v0.16.1 lacks: declared
// generics and a rewrite, at a cell's top level and inside funcs.
func TestMinMaxClear(t *testing.T) {
	s := newSession(t)
	for src, want := range map[string]string{
		"m := max(3, 4)\nm":                                  "4",
		"x := 7\ny := max(x, 10)\ny":                         "10",
		"z := min(2.5, 1)\nz":                                "1",
		"w := 1.5\nmin(w, 3, -1)":                            "-1",
		"min(\"b\", \"a\")":                                  `"a"`,
		"func f(a, b int) int { return min(a, b) }\nf(3, 2)": "2",
		"mp := map[int]int{1: 2}\nclear(mp)\nlen(mp)":        "0",
		"sl := []int{1, 2}\nclear(sl)\nsl":                   "[0 0]",
	} {
		res, _, err := run(t, s, src)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if got := plainOf(t, res); got != want {
			t.Errorf("%q = %s, want %s", src, got, want)
		}
	}
	// Other compile errors get no hint.
	_, _, err := run(t, s, "maxim := 1\nprintln(maxim, nope)")
	var ce *CellError
	if !errors.As(err, &ce) || strings.Contains(ce.Value, "Go 1.21") {
		t.Errorf("unrelated error: %#v", err)
	}
}

func TestPanicsAndExit(t *testing.T) {
	var s *Session
	s = newHookedSession(t, map[string]any{"Reported": reported(&s)})
	_, _, err := run(t, s, "panic(\"boom\")")
	var ce *CellError
	if !errors.As(err, &ce) || ce.Name != "panic" || ce.Value != "boom" || len(ce.Traceback) == 0 {
		t.Fatalf("%#v", err)
	}
	_, _, err = run(t, s, "import \"os\"\nos.Exit(1)")
	if !errors.As(err, &ce) || ce.Name != "Exit" {
		t.Fatalf("os.Exit: %#v", err)
	}
	_, _, err = run(t, s, "import (\"time\"; \"gpunotes.test/hook\")\ngo func() { var p *struct{ A int }; p.A = 1 }()\nfor !hook.Reported() {\n\ttime.Sleep(time.Millisecond)\n}")
	if !errors.As(err, &ce) || !strings.Contains(ce.Value, "goroutine") {
		t.Fatalf("goroutine panic: %#v", err)
	}
	res, _, err := run(t, s, "1 + 1")
	if err != nil || plainOf(t, res) != "2" {
		t.Fatalf("session must survive: %v %v", res, err)
	}
}

func TestInterrupt(t *testing.T) {
	s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := s.Execute(ctx, "for {}", newRec())
	var ce *CellError
	if !errors.As(err, &ce) || ce.Name != "KeyboardInterrupt" {
		t.Fatalf("%#v", err)
	}
	if res, _, err := run(t, s, "2 * 21"); err != nil || plainOf(t, res) != "42" {
		t.Fatalf("after interrupt: %v %v", res, err)
	}
}

func TestStdin(t *testing.T) {
	s := newSession(t)
	out := newRec()
	out.inputs = []string{"gopher", "42"}
	res, err := s.Execute(context.Background(), "import (\"bufio\"; \"fmt\"; \"os\")\nr := bufio.NewReader(os.Stdin)\nname, _ := r.ReadString('\\n')\nvar n int\nfmt.Scanln(&n)\nfmt.Sprint(name[:len(name)-1], n)", out)
	if err != nil || plainOf(t, res) != `"gopher42"` {
		t.Fatalf("%v %v", res, err)
	}
}

func TestRedeclaredTypeIsClearError(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "type T struct{ A int }"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, s, "type T struct{ A int }"); err != nil {
		t.Fatalf("same definition again must pass: %v", err)
	}
	_, _, err := run(t, s, "type T struct{ A, B int }")
	var ce *CellError
	if !errors.As(err, &ce) || !strings.Contains(ce.Value, "restart") {
		t.Fatalf("%#v", err)
	}
}

func TestMagics(t *testing.T) {
	s := newSession(t)
	_, out, err := run(t, s, "%%time\nx := 3\n_ = x")
	if err != nil || !strings.Contains(out.out("stdout"), "Wall time") {
		t.Fatalf("%v %q", err, out.out("stdout"))
	}
	_, out, _ = run(t, s, "%who")
	if !strings.Contains(out.out("stdout"), "x") {
		t.Fatalf("who: %q", out.out("stdout"))
	}
	_, out, err = run(t, s, "!echo shell-ok")
	if err != nil || out.out("stdout") != "shell-ok\n" {
		t.Fatalf("shell: %v %q", err, out.out("stdout"))
	}
	_, _, err = run(t, s, "%env GPUNOTES_T=1")
	if err != nil {
		t.Fatal(err)
	}
	_, out, _ = run(t, s, "%env GPUNOTES_T")
	if out.out("stdout") != "1\n" {
		t.Fatalf("env: %q", out.out("stdout"))
	}
	_, _, err = run(t, s, "%nosuch")
	if err == nil {
		t.Fatal("unknown magic must fail")
	}
}

func TestCompleteInspectIsComplete(t *testing.T) {
	s := newSession(t)
	run(t, s, "import \"fmt\"\ntype Pt struct{ X, Y int }\nfunc (p Pt) Norm() int { return p.X }\npt := Pt{1, 2}")
	m, start, end := s.Complete("fmt.Prin", 8)
	if strings.Join(m, ",") != "Print,Printf,Println" || start != 4 || end != 8 {
		t.Fatalf("%v %d %d", m, start, end)
	}
	m, _, _ = s.Complete("pt.", 3)
	if strings.Join(m, ",") != "Norm,X,Y" {
		t.Fatalf("members %v", m)
	}
	m, _, _ = s.Complete("p", 1)
	if !contains(m, "pt") || !contains(m, "panic") {
		t.Fatalf("scope %v", m)
	}
	d, ok := s.Inspect("fmt.Println", 5, 0)
	if !ok || !strings.Contains(d["text/plain"].(string), "Println formats") {
		t.Fatalf("inspect %v", d)
	}
	d, ok = s.Inspect("pt", 1, 0)
	if !ok || !strings.Contains(d["text/plain"].(string), "{X:1 Y:2}") {
		t.Fatalf("inspect var %v", d)
	}
	for code, want := range map[string]string{"x := 1": "complete", "for {": "incomplete", "x := (1 +": "incomplete", "x := 1 +": "incomplete", "x := )": "invalid", "%time 1": "complete"} {
		if got, _ := s.IsComplete(code); got != want {
			t.Errorf("IsComplete(%q) = %s, want %s", code, got, want)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestCellsSeeTheProcessEnvironment(t *testing.T) {
	t.Setenv("GPUNOTES_ENV_PROBE", "outside")
	s := newSession(t)
	res, _, err := run(t, s, "import \"os\"\nos.Getenv(\"GPUNOTES_ENV_PROBE\")")
	if err != nil || plainOf(t, res) != `"outside"` {
		t.Fatalf("%v %v", res, err)
	}
	if _, _, err := run(t, s, "os.Setenv(\"GPUNOTES_ENV_PROBE\", \"inside\")"); err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv("GPUNOTES_ENV_PROBE"); v != "inside" {
		t.Fatalf("process sees %q", v)
	}
	_, out, err := run(t, s, "!echo $GPUNOTES_ENV_PROBE")
	if err != nil || out.out("stdout") != "inside\n" {
		t.Fatalf("shell sees %q (%v)", out.out("stdout"), err)
	}
}

func TestTrailingExpressionValues(t *testing.T) {
	s := newSession(t)
	if res, _, err := run(t, s, "7"); err != nil || plainOf(t, res) != "7" {
		t.Fatalf("%v %v", res, err)
	}
	// A call that returns nothing shows nothing (not the previous cell's value).
	res, _, err := run(t, s, "func noop() {}\nnoop()")
	if err != nil || res != nil {
		t.Fatalf("void call: %+v %v", res, err)
	}
	res, _, err = run(t, s, "import \"strconv\"\nstrconv.Atoi(\"12\")")
	if err != nil || plainOf(t, res) != "(12, <nil>)" {
		t.Fatalf("two results: %+v %v", res, err)
	}
	res, _, err = run(t, s, "import \"os\"\nos.Setenv(\"GPUNOTES_X\", \"1\")")
	if err != nil || res != nil {
		t.Fatalf("a nil error shows nothing: %+v %v", res, err)
	}
	// A real compile error in the trailing expression is reported at its own position.
	_, _, err = run(t, s, "y := 1\nundefinedThing(y)")
	var ce *CellError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Value, "2:") {
		t.Fatalf("%#v", err)
	}
}

type orderOut struct {
	recOut
	events []string
}

func (o *orderOut) Stream(name, text string) {
	o.mu.Lock()
	o.events = append(o.events, "stream:"+text)
	o.mu.Unlock()
}
func (o *orderOut) Display(d display.Data, update bool) {
	o.mu.Lock()
	o.events = append(o.events, "display")
	o.mu.Unlock()
}

func TestDisplayFollowsEarlierPrints(t *testing.T) {
	s, err := New(Options{Symbols: map[string]map[string]reflect.Value{}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		o := &orderOut{}
		show := func() { display.HTML("<b>x</b>") }
		s.symbols["probe/probe"] = map[string]reflect.Value{"Show": reflect.ValueOf(show)}
		if err := s.i.Use(map[string]map[string]reflect.Value{"probe/probe": {"Show": reflect.ValueOf(show)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Execute(context.Background(), "import (\"fmt\"; \"probe\")\nfmt.Print(\"before\")\nprobe.Show()\nfmt.Print(\"after\")", o); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(o.events, "|")
		if !strings.HasPrefix(got, "stream:before|display|stream:after") {
			t.Fatalf("order %q", got)
		}
	}
}

func TestChartLiteralIsAResult(t *testing.T) {
	s, err := New(Options{Symbols: map[string]map[string]reflect.Value{
		"github.com/gpunotes/gpunotes/display/display": {
			"BarChart": reflect.ValueOf((*display.BarChart)(nil)),
			"Series":   reflect.ValueOf((*display.Series)(nil)),
			"HTML":     reflect.ValueOf(display.HTML),
		}}, Preload: []string{"github.com/gpunotes/gpunotes/display"}})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := run(t, s, "display.BarChart{Title: \"t\", Labels: []string{\"a\"}, Series: []display.Series{{Name: \"x\", Values: []float64{2}}}}")
	if err != nil || res == nil || res.MIME["image/svg+xml"] == nil {
		t.Fatalf("chart literal: %+v %v", res, err)
	}
	res, _, err = run(t, s, "display.HTML(\"<b>shown as display data, not a result</b>\")")
	if err != nil || res != nil {
		t.Fatalf("a display handle is not a result: %+v %v", res, err)
	}
}

// TestBlockScopedMultiDefine: yaegi loses "a, err := f()" declared inside a block at a cell's
// top level; such blocks run inside a func literal.
func TestBlockScopedMultiDefine(t *testing.T) {
	s := newSession(t)
	_, out, err := run(t, s, "import (\"fmt\"; \"strconv\")\ntotal := 0\nfor _, w := range []string{\"4\", \"5\"} {\n\tn, err := strconv.Atoi(w)\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\ttotal += n\n}\nfmt.Println(total)")
	if err != nil || out.out("stdout") != "9\n" {
		t.Fatalf("%v %q", err, out.out("stdout"))
	}
}

// TestCellStartingWithFuncLiteralRunsOnce: yaegi parses a source that starts with "func" as
// declarations, and such a cell used to run again with every later cell.
func TestCellStartingWithFuncLiteralRunsOnce(t *testing.T) {
	for _, first := range []string{
		"func() {\n\tfmt.Println(\"A\")\n}()",
		"if skip == \"\" {\n\trc, err := os.ReadFile(\"/nonexistent\")\n\t_, _ = rc, err\n\tfmt.Println(\"A\")\n}",
	} {
		s := newSession(t)
		if _, _, err := run(t, s, "import (\"fmt\"; \"os\")\nskip := \"\"\n_ = os.Args"); err != nil {
			t.Fatal(err)
		}
		_, out, err := run(t, s, first)
		if err != nil || out.out("stdout") != "A\n" {
			t.Fatalf("%q: %v %q", first, err, out.out("stdout"))
		}
		_, out, err = run(t, s, "fmt.Println(\"B\")")
		if err != nil || out.out("stdout") != "B\n" {
			t.Fatalf("after %q the next cell printed %q (%v)", first, out.out("stdout"), err)
		}
	}
}

// TestInspectSource checks that detail 1 (name?? in the pager) shows the source of a func a
// cell declared, cut out of the other declarations of its cell.
func TestInspectSource(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "type T int\n\n// twice doubles.\nfunc twice(x int) int {\n\treturn 2 * x\n}\nfunc other() {}"); err != nil {
		t.Fatal(err)
	}
	data, ok := s.Inspect("twice", 5, 1)
	if !ok {
		t.Fatal("not found")
	}
	text := fmt.Sprint(data["text/plain"])
	if !strings.Contains(text, "source:\n// twice doubles.\nfunc twice(x int) int {\n\treturn 2 * x\n}") || strings.Contains(text, "other") {
		t.Fatalf("%q", text)
	}
	data, _ = s.Inspect("twice", 5, 0)
	if strings.Contains(fmt.Sprint(data["text/plain"]), "source:") {
		t.Fatalf("detail 0 shows the source: %q", data["text/plain"])
	}
}

// TestGoFileCells checks cells that behave like Go files (issue 22): a pasted program with
// package main runs main once, forward references, var after :=, go and defer arguments,
// per-iteration loop variables, range over int and top-level comma-ok forms.
func TestGoFileCells(t *testing.T) {
	s := newSession(t)
	steps := []struct{ code, out string }{
		{"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greet())\n}\n\nfunc greet() string { return \"hi\" }\n", "hi\n"},
		{"x := 5", ""},
		{"var y = x\nfmt.Println(y)", "5\n"},
		{"main()", "hi\n"},
		{"import \"sync\"\nvar wg sync.WaitGroup\nfunc show(v int) { defer wg.Done(); fmt.Println(\"go\", v) }", ""},
		{"q := 1\nwg.Add(1)\ngo show(q)\nq = 2\nwg.Wait()", "go 1\n"},
		{"func d() { v := 1; defer fmt.Println(\"deferred\", v); v = 2 }\nd()", "deferred 1\n"},
		{"var fs []func()\nfor i := 0; i < 3; i++ { fs = append(fs, func() { fmt.Print(i) }) }\nfor _, f := range fs { f() }\nfmt.Println()", "012\n"},
		{"n := 3\nfor i := range n { fmt.Print(i) }\nfor range 2 { fmt.Print(\"x\") }\nfmt.Println()", "012xx\n"},
		{"var base = 10", ""},
		{"var derived = base * 2\nfmt.Println(derived)", "20\n"},
		{"sh := 1\nif sh := 2; sh > 1 {\n\tfmt.Print(sh, \" \")\n}\n{\n\tsh := 3\n\t_ = sh\n}\nfmt.Println(sh, min(2.5, 1.5), max(1.0, 0.5))", "2 1 1.5 1\n"},
		{"res := make([]int, 3)\nfunc() {\n\tvar wg sync.WaitGroup\n\tfor i := range 3 {\n\t\twg.Add(1)\n\t\tgo func() { defer wg.Done(); res[i] = i * i }()\n\t}\n\twg.Wait()\n}()\nfmt.Println(res)", "[0 1 4]\n"},
		{"m := map[string]int{\"k\": 1}\n_, ok := m[\"k\"]\nv, ok2 := m[\"z\"]\nvar a any = \"s\"\nstr, isStr := a.(string)\nfmt.Println(ok, v, ok2, str, isStr)", "true 0 false s true\n"},
	}
	for _, st := range steps {
		_, out, err := run(t, s, st.code)
		if err != nil {
			t.Fatalf("%q: %v", st.code, err)
		}
		if got := out.out("stdout"); got != st.out {
			t.Fatalf("%q printed %q, want %q", st.code, got, st.out)
		}
	}
	// A later cell does not run main again.
	_, out, err := run(t, s, "z := 1\n_ = z")
	if err != nil || out.out("stdout") != "" {
		t.Fatalf("main ran again: %q %v", out.out("stdout"), err)
	}
}

// TestUnknownMethod checks issue 15's item 7: an unknown method on the result of a call is a
// compile error naming the method and the type, whether or not its value is assigned.
func TestUnknownMethod(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "import \"strings\""); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"strings.NewReader(\"x\").Foo(3, 4)", "y := strings.NewReader(\"x\").Foo(3, 4)", "r := strings.NewReader(\"x\")", "r.Lenn()"} {
		_, _, err := run(t, s, code)
		if code == "r := strings.NewReader(\"x\")" {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		var ce *CellError
		if !errors.As(err, &ce) || ce.Name != "CompileError" || !strings.Contains(ce.Value, "*strings.Reader has no method or field") {
			t.Fatalf("%q: %#v", code, err)
		}
		if code == "r.Lenn()" && !strings.Contains(ce.Value, "did you mean Len?") {
			t.Fatalf("%q: no suggestion: %v", code, ce.Value)
		}
	}
}

// TestGenericStd checks the generic standard library functions yaegi lacks (slices' sorting,
// searching and iterators, maps' iterators) against what compiled Go prints for the same calls.
func TestGenericStd(t *testing.T) {
	s := newSession(t)
	code := `import ("fmt"; "maps"; "slices"; "strings")
type person struct {
	name string
	age  int
}
func show() {
	xs := []int{5, 2, 8, 1}
	slices.Sort(xs)
	fmt.Println(xs, slices.IsSorted(xs), slices.Contains(xs, 8), slices.Index(xs, 5))
	i, found := slices.BinarySearch(xs, 5)
	fmt.Println(i, found, slices.Max(xs), slices.Min(xs))
	fs := []float64{2.5, -1, 0.5}
	slices.Sort(fs)
	ws := []string{"b", "c", "a"}
	slices.Sort(ws)
	fmt.Println(fs, ws)
	ps := []person{{"ann", 31}, {"bob", 25}, {"cid", 40}}
	slices.SortFunc(ps, func(a, b person) int { return a.age - b.age })
	fmt.Println(ps[0].name, ps[2].name)
	m := map[string]int{"b": 2, "a": 1, "c": 3}
	fmt.Println(slices.Sorted(maps.Keys(m)), slices.Sorted(maps.Values(m)))
	fmt.Println(slices.Collect(slices.Values(ws)), len(maps.Collect(maps.All(m))))
	fmt.Println(slices.SortedFunc(maps.Keys(m), func(a, b string) int { return strings.Compare(b, a) }))
}`
	if _, _, err := run(t, s, code); err != nil {
		t.Fatal(err)
	}
	_, out, err := run(t, s, "show()")
	if err != nil {
		t.Fatal(err)
	}
	want := "[1 2 5 8] true true 2\n2 true 8 1\n[-1 0.5 2.5] [a b c]\nbob cid\n[a b c] [1 2 3]\n[a b c] 3\n[c b a]\n"
	if got := out.out("stdout"); got != want {
		t.Fatalf("printed\n%s\nwant\n%s", got, want)
	}
}

// TestRangeFunc checks Go 1.23's range over functions, rewritten into calls with a yield func
// when the iterator's declaration names the yielded types, with continue and break.
func TestRangeFunc(t *testing.T) {
	s := newSession(t)
	steps := []struct{ code, out string }{
		{"import (\"fmt\"; \"iter\")\nfunc count(n int) iter.Seq[int] {\n\treturn func(yield func(int) bool) {\n\t\tfor i := 0; i < n; i++ {\n\t\t\tif !yield(i) {\n\t\t\t\treturn\n\t\t\t}\n\t\t}\n\t}\n}\nfunc pairs(yield func(int, string) bool) {\n\tfor i, s := range []string{\"x\", \"y\"} {\n\t\tif !yield(i, s) {\n\t\t\treturn\n\t\t}\n\t}\n}", ""},
		{"for v := range count(5) {\n\tif v == 1 {\n\t\tcontinue\n\t}\n\tif v == 3 {\n\t\tbreak\n\t}\n\tfmt.Print(v, \" \")\n}\nfor i, s := range pairs { fmt.Print(i, s, \" \") }\nfor range pairs { fmt.Print(\".\") }\nfmt.Println()", "0 2 0x 1y ..\n"},
		{"func main() {\n\tfor v := range count(3) {\n\t\tswitch v {\n\t\tcase 1:\n\t\t\tbreak\n\t\tdefault:\n\t\t\tfmt.Print(v)\n\t\t}\n\t}\n\tfmt.Println()\n}", "02\n"},
	}
	for _, st := range steps {
		_, out, err := run(t, s, st.code)
		if err != nil {
			t.Fatalf("%q: %v", st.code, err)
		}
		if got := out.out("stdout"); got != st.out {
			t.Fatalf("%q printed %q, want %q", st.code, got, st.out)
		}
	}
}

// TestImportMissing checks that importing a package the kernel lacks says what to do.
func TestImportMissing(t *testing.T) {
	s := newSession(t)
	_, _, err := run(t, s, "import \"example.com/nope/pkg\"")
	var ce *CellError
	if !errors.As(err, &ce) || ce.Name != "ImportError" || !strings.Contains(ce.Value, `"example.com/nope/pkg"`) || !strings.Contains(ce.Value, "%%compile") {
		t.Fatalf("%#v", err)
	}
}

// TestPanicNames checks that an index out of range says so as Go does, and that a pasted
// program's main is named main in the trace.
func TestPanicNames(t *testing.T) {
	s := newSession(t)
	_, _, err := run(t, s, "x := []int{1}\ni := 5\n_ = x[i]")
	var ce *CellError
	if !errors.As(err, &ce) || ce.Value != "runtime error: index out of range" {
		t.Fatalf("%#v", err)
	}
	_, _, err = run(t, s, "package main\nfunc main() {\n\tvar m map[string]int\n\tm[\"a\"] = 1\n}")
	if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Traceback, "\n"), "in main, line") {
		t.Fatalf("%#v", err)
	}
}

// TestClosuresInLoopsKeepTheirValue: a closure made in a loop arrives where it is used, even
// when an earlier closure of the same literal returns in between (yaegi wrote the literal's
// slot back when a closure returned: the next closure read as nil, and a go statement started
// nothing, so a WaitGroup waited forever).
func TestClosuresInLoopsKeepTheirValue(t *testing.T) {
	s := newSession(t)
	src, err := os.ReadFile("testdata/programs/closure_reentry.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/programs/closure_reentry.out")
	if err != nil {
		t.Fatal(err)
	}
	_, out, err := run(t, s, string(src))
	if err != nil || out.out("stdout") != string(want) {
		t.Fatalf("printed %q, go run printed %q; error %v", out.out("stdout"), want, err)
	}
}

// runProgram runs testdata/programs/name.go pasted whole and compares with go run's output.
func runProgram(t *testing.T, name string) {
	t.Helper()
	src, err := os.ReadFile("testdata/programs/" + name + ".go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/programs/" + name + ".out")
	if err != nil {
		t.Fatal(err)
	}
	_, out, err := run(t, newSession(t), string(src))
	if err != nil || out.out("stdout") != string(want) {
		t.Errorf("%s printed %q, go run printed %q; error %v", name, out.out("stdout"), want, err)
	}
}

// TestNewOfExpression: Go 1.26's new(expr) points at expr's value (yaegi pointed at a zero),
// in a func and at a cell's top level, where the variables stay for later cells.
func TestNewOfExpression(t *testing.T) {
	runProgram(t, "new_expr")
	s := newSession(t)
	for _, c := range []struct{ code, want string }{
		{"import \"fmt\"\ntype Point struct{ X, Y int }", ""},
		{"x := 3\np := new(x)\nq := new(42)\npt := new(Point{1, 2})\nn := new(len(\"four\"))\nf := new(2.5 * 2)\nz := new(int)", ""},
		{"*p++\nfmt.Println(*p, *q, *pt, *n, *f, x, *z)", "4 42 {1 2} 4 5 3 0\n"},
	} {
		_, out, err := run(t, s, c.code)
		if err != nil || out.out("stdout") != c.want {
			t.Errorf("%q printed %q, want %q; error %v", c.code, out.out("stdout"), c.want, err)
		}
	}
}

// TestGenericInferenceThroughConstraints: type arguments inferred through a constraint's core
// type (S ~[]E, M ~map[K]V) and a generic map function's K (yaegi: "undefined type for E").
func TestGenericInferenceThroughConstraints(t *testing.T) {
	runProgram(t, "generic_constraints")
	s := newSession(t)
	for _, c := range []struct{ code, want string }{
		{"import \"fmt\"\nfunc Equal[S ~[]E, E comparable](a, b S) bool {\n\tif len(a) != len(b) {\n\t\treturn false\n\t}\n\tfor i := range a {\n\t\tif a[i] != b[i] {\n\t\t\treturn false\n\t\t}\n\t}\n\treturn true\n}", ""},
		{"type IDs []int", ""},
		{"a := IDs{1, 2}\nfmt.Println(Equal(a, IDs{1, 2}), Equal([]string{\"x\"}, nil))", "true false\n"},
	} {
		_, out, err := run(t, s, c.code)
		if err != nil || out.out("stdout") != c.want {
			t.Errorf("%q printed %q, want %q; error %v", c.code, out.out("stdout"), c.want, err)
		}
	}
}
