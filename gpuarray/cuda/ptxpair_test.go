package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// expSinSpec is the reduction red of f(x) over a normal x (loc 1, scale 2) with f exp(x) +
// sin(x), or x alone; with expX, exp(x) + x (the PTX interpreter runs no Payne-Hanek callee).
func expSinSpec(red Reduce, expSin bool, expX ...bool) *Spec {
	f64 := expr.Float64
	nodes := []Node{{Kind: NRandom, DType: f64, Rand: expr.RandSpec{Dist: expr.Normal, P0: 1, P1: 2, Key: [2]uint32{42, 7}}}}
	switch {
	case expSin && len(expX) > 0 && expX[0]:
		nodes = append(nodes, Node{Kind: NUnary, DType: f64, Op: expr.OpExp, Args: [3]int{0}},
			Node{Kind: NBinary, DType: f64, Op: expr.OpAdd, Args: [3]int{1, 0}})
	case expSin:
		nodes = append(nodes, Node{Kind: NUnary, DType: f64, Op: expr.OpExp, Args: [3]int{0}},
			Node{Kind: NUnary, DType: f64, Op: expr.OpSin, Args: [3]int{0}},
			Node{Kind: NBinary, DType: f64, Op: expr.OpAdd, Args: [3]int{1, 2}})
	}
	return &Spec{Rank: 2, Reduce: red, Nodes: nodes}
}

// TestPairedPasses: by default (pairMode "auto") the element loop of a reduction with split
// inlined bodies (exp(x) + sin(x)) takes two elements a pass, a plain sum of normals one; "1"
// pairs every reduction that defers in element order, "0" none.
func TestPairedPasses(t *testing.T) {
	defer func(m string) { ptx.PairMode = m }(ptx.PairMode)
	lib, err := kernelsLib()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode   string
		expSin bool
		want   int
	}{{"auto", true, 1}, {"auto", false, 0}, {"1", false, 1}, {"0", true, 0}} {
		ptx.PairMode = c.mode
		for _, red := range []Reduce{RSum, RWelford} {
			text, _, err := GeneratePTX(expSinSpec(red, c.expSin), lib)
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
	defer func(m string, b, q int, c bool) {
		ptx.PairMode, ptx.DeferBatchLen, ptx.DeferQueueLen, ptx.InlineConstOn = m, b, q, c
	}(ptx.PairMode, ptx.DeferBatchLen, ptx.DeferQueueLen, ptx.InlineConstOn)
	ptx.InlineConstOn = false // the interpreter reads no constant bank
	key := rng.Key{K0: 42, K1: 7}
	dims := []int64{20, 1000}
	const base, out = 1 << 32, 1 << 46
	run := func(s *Spec) []uint64 {
		mem, _ := storedNormals(key, base, dims[0]*dims[1])
		task := heldTask(dims, []Map{{Strides: []int64{1000, 1}}}, []uint64{base}, []int64{dims[0] * dims[1]})
		var words []uint64
		for _, blk := range fusedRun(t, s, []Task{task}, mem, out)[0] {
			for _, args := range blk {
				words = append(words, args...)
			}
		}
		return words
	}
	for _, expSin := range []bool{false, true} {
		for _, red := range []Reduce{RSum, RWelford} {
			for _, v := range [][2]int{{32, 0}, {8, 2}} {
				ptx.DeferBatchLen, ptx.DeferQueueLen = v[0], v[1]
				ptx.PairMode = "0"
				one := run(expSinSpec(red, expSin, true))
				ptx.PairMode = "1"
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
