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
	_, err := s.Execute(context.Background(), "names := []string{}\nfmt.Println(\"start\")\nfmt.Println(last(names))", countedOut{newRec(), 3})
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
