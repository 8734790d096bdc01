package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

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
	defer func(m string, s, c bool) { ptx.RareSkipMode, ptx.InlineSplitOn, ptx.InlineConstOn = m, s, c }(ptx.RareSkipMode, ptx.InlineSplitOn, ptx.InlineConstOn)
	ptx.InlineSplitOn, ptx.InlineConstOn = true, false // the interpreter reads no constant bank
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
	task := heldTask(dims, []Map{{Strides: []int64{1000, 1}}}, []uint64{base}, []int64{n})
	for _, red := range []Reduce{RSum, RWelford} {
		s := &Spec{Rank: 2, Reduce: red, Nodes: []Node{{Kind: NInput, DType: f64},
			{Kind: NUnary, DType: f64, Op: expr.OpExp, Args: [3]int{0}}, {Kind: NBinary, DType: f64, Op: expr.OpAdd, Args: [3]int{1, 0}}}}
		var want []uint64
		for _, mode := range []string{"0", "1", "vote"} {
			ptx.RareSkipMode = mode
			lib, err := kernelsLib()
			if err != nil {
				t.Fatal(err)
			}
			text, _, err := GeneratePTX(s, lib)
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
			for _, blk := range fusedRun(t, s, []Task{task}, mem, out)[0] {
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
