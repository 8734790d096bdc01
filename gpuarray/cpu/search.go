package cpu

import (
	"cmp"
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// searchFunc compiles a Search instruction: for each value of key, a binary search of the
// ascending sorted array the task's block at in.Slot holds, compared in key's dtype (see
// plan.SearchDType). In float64, NaN sorts after every number (numpy.searchsorted): the first
// position whose value is NaN or >= the key (> with in.Right); a NaN key goes before the first
// NaN, or with Right after every value. In int64 or uint64 the comparisons are exact. The
// GPU's search (cuda NSearch) finds the same positions.
func searchFunc(t *plan.Task, in *plan.Instr, o, key *operand) (func(int), error) {
	if in.Slot < 0 || in.Slot >= len(t.Inputs) {
		return nil, fmt.Errorf("input slot %d of %d", in.Slot, len(t.Inputs))
	}
	if o.lane != laneI {
		return nil, fmt.Errorf("a search giving %v (int64)", o.dt)
	}
	b := &t.Inputs[in.Slot]
	if len(b.Shape) != 1 || int64(b.Data.Len()) != int64(b.Shape[0]) {
		return nil, fmt.Errorf("a sorted block of shape %v with %d values", b.Shape, b.Data.Len())
	}
	right := in.Right
	switch key.dt {
	case dtype.Int64:
		sorted := dtype.Convert(dtype.Convert(b.Data, in.Sorted), dtype.Int64).Int64s()
		return func(n int) {
			for i, v := range key.ivec[:n] {
				o.ivec[i] = int64(position(sorted, v, right))
			}
		}, nil
	case dtype.Uint64:
		sorted := dtype.Convert(dtype.Convert(b.Data, in.Sorted), dtype.Uint64).Uint64s()
		return func(n int) {
			for i, w := range key.ivec[:n] {
				o.ivec[i] = int64(position(sorted, uint64(w), right))
			}
		}, nil
	case dtype.Float64:
	default:
		return nil, fmt.Errorf("a search for %v values (the planner casts them to float64, int64 or uint64)", key.dt)
	}
	var sorted []float64
	if b.Data.DType() == dtype.Float64 {
		sorted = b.Data.Float64s() // read in place
	} else {
		sorted = dtype.Convert(b.Data, in.Sorted).ToFloat64()
	}
	nums := len(sorted)
	for nums > 0 && math.IsNaN(sorted[nums-1]) { // NaNs sort last
		nums--
	}
	nan := int64(nums)
	if right {
		nan = int64(len(sorted))
	}
	sorted = sorted[:nums]
	return func(n int) {
		for i, v := range key.vec[:n] {
			if math.IsNaN(v) {
				o.ivec[i] = nan
			} else {
				o.ivec[i] = int64(position(sorted, v, right))
			}
		}
	}, nil
}

// position returns how many values of the ascending s are below v (with right: not above
// it), which is sort.Search's first index of a value >= v (> v). The loop halves a window of
// a length sequence that v does not change, and moves it by an amount computed from the
// comparison's bit, with no branch: a branch per step, mispredicted half the time on random
// values, cost more than the loads (BenchmarkSearch). s holds no NaN.
func position[T cmp.Ordered](s []T, v T, right bool) int {
	if len(s) == 0 {
		return 0
	}
	base, n := 0, len(s)
	if right {
		for n > 1 {
			half := n / 2
			base += half & -int(b2i(s[base+half] <= v))
			n -= half
		}
		return base + int(b2i(s[base] <= v))
	}
	for n > 1 {
		half := n / 2
		base += half & -int(b2i(s[base+half] < v))
		n -= half
	}
	return base + int(b2i(s[base] < v))
}
