package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"math"
)

// collectLane is collect for integer and complex reductions: task ti's s slice partials at
// words[off*pw…], combined in slice order (pairwise for complex sums, as float sums are).
func collectLane(sp *Spec, res *Result, ti int, words []uint64, off int64, s int) {
	pw := int64(sp.PartialWords())
	w := func(b, j int) uint64 { return words[(off+int64(b))*pw+int64(j)] }
	if sp.AccLane() == ptx.LaneC {
		re, im := make([]float64, s), make([]float64, s)
		for b := range s {
			re[b], im[b] = math.Float64frombits(w(b, 0)), math.Float64frombits(w(b, 1))
		}
		res.Values[ti], res.Imag[ti] = PairwiseSum(re), PairwiseSum(im)
		return
	}
	v, idx := intIdentity(sp), int64(-1)
	for b := range s {
		v, idx = mergeInt(sp.Reduce, sp.UnsignedAcc(), v, idx, int64(w(b, 0)), func() int64 { return int64(w(b, 1)) })
	}
	res.Ints[ti] = v
	if res.Index != nil {
		res.Index[ti] = idx
	}
}

// intIdentity is the value an integer reduction of s starts from.
func intIdentity(s *Spec) int64 {
	switch {
	case s.Reduce == RMin && s.UnsignedAcc():
		return -1
	case s.Reduce == RMin:
		return math.MaxInt64
	case s.Reduce == RMax && !s.UnsignedAcc():
		return math.MinInt64
	}
	return 0
}

// mergeInt merges the integer partial (v2, index i2()) that covers later elements into (v,
// idx), as accMerge does on the device.
func mergeInt(r Reduce, unsigned bool, v, idx, v2 int64, i2 func() int64) (int64, int64) {
	less := func(x, y int64) bool {
		if unsigned {
			return uint64(x) < uint64(y)
		}
		return x < y
	}
	switch r {
	case RSum:
		return v + v2, idx
	case RMin:
		if less(v2, v) {
			return v2, idx
		}
		return v, idx
	case RMax:
		if less(v, v2) {
			return v2, idx
		}
		return v, idx
	}
	j := i2()
	if j < 0 {
		return v, idx
	}
	better := less(v2, v)
	if r == RArgMax {
		better = less(v, v2)
	}
	if idx < 0 || better || v2 == v && j < idx {
		return v2, j
	}
	return v, idx
}

// laneData returns the planner's Data of integer or complex partials (the CPU executor's
// format: int64, uint64 for unsigned values, complex128).
func laneData(s *Spec, ints []int64, re, im []float64) dtype.Slice {
	if s.AccLane() == ptx.LaneC {
		c := make([]complex128, len(re))
		for i := range c {
			c[i] = complex(re[i], im[i])
		}
		return dtype.OfComplex128(c)
	}
	d := dtype.OfInt64(ints)
	if s.UnsignedAcc() {
		d = dtype.Convert(d, dtype.Uint64) // the same bits
	}
	return d
}
