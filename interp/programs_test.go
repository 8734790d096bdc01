package interp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

var (
	update   = flag.Bool("update", false, "record the go run output of testdata/programs")
	programs = flag.String("programs", "", "TestPrograms runs only the programs whose names match this `regexp` (and checks no pass-rate floor)")
)

// errorMark ends the recorded output of a program that fails (go run's exit status is not 0)
// and the kernel's output of a cell list that ends in an error.
const errorMark = "--- error\n"

// TestRecordPrograms records what `go run` prints for each program of testdata/programs (with
// -update), or checks that every program has a recording.
func TestRecordPrograms(t *testing.T) {
	progs, _ := filepath.Glob("testdata/programs/*.go")
	if len(progs) < 60 {
		t.Fatalf("%d programs, want at least 60", len(progs))
	}
	for _, p := range progs {
		want := strings.TrimSuffix(p, ".go") + ".out"
		if !*update {
			if _, err := os.Stat(want); err != nil {
				t.Errorf("%s has no recording: go test ./interp -run TestRecordPrograms -update", p)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "go", "run", p)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		err := cmd.Run()
		cancel()
		out := stdout.String()
		if err != nil {
			out += errorMark
		}
		if err := os.WriteFile(want, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// splits returns the three ways a user pastes a program: whole; its declarations and then
// main's body; each declaration in its own cell, then main's body in two cells.
func splits(t *testing.T, src string) map[string][]string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var decls []string
	var body *ast.BlockStmt
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			body = fd.Body
			continue
		}
		decls = append(decls, src[off(d.Pos()):off(d.End())])
	}
	if body == nil {
		t.Fatal("no func main")
	}
	stmts := func(list []ast.Stmt) string {
		if len(list) == 0 {
			return ""
		}
		text := src[off(list[0].Pos()):off(list[len(list)-1].End())]
		return strings.ReplaceAll(text, "\n\t", "\n")
	}
	whole := []string{src}
	declsBody := []string{strings.Join(decls, "\n\n"), stmts(body.List)}
	split := append([]string{}, decls...)
	half := len(body.List) / 2
	// A defer or return of main's own (in a loop or an if too, not in a func literal) must
	// stay with the rest: a cell's defers run when the cell ends.
	top := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.DeferStmt, *ast.ReturnStmt:
			top = true
		}
		return !top
	})
	if half > 0 && !top {
		split = append(split, stmts(body.List[:half]), stmts(body.List[half:]))
	} else {
		split = append(split, stmts(body.List))
	}
	return map[string][]string{"whole": whole, "decls+body": declsBody, "split": split}
}

// TestPrograms runs each program of testdata/programs through the real kernel (jupyter_client)
// pasted whole, as declarations and a body, and split across cells, and compares what it
// prints with what go run printed; then a %%compile cell and a gonum import. It reports the pass rate of each way and fails below the
// rates reached when it was written.
func TestPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kernel per program and way")
	}
	py := testenv.Python(t)
	env := testenv.InstallKernel(t)
	progs, _ := filepath.Glob("testdata/programs/*.go")
	only, err := regexp.Compile(*programs)
	if err != nil {
		t.Fatalf("-programs: %v", err)
	}
	type job struct {
		ID    string   `json:"id"`
		Cells []string `json:"cells"`
	}
	var jobs []job
	want := map[string]string{}
	for _, p := range progs {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(strings.TrimSuffix(p, ".go") + ".out")
		if err != nil {
			t.Fatalf("%s has no recording: go test ./interp -run TestRecordPrograms -update", p)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".go")
		if !only.MatchString(name) {
			continue
		}
		for way, cells := range splits(t, string(src)) {
			id := way + "/" + name
			jobs = append(jobs, job{id, cells})
			want[id] = string(out)
		}
	}
	// The %%compile path and a compiled-in third-party package, through the same kernel; their
	// expected output is what the same calls print compiled here.
	sum := 0
	for i := 0; i < 10000000; i++ {
		sum += i
	}
	extra := map[string]job{
		"compile/sum": {"compile/sum", []string{"%%compile\nfunc Sum(n int) int {\n\ts := 0\n\tfor i := 0; i < n; i++ {\n\t\ts += i\n\t}\n\treturn s\n}", "import \"fmt\"\nfmt.Println(Sum(10000000))"}},
		"module/stat": {"module/stat", []string{"import (\n\t\"fmt\"\n\t\"gonum.org/v1/gonum/stat\"\n)\nfmt.Println(stat.Mean([]float64{1, 2, 3, 4, 10}, nil), stat.StdDev([]float64{1, 2, 3, 4, 10}, nil))"}},
	}
	wantExtra := map[string]string{
		"compile/sum": fmt.Sprintln(sum),
		"module/stat": fmt.Sprintln(stat.Mean([]float64{1, 2, 3, 4, 10}, nil), stat.StdDev([]float64{1, 2, 3, 4, 10}, nil)),
	}
	for _, j := range extra {
		if *programs == "" {
			jobs = append(jobs, j)
		}
	}
	in, _ := json.Marshal(jobs)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/run_cells.py")
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("run_cells.py: %v\n%s", err, stderr.String())
	}
	var got map[string]struct {
		Stdout string   `json:"stdout"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	pass := map[string]int{}
	total := map[string]int{}
	var failed []string
	for _, j := range jobs {
		if w, ok := wantExtra[j.ID]; ok {
			g := got[j.ID]
			if !strings.HasSuffix(g.Stdout, w) || len(g.Errors) > 0 {
				t.Errorf("%s: printed %q, want it to end in %q; errors %q", j.ID, g.Stdout, w, g.Errors)
			}
			continue
		}
		way := strings.SplitN(j.ID, "/", 2)[0]
		total[way]++
		g := got[j.ID]
		out := g.Stdout
		if len(g.Errors) > 0 {
			out += errorMark
		}
		if out == want[j.ID] {
			pass[way]++
			continue
		}
		if *programs != "" {
			t.Errorf("%s: printed %q, go run printed %q; errors %q", j.ID, out, want[j.ID], g.Errors)
			continue
		}
		failed = append(failed, fmt.Sprintf("%s: printed %q, go run printed %q; errors %q", j.ID, out, want[j.ID], g.Errors))
	}
	sort.Strings(failed)
	for _, f := range failed {
		t.Log(f)
	}
	// The rates reached when this test was written; a change that loses a program fails.
	floor := map[string]int{"whole": 102, "decls+body": 102, "split": 101}
	for _, way := range []string{"whole", "decls+body", "split"} {
		rate := float64(pass[way]) / float64(total[way])
		t.Logf("%s: %d of %d programs print what go run prints (%.0f%%)", way, pass[way], total[way], 100*rate)
		if pass[way] < floor[way] && *programs == "" {
			t.Errorf("%s: %d programs pass, fewer than the %d that passed before", way, pass[way], floor[way])
		}
	}
}
