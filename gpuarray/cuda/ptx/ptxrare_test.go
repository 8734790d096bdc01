package ptx_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestRareSkipKeepsBits interprets the sum and the Welford reduction of exp(x) + x over stored
// values, some warps holding exp's rare values (overflow, underflow, the scaled range on each
// side of its thresholds, infinities, NaN) and most none, with the split rests behind one branch
// (rareSkipMode "1"), behind a warp-uniform vote ("vote"), and without ("0"): every thread's
// partial has the same bits, and the kernels hold the branch only where asked.
func TestRareSkipKeepsBits(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets kernels of 12000 elements each")
	}
	defer ptx.SetOptions(ptx.CurrentOptions())
	setPTX(func(o *ptx.Options) { o.InlineSplit, o.InlineConst = true, false }) // the interpreter reads no constant bank
	dims := []int64{12, 1000}
	const base, out = 1 << 32, 1 << 46
	r := rand.New(rand.NewPCG(20, 3))
	mem := map[uint64]uint64{}
	rare := []float64{708.39, 708.4, 709.78, 709.79, 710, 745.1, 745.2, -708.4, -709.1, -745.1, -746, 1e5, -1e5,
		math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64}
	n := dims[0] * dims[1]
	for i := range n {
		v := r.NormFloat64() * 3
		// Rare values in a few elements of some warps only (elements i and i+256 are one thread's).
		if w := i / 32; w%7 == 3 && r.IntN(8) == 0 {
			v = rare[r.IntN(len(rare))]
		}
		mem[base+uint64(8*i)] = math.Float64bits(v)
	}
	f64 := expr.Float64
	task := ptxtest.HeldTask(dims, []ptxtest.Map{{Strides: []int64{1000, 1}}}, []uint64{base})
	for _, red := range []ptx.Reduce{ptx.RSum, ptx.RWelford} {
		s := &ptx.Spec{Rank: 2, Reduce: red, Nodes: []ptx.Node{{Kind: ptx.NInput, DType: f64},
			{Kind: ptx.NUnary, DType: f64, Op: expr.OpExp, Args: [3]int{0}}, {Kind: ptx.NBinary, DType: f64, Op: expr.OpAdd, Args: [3]int{1, 0}}}}
		var want []uint64
		for _, mode := range []string{"0", "1", "vote"} {
			setPTX(func(o *ptx.Options) { o.RareSkip = mode })
			lib, err := ptxtest.Library()
			if err != nil {
				t.Fatal(err)
			}
			text, _, err := ptx.GeneratePTX(s, lib)
			if err != nil {
				t.Fatal(err)
			}
			groups := strings.Count(text, "{ // inlined bodies, their fast paths first")
			marks, votes := strings.Count(text, ptx.RareMark), strings.Count(text, "vote.sync.any.pred")
			switch {
			case groups == 0:
				t.Fatalf("reduction %d: no split bodies", red)
			case mode == "0" && marks+votes != 0,
				mode == "1" && (marks != groups || votes != 0),
				mode == "vote" && (marks != groups || votes != groups):
				t.Errorf("GPUNOTES_PTX_RARE_SKIP=%s, reduction %d: %d groups, %d skips, %d votes", mode, red, groups, marks, votes)
			}
			var words []uint64
			for _, blk := range ptxtest.Fused(t, s, []ptxtest.Task{task}, mem, out)[0] {
				for _, args := range blk {
					words = append(words, args...)
				}
			}
			if want == nil {
				want = words
				continue
			}
			if len(words) != len(want) {
				t.Fatalf("GPUNOTES_PTX_RARE_SKIP=%s, reduction %d: %d partial words, %d without", mode, red, len(words), len(want))
			}
			for i := range words {
				if words[i] != want[i] {
					t.Errorf("GPUNOTES_PTX_RARE_SKIP=%s, reduction %d: word %d is %#x, %#x without", mode, red, i, words[i], want[i])
					break
				}
			}
		}
		// The rare values made some partials not finite: the rests ran.
		inf := 0
		for _, w := range want {
			if f := math.Float64frombits(w); math.IsInf(f, 0) || math.IsNaN(f) {
				inf++
			}
		}
		if inf == 0 {
			t.Errorf("reduction %d: no partial holds an overflow or a NaN", red)
		}
	}
}
