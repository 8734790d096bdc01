package ptx

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestKeyParams: an element kernel takes one Philox key parameter per random leaf that derives
// its own round keys (x + x.T one, x + y two), loads it from the parameter space, and a partial
// reduction takes none (its keys stay in the descriptors, as reduce_axes.go launches it).
func TestKeyParams(t *testing.T) {
	normal := func(leaf, same int, key uint32) Node {
		return Node{Kind: NRandom, Leaf: leaf, SameKey: same, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{key, 7}}}
	}
	add := Node{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}}
	xt := &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{normal(0, 0, 42), normal(1, 1, 42), add}}
	xy := &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{normal(0, 0, 42), normal(1, 0, 43), add}}
	axes := &Spec{Rank: 2, Reduce: RSum, Kept: 1, Nodes: []Node{normal(0, 0, 42)}}
	for _, c := range []struct {
		name   string
		s      *Spec
		leaves []int
	}{{"x + x.T", xt, []int{0}}, {"x + y", xy, []int{0, 1}}, {"sum(x, 1)", axes, nil}} {
		if got := KeyLeaves(c.s); !slices.Equal(got, c.leaves) {
			t.Errorf("%s: key parameters for leaves %v, want %v", c.name, got, c.leaves)
		}
		ptx, _, err := GeneratePTX(c.s, fakeLib)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(ptx, ".param .u64 key"); n != len(c.leaves) {
			t.Errorf("%s: %d key parameters declared, want %d", c.name, n, len(c.leaves))
		}
		if n := strings.Count(ptx, "ld.param.u64") - 2; n != len(c.leaves) {
			t.Errorf("%s: %d key parameters loaded, want %d", c.name, n, len(c.leaves))
		}
	}
	opt.KeyParams = false
	defer func() { opt.KeyParams = true }()
	if got := KeyLeaves(xy); got != nil {
		t.Errorf("GPUNOTES_PTX_KEYPARAMS=0: key parameters for leaves %v", got)
	}
}

// TestDeferAxes: partial reductions (rows and columns) queue slow draws unless
// GPUNOTES_PTX_DEFER_AXES=0, and then as element kernels do: the loop before the queue's
// computation calls no slow path, and the batch and queue are kept in local memory.
func TestDeferAxes(t *testing.T) {
	defer func(on bool) { opt.DeferAxes = on }(opt.DeferAxes)
	normal := Node{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{42, 7}}}
	for _, s := range []*Spec{
		{Rank: 2, Reduce: RSum, Kept: 1, Rows: true, Nodes: []Node{normal}},
		{Rank: 2, Reduce: RWelford, Kept: 1, Nodes: []Node{normal}},
		{Rank: 3, Reduce: RArgMax, Kept: 1, Nodes: []Node{normal}},
	} {
		for _, on := range []bool{false, true} {
			opt.DeferAxes = on
			ptx, _, err := GeneratePTX(s, fakeLib)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(ptx, "st.local.u64") && strings.Contains(ptx, "ld.local.u64"); got != on {
				t.Errorf("rows %v, %v: queue in local memory %v, want %v", s.Rows, s.Reduce, got, on)
				continue
			}
			if !on {
				continue
			}
			loop := LoopBody(ptx)
			if strings.Contains(loop, "gpn_normal_slow") || !strings.Contains(loop, "or.pred") {
				t.Errorf("rows %v, %v: the loop calls the slow path or sets no predicate", s.Rows, s.Reduce)
			}
			want := 1 // where the queue is computed by each lane for its own
			if CoopPays(s) {
				want = 2 // and by the warp
			}
			if n := strings.Count(CollapseInlinedSlow(ptx), "call (retval0), gpn_normal_slow"); n != want {
				t.Errorf("rows %v, %v: %d slow-path calls, want %d (where the queue is computed)", s.Rows, s.Reduce, n, want)
			}
		}
	}
}

// TestFoldLoadsBounded: a reduction's batch holds deferBatchLen words of values (16 complex
// values at 32: a masked mean's sum and count), folded unrolled up to maxUnrolledFold words and
// above by rounds of foldGroup values, whose loads alone are in flight (a complex batch of 32
// unrolled: ptxas issued all 64 loads at once, 188 registers, one block per SM instead of two);
// a thread's partial batch loops either way.
func TestFoldLoadsBounded(t *testing.T) {
	defer func(n int) { opt.DeferBatch = n }(opt.DeferBatch)
	normal := Node{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{42, 7}}}
	c128 := expr.Complex128
	for _, c := range []struct {
		name    string
		nodes   []Node
		batch   int
		loads   int // ld.local.f64 of the fold
		grouped bool
	}{
		{"sum", []Node{normal}, 32, 32 + 1, false},
		{"complex sum", []Node{normal, {Kind: NCast, DType: c128}}, 32, 2*16 + 2, false},
		{"sum, batch 64", []Node{normal}, 64, foldGroup + 1, true},
		{"complex sum, batch 64", []Node{normal, {Kind: NCast, DType: c128}}, 64, 2*foldGroup + 2, true},
	} {
		opt.DeferBatch = c.batch
		s := &Spec{Rank: 2, Reduce: RSum, Nodes: c.nodes}
		ptx, _, err := GeneratePTX(s, fakeLib)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(ptx, "ld.local.f64"); n != c.loads {
			t.Errorf("%s: %d local loads of values, want %d", c.name, n, c.loads)
		}
		if grouped := strings.Contains(ptx, ".pragma \"nounroll\""); grouped != c.grouped {
			t.Errorf("%s: folded in groups %v, want %v", c.name, grouped, c.grouped)
		}
		if want := fmt.Sprintf("gpn_defer_v[%d]", 8*c.batch); !strings.Contains(ptx, want) {
			t.Errorf("%s: no %s (a batch of %d words)", c.name, want, c.batch)
		}
	}
}
