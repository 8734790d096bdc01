package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestSearchKernelInterpreted lowers planned searches (a Search instruction reading a sorted
// block whole, the values searched for an input of a 2-d task) to a fused kernel, interprets
// it on the host (package ptx/ptxtest), and finds the CPU executor's positions: sorted float64
// arrays with ties and trailing NaNs, all NaNs, one value and none, int64 and uint64 arrays
// beyond 2^53 (their words converted as the CPU converts them), both sides, NaN keys included;
// float32, bool and narrow integer arrays also held in their own element size.
func TestSearchKernelInterpreted(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	type sorted struct {
		what string
		vals dtype.Slice
	}
	floats := func(n int, nans int) dtype.Slice {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(9)) - 4
		}
		slices.Sort(v)
		for i := n - nans; i < n; i++ {
			v[i] = math.NaN()
		}
		return dtype.OfFloat64(v)
	}
	big := make([]int64, 300)
	for i := range big {
		big[i] = 1<<60 + int64(r.IntN(1<<12))*(1<<50)/4096 - int64(r.IntN(5))
	}
	slices.Sort(big)
	ubig := make([]uint64, len(big))
	for i, v := range big {
		ubig[i] = uint64(v) << (3 * (i % 2)) // below and above 2^63
	}
	slices.Sort(ubig)
	cases := []sorted{
		{"float64 with ties and NaNs", floats(1000, 37)},
		{"float64 without NaNs", floats(513, 0)},
		{"all NaN", floats(5, 5)},
		{"one value", floats(1, 0)},
		{"empty", dtype.OfFloat64(nil)},
		{"int64 beyond 2^53", dtype.OfInt64(big)},
		{"uint64 beyond 2^63", mustOf(t, ubig)},
		{"float32", dtype.Convert(floats(200, 3), dtype.Float32)},
		{"int16", dtype.Convert(floats(300, 0), dtype.Int16)},
		{"uint8", dtype.Convert(dtype.OfFloat64([]float64{0, 3, 3, 200, 255}), dtype.Uint8)},
	}
	const rows, cols = 3, 700
	// Exact integer comparisons (plan.SearchDType): int64 values near big int64 ones, uint64
	// values near uint64 ones past 2^63, int64 values into bools.
	near := func(vals []int64) dtype.Slice {
		k := make([]int64, rows*cols)
		for i := range k {
			k[i] = vals[r.IntN(len(vals))] + int64(r.IntN(5)) - 2
		}
		return dtype.OfInt64(k)
	}
	nearU := func(vals []uint64) dtype.Slice {
		k := make([]uint64, rows*cols)
		for i := range k {
			k[i] = vals[r.IntN(len(vals))] + uint64(r.IntN(5)) - 2
		}
		return mustOf(t, k)
	}
	// Sorted int8, int16 and uint32 values whose sign or zero extension matters.
	sortedInts := func(n int, lo, hi int64) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = lo + r.Int64N(hi-lo+1)
		}
		v[0], v[n-1] = lo, hi
		slices.Sort(v)
		return v
	}
	small, mid, u32 := sortedInts(90, -128, 127), sortedInts(400, -32768, 32767), sortedInts(400, 0, 1<<32-1)
	bools := make([]bool, 40)
	for i := 25; i < len(bools); i++ {
		bools[i] = true
	}
	ints := []struct {
		what   string
		sorted dtype.Slice
		keys   dtype.Slice
	}{
		{"int64 values into int64 beyond 2^53", dtype.OfInt64(big), near(big)},
		{"uint64 values into uint64 beyond 2^63", mustOf(t, ubig), nearU(ubig)},
		{"int64 values into bools", mustOf(t, bools), near([]int64{0, 1})},
		{"int64 values into int8 with negatives", dtype.Convert(dtype.OfInt64(small), dtype.Int8), near(small)},
		{"int64 values into int16 with negatives", dtype.Convert(dtype.OfInt64(mid), dtype.Int16), near(mid)},
		{"int64 values into uint32 past 2^31", dtype.Convert(dtype.OfInt64(u32), dtype.Uint32), near(u32)},
	}
	for _, c := range ints {
		for _, right := range []bool{false, true} {
			searchInterpreted(t, c.what, c.sorted, c.keys, right, false, rows, cols)
			if Narrow(c.sorted.DType()) {
				searchInterpreted(t, c.what+" held narrow", c.sorted, c.keys, right, true, rows, cols)
			}
		}
	}
	for _, c := range cases {
		keys := make([]float64, rows*cols)
		sv := c.vals.ToFloat64()
		for i := range keys {
			switch r.IntN(5) {
			case 0:
				keys[i] = math.NaN()
			case 1:
				if len(sv) > 0 {
					keys[i] = sv[r.IntN(len(sv))] // ties (and NaNs)
				}
			case 2:
				if len(sv) > 0 && c.vals.DType().IsInteger() {
					keys[i] = sv[r.IntN(len(sv))] * (1 + (r.Float64()-0.5)*1e-15)
				}
			default:
				keys[i] = r.NormFloat64() * 6
				if c.vals.DType().IsInteger() {
					keys[i] = float64(1<<60) * (1 + (r.Float64()-0.5)*1e-3)
				}
			}
		}
		for _, right := range []bool{false, true} {
			searchInterpreted(t, c.what, c.vals, dtype.OfFloat64(keys), right, false, rows, cols)
			if Narrow(c.vals.DType()) {
				searchInterpreted(t, c.what+" held narrow", c.vals, dtype.OfFloat64(keys), right, true, rows, cols)
			}
		}
	}
}

// searchInterpreted plans the search of keys (rows x cols, their dtype the comparisons') in
// sorted, runs it on the CPU executor, lowers it to a fused kernel, interprets that, and
// compares the positions; with narrow, the sorted array (of a dtype Narrow holds) is held in
// its own element size.
func searchInterpreted(t *testing.T, what string, sorted, keys dtype.Slice, right, narrow bool, rows, cols int) {
	t.Helper()
	k := &plan.Kernel{Shape: []int{rows, cols}, Instrs: []plan.Instr{
		{Code: plan.Input, DType: keys.DType(), Slot: 0, Src: []int{rows, cols}, Map: []expr.AxisMap{{Axis: 0, Step: 1}, {Axis: 1, Step: 1}}},
		{Code: plan.Search, DType: expr.Int64, Args: []int{0}, Slot: 1, Sorted: sorted.DType(), Right: right},
	}, Result: 1}
	pt := &plan.Task{Kernel: k, Offset: []int{0, 0}, Shape: []int{rows, cols}, Inputs: []plan.Block{
		{Origin: []int{0, 0}, Shape: []int{rows, cols}, Data: keys},
		{Origin: []int{0}, Shape: []int{sorted.Len()}, Data: sorted},
	}}
	want, err := cpu.Execute(context.Background(), pt)
	if err != nil {
		t.Fatalf("%s: CPU: %v", what, err)
	}
	s, leaves, err := Lower(k)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	gt, err := lowerTask(pt, leaves, s.Leaves(), gatherCache{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	// The leaves' words in the interpreter's memory, read in place; with narrow, the sorted
	// array as a GPU holds a persisted one, in its own element size.
	mem := map[uint64]uint64{}
	gt.Held = make([]HeldInput, len(gt.Inputs))
	for l, words := range gt.Inputs {
		base := uint64(l+1) << 36
		for i, w := range words {
			mem[base+uint64(8*i)] = math.Float64bits(w)
		}
		gt.Held[l] = HeldInput{Ptr: driver.DevicePtr(base), Len: int64(len(words))}
		if l == leaves[1] && narrow {
			for i, w := range EncodeNarrow(DecodeWords(words, sorted.DType())) {
				mem[base+uint64(8*i)] = math.Float64bits(w)
			}
			gt.Held[l].Narrow = true
		}
	}
	s, err = narrowInputs(s, []Task{gt})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if narrow != s.Nodes[1].Narrow {
		t.Fatalf("%s: the search node's Narrow is %v", what, s.Nodes[1].Narrow)
	}
	if err := gt.validate(s); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	const out = 1 << 46
	fusedRun(t, s, []Task{gt}, mem, out)
	got := make([]int64, rows*cols)
	for i := range got {
		got[i] = int64(mem[out+uint64(8*i)])
	}
	w := want.Data.Int64s()
	for i := range got {
		if got[i] != w[i] {
			t.Errorf("%s (right %v): value %v at %d: the kernel's position %d, the CPU's %d", what, right, keys.Slice(i, i+1).Any(), i, got[i], w[i])
			return
		}
	}
}

func mustOf(t *testing.T, v any) dtype.Slice {
	t.Helper()
	s, err := dtype.Of(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
