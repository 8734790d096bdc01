package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestShortRunsFoldInElementOrder interprets the short walk's kernels (Spec.Short: a thread
// per kept element walks its whole run) over stored float64 values, for runs over one axis and
// over two, up to axesMaxShort long, the last block partial: each sum has the bits of adding
// the run's elements in order from +0 (the CPU's loop over the rows of a column reduction,
// cpu's sumAcc.each), each min, max, argmin and argmax those of taking the run's elements in
// order (NaNs and ties included), and each Welford partial counts the run with its mean and M2
// within 1e-13 of a two-pass reference; with a thread per kept element, and with threads that
// take up to 3 (the grid-stride loop of a big result). For runs of up to 8 elements the block
// walk's kernel (eight warps per 32 kept elements, an element or none each, merged through
// shared memory) gives the same bits for all but Welford: the new walk moved no bit of those.
func TestShortRunsFoldInElementOrder(t *testing.T) {
	defer func(m, p int64) { shortMinThreads, shortMaxPerThread = m, p }(shortMinThreads, shortMaxPerThread)
	r := rand.New(rand.NewPCG(31, 32))
	const base = 1 << 32
	cases := []struct {
		name          string
		kept          int
		dims, strides []int64
	}{
		// x.reshape(6, 2, 90).sum(1) of a (6, 180) array: kept axes 0 and 2, reduced axis 1.
		{"(6, 2, 90) over axis 1", 2, []int64{6, 90, 2}, []int64{180, 1, 90}},
		{"(5, 260) over axis 0", 1, []int64{260, 5}, []int64{1, 260}},
		{"(3, 70, 4) over axes 0 and 2", 1, []int64{70, 3, 4}, []int64{4, 280, 1}},
		{"(32, 40) over axis 0", 1, []int64{40, 32}, []int64{1, 40}},
	}
	for i, c := range cases {
		shortMinThreads, shortMaxPerThread = 1<<17, 8
		if i%2 == 1 {
			shortMinThreads, shortMaxPerThread = 32, 3
		}
		k, n := int64(1), int64(1)
		for j, d := range c.dims {
			if j < c.kept {
				k *= d
			} else {
				n *= d
			}
		}
		if n > axesMaxShort {
			t.Fatalf("%s: a run of %d is not short", c.name, n)
		}
		if per := shortPerThread(k); per != min(3, max(1, k/32)) && i%2 == 1 {
			t.Fatalf("%s: %d kept elements per thread", c.name, per)
		}
		for _, red := range []Reduce{RSum, RMin, RMax, RArgMin, RArgMax, RWelford} {
			// Sums and Welford: normals with signed zeros; extremes: few distinct values (ties)
			// and NaNs.
			x := make([]float64, k*n)
			for i := range x {
				switch {
				case red == RSum || red == RWelford:
					x[i] = r.NormFloat64() * 1e3
					if r.IntN(8) == 0 {
						x[i] = math.Copysign(0, float64(r.IntN(2))-0.5)
					}
				case r.IntN(20) == 0:
					x[i] = math.NaN()
				default:
					x[i] = float64(r.IntN(7)) - 3
				}
			}
			mem := map[uint64]uint64{}
			for i, v := range x {
				mem[base+uint64(8*i)] = math.Float64bits(v)
			}
			s := &Spec{Rank: len(c.dims), Kept: c.kept, Short: true, Reduce: red, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			task := heldTask(c.dims, []Map{{Strides: c.strides}}, []uint64{base}, []int64{k * n})
			got := axesRun(t, s, task, mem)
			// run returns kept element q's run in element order (reduced axes row-major).
			run := func(q int64) []float64 {
				var off int64
				rem := q
				for j := c.kept - 1; j >= 0; j-- {
					off += rem % c.dims[j] * c.strides[j]
					rem /= c.dims[j]
				}
				out := make([]float64, 0, n)
				for e := range n {
					o, rem := off, e
					for j := len(c.dims) - 1; j >= c.kept; j-- {
						o += rem % c.dims[j] * c.strides[j]
						rem /= c.dims[j]
					}
					out = append(out, x[o])
				}
				return out
			}
			for q := range k {
				vs := run(q)
				switch red {
				case RSum:
					var want float64
					for _, v := range vs {
						want += v
					}
					if math.Float64bits(got.Values[q]) != math.Float64bits(want) {
						t.Fatalf("%s, sum of kept %d: %v, want %v (in order from +0)", c.name, q, got.Values[q], want)
					}
				case RMin, RMax:
					want := math.Inf(1)
					if red == RMax {
						want = math.Inf(-1)
					}
					for _, v := range vs {
						want = pick(want, v, red == RMax)
					}
					if math.Float64bits(got.Values[q]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(got.Values[q])) {
						t.Fatalf("%s, %v of kept %d: %v, want %v", c.name, red, q, got.Values[q], want)
					}
				case RArgMin, RArgMax:
					wv, wi := math.NaN(), int64(-1)
					for e, v := range vs {
						if wi < 0 || better(v, int64(e), wv, wi, red == RArgMax) {
							wv, wi = v, int64(e)
						}
					}
					if got.Index[q] != wi {
						t.Fatalf("%s, %v of kept %d: index %d, want %d (run %v)", c.name, red, q, got.Index[q], wi, vs)
					}
				case RWelford:
					var mean, m2 float64
					for _, v := range vs {
						mean += v
					}
					mean /= float64(n)
					for _, v := range vs {
						m2 += (v - mean) * (v - mean)
					}
					scale := 1e3 * float64(n)
					if got.Count[q] != float64(n) || math.Abs(got.Mean[q]-mean) > 1e-13*scale || math.Abs(got.M2[q]-m2) > 1e-13*scale*scale {
						t.Fatalf("%s, Welford of kept %d: (%v, %v, %v), want (%d, %v, %v)", c.name, q, got.Count[q], got.Mean[q], got.M2[q], n, mean, m2)
					}
				}
			}
			if n > 8 || red == RWelford {
				continue
			}
			b := *s
			b.Short = false
			blk := axesRun(t, &b, task, mem)
			for q := range k {
				if math.Float64bits(blk.Values[q]) != math.Float64bits(got.Values[q]) || (blk.Index != nil && blk.Index[q] != got.Index[q]) {
					t.Fatalf("%s, %v of kept %d: short walk %v, block walk %v", c.name, red, q, got.Values[q], blk.Values[q])
				}
			}
		}
	}
}

// TestShortWalkLaunch: a short walk takes one slice per kept element, a thread per kept
// element up to shortMinThreads threads and then up to shortMaxPerThread kept elements per
// thread (the reshape row's task, 5e7 kept elements of runs of 2: 24415 blocks of 8 per thread,
// where the block walk took 1562500 blocks), and keeps its partials on the device as its values.
func TestShortWalkLaunch(t *testing.T) {
	if shortMaxPerThread != 8 {
		t.Skipf("GPUNOTES_AXES_SHORT_PER_THREAD=%d", shortMaxPerThread)
	}
	s := &Spec{Rank: 3, Kept: 2, Short: true, Reduce: RSum, Nodes: []Node{{Kind: NRandom, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1}}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	task := Task{Dims: []int64{5000, 10000, 2}, Maps: []Map{{Strides: []int64{80000, 1, 40000}}}}
	k, n := axesShape(s, &task)
	if sl, g := axesSlices(s, k, n), axesGridX(s, k, 1); sl != 1 || g != 24415 {
		t.Fatalf("short walk of %d kept elements: %d slices, %d blocks", k, sl, g)
	}
	// A small result: a thread per kept element.
	if g := axesGridX(s, 1000, 1); g != 4 {
		t.Fatalf("short walk of 1000 kept elements: %d blocks", g)
	}
	b := *s
	b.Short = false
	if g := axesGridX(&b, k, axesSlices(&b, k, n)); g != 1562500 {
		t.Fatalf("block walk: %d blocks", g)
	}
	if err := keepsPartials(s, []Task{task}); err != nil {
		t.Fatalf("short sums not kept: %v", err)
	}
	for _, red := range []Reduce{RMin, RMax} {
		m := *s
		m.Reduce = red
		if err := keepsPartials(&m, []Task{task}); err != nil {
			t.Fatalf("short %v not kept: %v", red, err)
		}
	}
	if s.Key() == b.Key() {
		t.Fatal("the short and the block walk share a kernel key")
	}
	bad := *s
	bad.Rows = true
	if bad.Validate() == nil {
		t.Fatal("a walk both short and by rows validated")
	}
	bad = *s
	bad.Kept = 0
	if bad.Validate() == nil {
		t.Fatal("a short walk of a full reduction validated")
	}
}

// TestShortWalkRunsFewerInstructions counts, in the interpreter, the instructions per element
// of the reshape row's kernel (a normal array's sum over the middle axis of (4, 2, 64): runs of
// 2, kept elements neighbouring along the last axis) in the block walk and in the short walk,
// with the regenerated draws (slow draws deferred as on the GPU): the short walk runs at most
// a third of the block walk's, and no 64-bit division.
func TestShortWalkRunsFewerInstructions(t *testing.T) {
	defer func(m map[string]int) { ptxtest.Executed = m }(ptxtest.Executed)
	key := [2]uint32{42, 7}
	dims, strides := []int64{4, 64, 2}, []int64{128, 1, 64}
	const elems = 4 * 64 * 2
	counts := map[bool]map[string]int{}
	for _, short := range []bool{false, true} {
		s := &Spec{Rank: 3, Kept: 2, Short: short, Reduce: RSum, Nodes: []Node{{Kind: NRandom, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: key}}}}
		mem := map[uint64]uint64{}
		ptxtest.ZigTables(mem)
		ptxtest.Executed = map[string]int{}
		axesRunWords(t, s, heldTask(dims, []Map{{Strides: strides}}, []uint64{1 << 32}, []int64{elems}), mem)
		counts[short] = ptxtest.Executed
	}
	total := func(m map[string]int) int {
		n := 0
		for _, c := range m {
			n += c
		}
		return n
	}
	blk, sh := total(counts[false]), total(counts[true])
	t.Logf("instructions per element: block walk %.1f (64-bit divisions %d, 32-bit %d), short walk %.1f (%d, %d)",
		float64(blk)/elems, counts[false]["div.u64"], counts[false]["div.u32"], float64(sh)/elems, counts[true]["div.u64"], counts[true]["div.u32"])
	if 3*sh > blk || counts[true]["div.u64"] != 0 {
		t.Fatalf("short walk: %d instructions (%d 64-bit divisions), block walk %d", sh, counts[true]["div.u64"], blk)
	}
}
