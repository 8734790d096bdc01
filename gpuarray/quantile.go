package gpuarray

import (
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Quantile returns the q-th quantile (0 <= q <= 1) of x along axis, exact, with NumPy's
// default linear interpolation between the two sorted values around (n-1)*q (computed as
// NumPy's lerp does, so results are equal bit for bit). A line holding NaN gives NaN;
// integers give float64 values. The axis is sorted in one chunk (Sort).
func Quantile(x *Array, q float64, axis int) *Array { return quantile(x, q, axis, "Quantile") }

// Percentile returns Quantile(x, p/100, axis), 0 <= p <= 100.
func Percentile(x *Array, p float64, axis int) *Array {
	return quantile(x, p/100, axis, "Percentile")
}

// Median returns the median of x along axis: the middle sorted value, or the mean of the two
// middle ones (NaN where a line holds NaN), as NumPy's median.
func Median(x *Array, axis int) *Array { return quantile(x, -1, axis, "Median") }

func quantile(x *Array, q float64, axis int, name string) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	if !(q >= 0 && q <= 1) && name != "Median" {
		return errArray(fmt.Errorf("%s: quantile %v out of [0, 1]", name, q))
	}
	r := len(x.Shape())
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return errArray(fmt.Errorf("%s: axis %d out of range for shape %s", name, axis, expr.ShapeString(x.Shape())))
	}
	n := x.Shape()[ax]
	if n == 0 {
		return errArray(fmt.Errorf("%s of an empty axis %d", name, axis))
	}
	if x.DType().IsComplex() {
		return errArray(fmt.Errorf("%s of %v values is not supported", name, x.DType()))
	}
	if !x.DType().IsFloat() {
		x = x.AsType(Float64)
	}
	// Only the sorted positions read below come out of the sort: lo, hi and the last one.
	lo, hi, t := n/2-1+n%2, n/2, 0.5
	if name != "Median" {
		v := float64(n-1) * q
		lo = int(math.Floor(v))
		hi, t = min(lo+1, n-1), v-float64(lo)
	}
	s := sortCall(x, ax, false, name, []SortOption{keepSorted([]int{lo, hi, n - 1})})
	at := func(i int) *Array {
		idx := make([]Index, ax+1)
		for k := range ax {
			idx[k] = All()
		}
		idx[ax] = At(i)
		return s.Slice(idx...)
	}
	var res *Array
	a, b := at(0), at(1)
	switch {
	case name == "Median" && n%2 == 1:
		res = a
	case name == "Median":
		res = a.Add(b).Div(2)
	case t >= 0.5:
		res = b.Sub(b.Sub(a).Mul(1 - t))
	default:
		res = a.Add(b.Sub(a).Mul(t))
	}
	return Where(IsNaN(at(2)), math.NaN(), res) // NaN sorts last
}
