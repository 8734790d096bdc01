package gpuarray

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Quantile returns the q-th quantile (0 <= q <= 1) of x along axis (all of x when none is
// given), exact, with NumPy's default linear interpolation between the two sorted values
// around (n-1)*q (computed as NumPy's lerp does, so results are equal bit for bit). A line holding NaN gives NaN;
// integers give float64 values. The axis is sorted in one chunk (Sort).
func Quantile(x *Array, q float64, axis ...int) *Array {
	return quantiles(x, []float64{q}, axis, "Quantile", false)
}

// Percentile returns Quantile(x, p/100, axis...), 0 <= p <= 100.
func Percentile(x *Array, p float64, axis ...int) *Array {
	return quantiles(x, []float64{p / 100}, axis, "Percentile", false)
}

// Median returns the median of x along axis (all of x when none is given): the middle sorted value, or the mean of the two
// middle ones (NaN where a line holds NaN), as NumPy's median.
func Median(x *Array, axis ...int) *Array { return quantiles(x, nil, axis, "Median", false) }

// MedianAxes returns the median of x over axes (all when none are given), as
// numpy.median(x, axis=axes).
func MedianAxes(x *Array, axes ...int) *Array { return quantiles(x, nil, axes, "MedianAxes", false) }

// Quantiles returns the quantiles qs (each in [0, 1]) of x over axes (all when none are
// given), as numpy.quantile(x, qs, axis=axes): a first axis of len(qs), then x's axes
// without the reduced ones (kept with length 1 under KeepDims). The reduced axes are sorted
// once, as one axis, for every q.
func Quantiles(x *Array, qs []float64, axes ...int) *Array {
	return quantiles(x, slices.Clone(qs), axes, "Quantiles", true)
}

// Percentiles returns Quantiles(x, ps/100, axes...), each p in [0, 100].
func Percentiles(x *Array, ps []float64, axes ...int) *Array {
	qs := make([]float64, len(ps))
	for i, p := range ps {
		qs[i] = p / 100
	}
	return quantiles(x, qs, axes, "Percentiles", true)
}

// quantiles computes the quantiles qs (nil: the median) of x over axes; with several, the
// results stack on a new first axis.
func quantiles(x *Array, qs []float64, axes []int, name string, several bool) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	for _, q := range qs {
		if !(q >= 0 && q <= 1) {
			return errArray(fmt.Errorf("%s: quantile %v out of [0, 1]", name, q))
		}
	}
	if several && len(qs) == 0 {
		return errArray(fmt.Errorf("%s: no quantiles given", name))
	}
	shape := x.n.Shape
	r := len(shape)
	ax, err := axisList(name, axes, r)
	if err != nil {
		return errArray(fmt.Errorf("%w (shape %s)", err, expr.ShapeString(shape)))
	}
	if len(ax) == 0 {
		return errArray(fmt.Errorf("%s: a 0-d array has no axis", name))
	}
	slices.Sort(ax)
	if x.DType().IsComplex() {
		return errArray(fmt.Errorf("%s of %v values is not supported", name, x.DType()))
	}
	keep := x.marked()
	y := &Array{n: x.n}
	// The reduced axes become one: the single axis in place, or several moved last and joined.
	along := ax[0]
	if len(ax) > 1 {
		var perm, outShape []int
		for k := range r {
			if !slices.Contains(ax, k) {
				perm = append(perm, k)
				outShape = append(outShape, shape[k])
			}
		}
		perm = append(perm, ax...)
		n := 1
		for _, k := range ax {
			n *= shape[k]
		}
		y = y.Transpose(perm...).Reshape(append(outShape, n)...)
		along = len(outShape)
	}
	n := y.n.Shape[along]
	if n == 0 {
		return errArray(fmt.Errorf("%s of an empty axis", name))
	}
	// Only the sorted positions read below come out of the sort (expr.Call.Keep): for each
	// quantile the two around it, then the last one (NaN sorts last).
	median := qs == nil
	if median {
		qs = []float64{0.5}
	}
	var keepPos []int
	ts := make([]float64, len(qs))
	for i, q := range qs {
		lo, hi := n/2-1+n%2, n/2
		if !median {
			v := float64(n-1) * q
			lo = int(math.Floor(v))
			hi, ts[i] = min(lo+1, n-1), v-float64(lo)
		}
		keepPos = append(keepPos, lo, hi)
	}
	keepPos = append(keepPos, n-1)
	s := sortCall(y, along, false, name, []SortOption{keepSorted(keepPos)})
	if !s.DType().IsFloat() {
		// Integers (and bools) sort as themselves and only the kept values become float64
		// (on a GPU in the fused kernel that reads them): the conversion keeps the order, so
		// this is NumPy's convert-then-sort, and the sort reads the data as it is.
		s = s.AsType(Float64)
	}
	at := func(i int) *Array {
		idx := make([]Index, along+1)
		for k := range along {
			idx[k] = All()
		}
		idx[along] = At(i)
		return s.Slice(idx...)
	}
	nan := IsNaN(at(len(keepPos) - 1))
	one := func(i int) *Array {
		a, b, t := at(2*i), at(2*i+1), ts[i]
		var res *Array
		switch {
		case median && n%2 == 1:
			res = a
		case median:
			res = a.Add(b).Div(2)
		case t >= 0.5:
			res = b.Sub(b.Sub(a).Mul(1 - t))
		default:
			res = a.Add(b.Sub(a).Mul(t))
		}
		res = Where(nan, math.NaN(), res)
		if keep {
			res = keepAxes(res, ax, r)
		}
		return res
	}
	if !several {
		return one(0)
	}
	out := make([]*Array, len(qs))
	for i := range qs {
		out[i] = one(i)
	}
	return Stack(out...)
}
