package gpuarray

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// CumulativeSum returns the running sums of x along axis (negative: from the end), with a
// leading 0 when includeInitial. The axis is brought into one chunk and summed in order, as
// NumPy's cumsum: bools and signed integers give int64, unsigned ones uint64, floats and
// complex numbers keep their dtype. Integers are scanned as int64 or uint64 and wrap around as
// NumPy's. (Array API cumulative_sum)
func CumulativeSum(x *Array, axis int, includeInitial bool) *Array {
	return cumulative(x, expr.FnCumSum, "CumulativeSum", axis, includeInitial)
}

// CumulativeProd returns the running products of x along axis, with a leading 1 when
// includeInitial (dtypes as CumulativeSum). (Array API cumulative_prod)
func CumulativeProd(x *Array, axis int, includeInitial bool) *Array {
	return cumulative(x, expr.FnCumProd, "CumulativeProd", axis, includeInitial)
}

// Prod returns the product over axes (all when none are given), multiplied in order along
// each axis as NumPy's prod; the product of nothing is 1. Dtypes as CumulativeSum.
func (a *Array) Prod(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Prod)
	}
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	ax, err := axisList("Prod", axes, len(a.Shape()))
	if err != nil {
		return errArray(err)
	}
	dt, err := expr.ReduceDType(expr.Sum, a.DType())
	if err != nil {
		return errorf("Prod", err)
	}
	if len(ax) == 0 { // a 0-d array
		return a.AsType(dt)
	}
	for _, k := range ax {
		if a.Shape()[k] == 0 { // nothing to multiply: ones of the reduced shape
			return a.Sum(axes...).Mul(0).Add(1).AsType(dt)
		}
	}
	slices.Sort(ax)
	n := a.n
	for i := len(ax) - 1; i >= 0; i-- {
		if n, err = scanAxis(n, expr.FnProd, ax[i], dt); err != nil {
			return errorf("Prod", err)
		}
	}
	return (&Array{n: n}).Squeeze(ax...)
}

func cumulative(x *Array, fn expr.CallFn, name string, axis int, includeInitial bool) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	r := len(x.Shape())
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return errArray(fmt.Errorf("%s: axis %d out of range for shape %s", name, axis, expr.ShapeString(x.Shape())))
	}
	dt, err := expr.ReduceDType(expr.Sum, x.DType())
	if err != nil {
		return errorf(name, err)
	}
	res := x.AsType(dt) // an empty axis has nothing to scan
	if x.Shape()[ax] > 0 {
		n, err := scanAxis(x.n, fn, ax, dt)
		if err != nil {
			return errorf(name, err)
		}
		res = &Array{n: n}
	}
	if !includeInitial {
		return res
	}
	shape := slices.Clone(x.Shape())
	shape[ax] = 1
	chunks := slices.Clone(res.Chunks())
	chunks[ax] = []int{1}
	v := 0.0
	if fn == expr.FnCumProd {
		v = 1
	}
	first := Full(v, Shape(shape...), ChunkSizes(chunks...), WithDType(dt))
	return ConcatAxis(ax, first, res)
}

// scanAxis applies a scan call along axis ax of a (rechunked to one chunk there).
func scanAxis(a *expr.Node, fn expr.CallFn, ax int, dt expr.DType) (*expr.Node, error) {
	if len(a.Chunks[ax]) != 1 {
		chunks := slices.Clone(a.Chunks)
		chunks[ax] = []int{a.Shape[ax]}
		var err error
		if a, err = expr.NewRechunk(a, chunks); err != nil {
			return nil, err
		}
	}
	return expr.NewCall(a, expr.Call{Fn: fn, Axis: ax, N: a.Shape[ax]}, dt)
}
