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
// it on the host (ptxinterp_test.go), and finds the CPU executor's positions: sorted float64
// arrays with ties and trailing NaNs, all NaNs, one value and none, int64 and uint64 arrays
// beyond 2^53 (their words converted as the CPU converts them), both sides, NaN keys included.
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
		ubig[i] = uint64(v) << 3
	}
	cases := []sorted{
		{"float64 with ties and NaNs", floats(1000, 37)},
		{"float64 without NaNs", floats(513, 0)},
		{"all NaN", floats(5, 5)},
		{"one value", floats(1, 0)},
		{"empty", dtype.OfFloat64(nil)},
		{"int64 beyond 2^53", dtype.OfInt64(big)},
		{"uint64 beyond 2^63", mustOf(t, ubig)},
		{"float32", dtype.Convert(floats(200, 3), dtype.Float32)},
	}
	const rows, cols = 3, 700
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
			k := &plan.Kernel{Shape: []int{rows, cols}, Instrs: []plan.Instr{
				{Code: plan.Input, DType: expr.Float64, Slot: 0, Src: []int{rows, cols}, Map: []expr.AxisMap{{Axis: 0, Step: 1}, {Axis: 1, Step: 1}}},
				{Code: plan.Search, DType: expr.Int64, Args: []int{0}, Slot: 1, Sorted: c.vals.DType(), Right: right},
			}, Result: 1}
			pt := &plan.Task{Kernel: k, Offset: []int{0, 0}, Shape: []int{rows, cols}, Inputs: []plan.Block{
				{Origin: []int{0, 0}, Shape: []int{rows, cols}, Data: dtype.OfFloat64(keys)},
				{Origin: []int{0}, Shape: []int{c.vals.Len()}, Data: c.vals},
			}}
			want, err := cpu.Execute(context.Background(), pt)
			if err != nil {
				t.Fatalf("%s: CPU: %v", c.what, err)
			}
			s, leaves, err := Lower(k)
			if err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			gt, err := lowerTask(pt, leaves, s.Leaves(), gatherCache{})
			if err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			// The leaves' words in the interpreter's memory, read in place.
			mem := map[uint64]uint64{}
			gt.Held = make([]HeldInput, len(gt.Inputs))
			for l, words := range gt.Inputs {
				base := uint64(l+1) << 36
				for i, w := range words {
					mem[base+uint64(8*i)] = math.Float64bits(w)
				}
				gt.Held[l] = HeldInput{Ptr: driver.DevicePtr(base), Len: int64(len(words))}
			}
			if err := gt.validate(s); err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			const out = 1 << 46
			fusedRun(t, s, []Task{gt}, mem, out)
			got := make([]int64, rows*cols)
			for i := range got {
				got[i] = int64(mem[out+uint64(8*i)])
			}
			if w := want.Data.Int64s(); !slices.Equal(got, w) {
				for i := range got {
					if got[i] != w[i] {
						t.Errorf("%s (right %v): key %v at %d: the kernel's position %d, the CPU's %d", c.what, right, keys[i], i, got[i], w[i])
						break
					}
				}
			}
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
