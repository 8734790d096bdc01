package interp

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/traefik/yaegi/interp"
)

// sumTo is the 1e7-addition loop, compiled into the test binary as the reference.
func sumTo(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i
	}
	return s
}

// TestCompileCell builds a %%compile cell with the Go toolchain and calls its funcs from
// interpreted cells: results, several results, variadic arguments, a panic, and the 1e7-addition
// loop's time (call overhead included) against compiled Go.
func TestCompileCell(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain")
	}
	s := newSession(t)
	defer s.Close()
	out := newRec()
	ctx := context.Background()
	cell := "%%compile\nimport \"strings\"\n\nfunc Sum(n int) int {\n\ts := 0\n\tfor i := 0; i < n; i++ {\n\t\ts += i\n\t}\n\treturn s\n}\n\nfunc Split(s string) (string, int) { p := strings.Fields(s); return p[0], len(p) }\n\nfunc Total(xs ...float64) float64 { t := 0.0; for _, x := range xs { t += x }; return t }\n\nfunc Boom() { panic(\"boom\") }\n"
	if _, err := s.Execute(ctx, cell, out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.out("stdout"), "compiled Sum, Split, Total, Boom") {
		t.Fatalf("%q", out.out("stdout"))
	}
	res, _, err := run(t, s, "Sum(10)")
	if err != nil || plainOf(t, res) != "45" {
		t.Fatalf("Sum(10): %v %v", res, err)
	}
	res, _, err = run(t, s, "w, n := Split(\"a b c\")\nTotal(1.5, 2, float64(n))")
	if err != nil || plainOf(t, res) != "6.5" {
		t.Fatalf("Split/Total: %v %v", res, err)
	}
	_, _, err = run(t, s, "Boom()")
	var ce *CellError
	if !errors.As(err, &ce) || !strings.Contains(ce.Value, "boom") {
		t.Fatalf("panic: %#v", err)
	}
	// Speed: the best of 5 of one call each way.
	best := func(f func()) time.Duration {
		b := time.Hour
		for i := 0; i < 5; i++ {
			t0 := time.Now()
			f()
			b = min(b, time.Since(t0))
		}
		return b
	}
	var got any
	cellTime := best(func() {
		res, _, err := run(t, s, "Sum(10000000)")
		if err != nil {
			t.Fatal(err)
		}
		got = plainOf(t, res)
	})
	var ref int
	goTime := best(func() { ref = sumTo(10000000) })
	if got != fmt.Sprint(ref) {
		t.Fatalf("Sum(1e7) = %v, compiled Go %d", got, ref)
	}
	t.Logf("1e7 additions: %%compile cell %v (call and cell included), compiled Go %v: %.1fx", cellTime, goTime, float64(cellTime)/float64(goTime))
	// Interpreted, the loop is ~150x slower; anything near that means the call was not compiled.
	if cellTime > 10*goTime+20*time.Millisecond {
		t.Errorf("%%compile call took %v, compiled Go %v", cellTime, goTime)
	}
}

// TestCompileModule builds a %%compile cell that imports a third-party module: the go command
// fetches github.com/google/uuid (from the module cache or the module proxy, as `go build
// -mod=mod` does) and the cell's func runs with it.
func TestCompileModule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain")
	}
	s := newSession(t)
	defer s.Close()
	cell := "%%compile\nimport \"github.com/google/uuid\"\n\nfunc Named(name string) string { return uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String() }\n"
	if _, _, err := run(t, s, cell); err != nil {
		t.Fatal(err)
	}
	res, _, err := run(t, s, "Named(\"gpunotes\")")
	if err != nil {
		t.Fatal(err)
	}
	want := "\"" + uuid.NewSHA1(uuid.NameSpaceURL, []byte("gpunotes")).String() + "\""
	if got := plainOf(t, res); got != want {
		t.Fatalf("Named = %s, want %s", got, want)
	}
}

// TestMisspeltPackageIsUndefined: a misspelt package name answers as go build does, with the
// nearest package, whatever statement it stands in (yaegi crashed with a nil pointer
// dereference on `y, err := gpuaray.Ones(3)` and said "constant definition loop" on
// `x := gpuaray.Ones(3)`).
func TestMisspeltPackageIsUndefined(t *testing.T) {
	s, err := New(Options{
		Symbols: interp.Exports{"example.com/gpuarray/gpuarray": {"Ones": reflect.ValueOf(func(n int) []float64 { return make([]float64, n) })}},
		Preload: []string{"example.com/gpuarray"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ code, want string }{
		{"y, err := gpuaray.Ones(3)", "1:11: undefined: gpuaray (did you mean gpuarray?)"},
		{"x := gpuaray.Ones(3)", "1:6: undefined: gpuaray (did you mean gpuarray?)"},
		{"var z = gpuaray.Ones(3)", "1:9: undefined: gpuaray (did you mean gpuarray?)"},
		{"x := 1\ngpuaray.Ones(x)", "2:1: undefined: gpuaray (did you mean gpuarray?)"},
		{"func f() []float64 { return gpuaray.Ones(2) }", "1:29: undefined: gpuaray (did you mean gpuarray?)"},
		{"fmtt.Println(1)", "1:1: undefined: fmtt (did you mean fmt? (import \"fmt\"))"},
		{"df, err := dataframe.ReadParquet(\"x\")", "1:12: undefined: dataframe"},
	} {
		_, _, err := run(t, s, c.code)
		var ce *CellError
		if !errors.As(err, &ce) || ce.Name != "CompileError" || ce.Value != c.want {
			t.Errorf("%q: %v, want CompileError: %s", c.code, err, c.want)
		}
	}
	if res, _, err := run(t, s, "x := gpuarray.Ones(3)\nlen(x)"); err != nil || plainOf(t, res) != "3" {
		t.Fatalf("the right name: %v %v", res, err)
	}
}
