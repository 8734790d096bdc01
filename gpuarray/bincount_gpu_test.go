package gpuarray

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// bincountSumIn returns the first bincount sum (bincountSum) in n's graph, or nil.
func bincountSumIn(n *expr.Node) *expr.Node {
	if bincountSum(n) != nil {
		return n
	}
	for _, a := range n.Args {
		if s := bincountSumIn(a); s != nil {
			return s
		}
	}
	return nil
}

// TestBincountTotalsPlanning (planning, no GPU): a GPU compute counts the bincounts of
// Bincount and Histogram (over chunked inputs, a range given) into one device array, their
// chunks' counts summed there (bincountTotals ""); a weighted bincount, whose float sums depend
// on their order, is summed on the host as before. Replacing the sum by its counts (what the
// GPU compute does, replaceNodes) leaves the graph above computing the same values.
func TestBincountTotalsPlanning(t *testing.T) {
	x := NewRandomState(3).StandardNormal(Shape(3000), Chunks(700))
	ints := x.Abs().Mul(4).AsType(Int64)
	hist, _ := Histogram(x, 30, -3, 3, nil)
	whist, _ := Histogram(x, 30, -3, 3, x.Abs())
	for _, c := range []struct {
		name string
		a    *Array
		why  string // "" when counted on the device
	}{
		{"Bincount(ints)", Bincount(ints), ""},
		{"Bincount(ints, nil, 40)", Bincount(ints, nil, 40), ""},
		{"Histogram(x, 30, -3, 3)", hist, ""},
		{"Bincount(int32 ints)", Bincount(ints.AsType(Int32)), ""},
		{"Histogram weighted", whist, "weighted"},
		{"Bincount weighted", Bincount(ints, x.Abs()), "weighted"},
	} {
		if err := c.a.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s := bincountSumIn(c.a.n)
		if s == nil {
			t.Fatalf("%s: no bincount sum in the graph", c.name)
		}
		st, err := plan.Lower(0, bincountSum(s), map[*expr.Node]dtype.Slice{}, gpuPlanOptions())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		why := bincountTotals(s, st)
		if c.why == "" && why != "" {
			t.Errorf("%s: not counted on the device: %s", c.name, why)
		}
		if c.why != "" && !strings.Contains(why, c.why) {
			t.Errorf("%s: %q, want it to say %q", c.name, why, c.why)
		}
		// The graph with the sum replaced by its values computes the same.
		want, err := c.a.ToSlice(Inline())
		if err != nil {
			t.Fatal(err)
		}
		sv, err := (&Array{n: s}).Compute(Inline())
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&Array{n: replaceNodes(c.a.n, map[*expr.Node]*expr.Node{s: sv.n})}).ToSlice(Inline())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d values after the replacement, want %d", c.name, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: value %d is %v after the replacement, want %v", c.name, i, got[i], want[i])
			}
		}
	}
	if why := bincountTotals(x.Sum().n, nil); why != "not a bincount's sum of its chunks" {
		t.Errorf("a plain sum: %q", why)
	}
}
