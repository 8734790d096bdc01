package gpuarray

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// firstMask returns the first mask node of n's graph (depth first), or nil.
func firstMask(n *expr.Node) *expr.Node {
	seen := map[*expr.Node]bool{}
	var walk func(x *expr.Node) *expr.Node
	walk = func(x *expr.Node) *expr.Node {
		if x == nil || seen[x] {
			return nil
		}
		seen[x] = true
		if x.Kind == expr.KMask {
			return x
		}
		for _, a := range x.Args {
			if m := walk(a); m != nil {
				return m
			}
		}
		return nil
	}
	return walk(n)
}

// TestMaskCompactPlanning checks, without a GPU, which masks a GPU compute compacts on the
// device (maskCompacts): Nonzero's and Argwhere's (over a chunked array, of any rank), a 1-d
// array masked by a comparison of itself, rows of a matrix by a mask over its first axis; and
// which it lists on the host, with the reason.
func TestMaskCompactPlanning(t *testing.T) {
	rs := NewRandomState(7)
	v := rs.StandardNormal(Shape(1000), Chunks(250))
	m := rs.StandardNormal(Shape(40, 30), Chunks(10, 30))
	m2 := rs.StandardNormal(Shape(40, 30), Chunks(10, 10))
	cases := []struct {
		name string
		a    *Array
		why  string // "" when compacted on the device, else a part of the reason
	}{
		{"nonzero of a vector", Nonzero(v.Gt(0))[0], ""},
		{"nonzero of a matrix, axis 1", Nonzero(m.Gt(0))[1], ""},
		{"argwhere of a matrix", Argwhere(m.Gt(0.5)), ""},
		{"v[v > 0]", v.Mask(v.Gt(0)), ""},
		{"rows of a matrix", m.Mask(m.Slice(All(), Span(0, 1)).Reshape(40).Gt(0)), ""},
		{"rows of a matrix chunked along its columns", m2.Mask(m2.Slice(All(), Span(0, 1)).Reshape(40).Gt(0)), "chunks along axis 1"},
		{"a mask over two axes", m.Mask(m.Gt(0)), "several axes"},
		{"a mask of floats", v.Mask(v), "float64 values"},
	}
	for _, c := range cases {
		if err := c.a.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := firstMask(c.a.n)
		if n == nil {
			t.Fatalf("%s: no mask in the graph", c.name)
		}
		why := maskCompacts(n)
		switch {
		case c.why == "" && why != "":
			t.Errorf("%s: not compacted on the device: %s", c.name, why)
		case c.why != "" && !strings.Contains(why, c.why):
			t.Errorf("%s: reason %q, want it to say %q", c.name, why, c.why)
		}
	}
}

// TestMaskCompactByDefault checks, without a GPU, that a GPU compute compacts masks on the
// device unless GPUNOTES_GPU_MASK_COMPACT=0 says not to, and that the selections of the bench's
// rows (a 20000² array in 10000² chunks, as `bench ops --persisted` reads it: Nonzero's and
// Argwhere's flattened masks, and a vector's) are compacted there.
func TestMaskCompactByDefault(t *testing.T) {
	for v, want := range map[string]bool{"": true, "1": true, "0": false} {
		if got := maskCompactFrom(v); got != want {
			t.Errorf("GPUNOTES_GPU_MASK_COMPACT=%q: compaction on the device %v, want %v", v, got, want)
		}
	}
	if os.Getenv("GPUNOTES_GPU_MASK_COMPACT") == "" && !maskCompact {
		t.Error("the device compaction is off with the variable unset")
	}
	x := NewRandomState(42).StandardNormal(Shape(20000, 20000), Chunks(10000, 10000))
	v := NewRandomState(42).StandardNormal(Shape(100000000), Chunks(12500000))
	for name, a := range map[string]*Array{"nonzero(x > 1)[0]": Nonzero(x.Gt(1))[0], "argwhere(x > 2)": Argwhere(x.Gt(2)), "nonzero(v > 1)[0]": Nonzero(v.Gt(1))[0]} {
		if err := a.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := firstMask(a.n)
		if n == nil {
			t.Fatalf("%s: no mask in the graph", name)
		}
		if why := maskCompacts(n); why != "" {
			t.Errorf("%s: not compacted on the device: %s", name, why)
		}
	}
}

// TestMaskOnCPUListsOnHost: off the GPU, a mask's positions are listed on the host as before
// (takeMaskedOnDevice does not try), with NumPy's selection.
func TestMaskOnCPUListsOnHost(t *testing.T) {
	x := FromSliceInt64([]int64{0, 3, 0, -2, 5, 0, 7}, Shape(7))
	n := firstMask(Nonzero(x)[0].n)
	r, mv, err := takeMaskedOnDevice(computeConfig{sched: &engine.Threads{}}, n)
	if err != nil || r != nil || !mv.IsNil() {
		t.Fatalf("tried on the CPU: %v %v %v", r, mv, err)
	}
	got, err := Nonzero(x)[0].ToSliceInt64()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 3, 4, 6}; !slices.Equal(got, want) {
		t.Fatalf("nonzero %v, want %v", got, want)
	}
}

// compactMasks turns the device compaction of masks on for a test (maskCompact).
func compactMasks(t *testing.T) {
	was := maskCompact
	maskCompact = true
	t.Cleanup(func() { maskCompact = was })
}
