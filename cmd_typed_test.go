package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// TestSubmitTypedResults runs cell funcs on a worker that return a struct declared in a cell,
// a *gpuarray.Array and several results, and checks the cell gets those types back (not
// generic maps); it also passes a scattered value and an array to a func, and computes an
// array in the background with a cluster future.
func TestSubmitTypedResults(t *testing.T) {
	bin := testenv.Binary(t)
	s, err := newUserSession()
	if err != nil {
		t.Fatal(err)
	}
	cells := []string{
		"import (\"context\"; \"fmt\")\ntype Point struct { X, Y float64; Tags []string; label string }",
		"func mk(x float64) Point { return Point{X: x, Y: 2 * x, Tags: []string{\"a\", \"b\"}, label: \"p\"} }",
		"func ramp(n int) *gpuarray.Array { return gpuarray.Arange(0, float64(n), 1, gpuarray.Chunks(4)).Mul(2) }",
		"func pair(p Point) (Point, int, error) { n := len(p.Tags); q := Point{X: p.Y, Y: p.X}; return q, n, nil }",
		"func total(a *gpuarray.Array) float64 { v, err := a.Sum().Float64(); if err != nil { panic(err) }; return v }",
		fmt.Sprintf("c, err := cluster.NewLocalCUDA(cluster.Options{NWorkers: 2, CPUOnly: true, Binary: %q})\nif err != nil { panic(err) }", bin),
		"v, err := c.Submit(\"mk\", 1.5).Result(context.Background())\nif err != nil { panic(err) }\np := v.(Point)\nfmt.Println(\"point\", p.X, p.Y, p.Tags, p.label)",
		"w, err := c.Submit(\"ramp\", 10).Result(context.Background())\nif err != nil { panic(err) }\na := w.(*gpuarray.Array)\nxs, err := a.ToSlice()\nif err != nil { panic(err) }\nfmt.Println(\"array\", a.Shape(), a.Chunks(), xs)",
		"r, err := c.Submit(\"pair\", p).Result(context.Background())\nif err != nil { panic(err) }\nrs := r.([]any)\nq := rs[0].(Point)\nfmt.Println(\"pair\", q.X, q.Y, rs[1])",
		"fs, err := c.Scatter(p, ramp(6))\nif err != nil { panic(err) }\nu, err := c.Submit(\"pair\", fs[0]).Result(context.Background())\nif err != nil { panic(err) }\ntt, err := c.Submit(\"total\", fs[1]).Result(context.Background())\nif err != nil { panic(err) }\nfmt.Println(\"scattered\", u.([]any)[0].(Point).X, tt)",
		"af := c.Compute(gpuarray.NewRandomState(1).Uniform(0, 1, gpuarray.Shape(1000, 100), gpuarray.Chunks(100, 100)).Mean(0))\nm, err := af.Result(context.Background())\nif err != nil { panic(err) }\nms, _ := m.ToSlice()\nfmt.Println(\"future\", af.Status(), len(ms), ms[0] > 0.4 && ms[0] < 0.6)",
		"c.Close()",
	}
	var all strings.Builder
	for i, code := range cells {
		out := &cellOut{}
		if _, err := s.Execute(context.Background(), code, out); err != nil {
			t.Fatalf("cell %d: %v\n%s", i, err, out.text.String())
		}
		all.WriteString(out.text.String())
	}
	got := all.String()
	for _, want := range []string{
		"point 1.5 3 [a b] p\n",
		"array [10] [[4 4 2]] [0 2 4 6 8 10 12 14 16 18]\n",
		"pair 3 1.5 2\n",
		"scattered 3 30\n",
		"future finished 100 true\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in the cells' output:\n%s", want, got)
		}
	}
}
