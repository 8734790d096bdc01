package ptx_test

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// expSinSpec is the reduction red of f(x) over a normal x (loc 1, scale 2) with f exp(x) +
// sin(x), or x alone; with expX, exp(x) + x (the PTX interpreter runs no Payne-Hanek callee).
func expSinSpec(red ptx.Reduce, expSin bool, expX ...bool) *ptx.Spec {
	f64 := expr.Float64
	nodes := []ptx.Node{{Kind: ptx.NRandom, DType: f64, Rand: expr.RandSpec{Dist: expr.Normal, P0: 1, P1: 2, Key: [2]uint32{42, 7}}}}
	switch {
	case expSin && len(expX) > 0 && expX[0]:
		nodes = append(nodes, ptx.Node{Kind: ptx.NUnary, DType: f64, Op: expr.OpExp, Args: [3]int{0}},
			ptx.Node{Kind: ptx.NBinary, DType: f64, Op: expr.OpAdd, Args: [3]int{1, 0}})
	case expSin:
		nodes = append(nodes, ptx.Node{Kind: ptx.NUnary, DType: f64, Op: expr.OpExp, Args: [3]int{0}},
			ptx.Node{Kind: ptx.NUnary, DType: f64, Op: expr.OpSin, Args: [3]int{0}},
			ptx.Node{Kind: ptx.NBinary, DType: f64, Op: expr.OpAdd, Args: [3]int{1, 2}})
	}
	return &ptx.Spec{Rank: 2, Reduce: red, Nodes: nodes}
}

// TestPairedPasses: by default (pairMode "auto") the element loop of a reduction with split
// inlined bodies (exp(x) + sin(x)) takes two elements a pass, a plain sum of normals one; "1"
// pairs every reduction that defers in element order, "0" none.
func TestPairedPasses(t *testing.T) {
	defer ptx.SetOptions(ptx.CurrentOptions())
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode   string
		expSin bool
		want   int
	}{{"auto", true, 1}, {"auto", false, 0}, {"1", false, 1}, {"0", true, 0}} {
		setPTX(func(o *ptx.Options) { o.Pair = c.mode })
		for _, red := range []ptx.Reduce{ptx.RSum, ptx.RWelford} {
			text, _, err := ptx.GeneratePTX(expSinSpec(red, c.expSin), lib)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(text, ptx.PairMark); n != c.want {
				t.Errorf("GPUNOTES_PTX_PAIR=%s, exp + sin %v, reduction %d: %d paired passes, want %d", c.mode, c.expSin, red, n, c.want)
			}
		}
	}
}

// TestPairedPassesKeepBits interprets full reductions (sum, Welford) of normals, and of
// exp(x) + x over them (the split body of exp; sin's Payne-Hanek callee is not interpreted,
// TestGPUInlinedFastPathsKeepBits runs exp(x) + sin(x)), with two elements a pass and with one: every thread's partial has
// the same bits (for the normals also those of the array stored, TestDeferredReductionsKeepElementOrder),
// with rows of 1000 (a pair at a row's end goes one at a time), batches of 32 and of 8, and a
// queue of 2 slow elements (batches that end at odd places).
func TestPairedPassesKeepBits(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets kernels of 20000 normal draws each")
	}
	defer ptx.SetOptions(ptx.CurrentOptions())
	setPTX(func(o *ptx.Options) { o.InlineConst = false }) // the interpreter reads no constant bank
	key := rng.Key{K0: 42, K1: 7}
	dims := []int64{20, 1000}
	const base, out = 1 << 32, 1 << 46
	run := func(s *ptx.Spec) []uint64 {
		mem, _ := ptxtest.StoredNormals(key, base, dims[0]*dims[1])
		task := ptxtest.HeldTask(dims, []ptxtest.Map{{Strides: []int64{1000, 1}}}, []uint64{base})
		var words []uint64
		for _, blk := range ptxtest.Fused(t, s, []ptxtest.Task{task}, mem, out)[0] {
			for _, args := range blk {
				words = append(words, args...)
			}
		}
		return words
	}
	for _, expSin := range []bool{false, true} {
		for _, red := range []ptx.Reduce{ptx.RSum, ptx.RWelford} {
			for _, v := range [][2]int{{32, 0}, {8, 2}} {
				setPTX(func(o *ptx.Options) { o.DeferBatch, o.DeferQueue = v[0], v[1] })
				setPTX(func(o *ptx.Options) { o.Pair = "0" })
				one := run(expSinSpec(red, expSin, true))
				setPTX(func(o *ptx.Options) { o.Pair = "1" })
				two := run(expSinSpec(red, expSin, true))
				if len(one) != len(two) || len(one) == 0 {
					t.Fatalf("exp + x %v, reduction %d: %d partial words one a pass, %d two", expSin, red, len(one), len(two))
				}
				for i := range one {
					if one[i] != two[i] {
						t.Errorf("exp + x %v, reduction %d, batches of %d, queues of %d: word %d is %#x two a pass, %#x one", expSin, red, v[0], v[1], i, two[i], one[i])
						break
					}
				}
			}
		}
	}
}
