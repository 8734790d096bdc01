package gpuarray

import (
	"fmt"
	"math"
	"slices"
)

// The statistics below are compositions of elementwise ops and the existing reductions, so
// they fuse with the work around them and run on every backend with no executor code.

// Any reports whether any element over axes (all when none are given) is nonzero (NaN
// counts as nonzero); an empty reduction gives false. The result is bool.
// (Array API any)
func (a *Array) Any(axes ...int) *Array { return a.Ne(0).Sum(axes...).Gt(0) }

// All reports whether every element over axes is nonzero; an empty reduction gives true.
// The result is bool. (Array API all)
func (a *Array) All(axes ...int) *Array { return a.Eq(0).Sum(axes...).Eq(0) }

// CountNonzero returns the number of nonzero elements over axes, as int64 values.
func (a *Array) CountNonzero(axes ...int) *Array { return a.Ne(0).Sum(axes...) }

// hasNaN reports whether a's dtype can hold NaN.
func (a *Array) hasNaN() bool { return a.DType().IsFloat() || a.DType().IsComplex() }

// noNaN returns a with NaN replaced by v.
func (a *Array) noNaN(v float64) *Array { return Where(IsNaN(a), v, a) }

// count returns the number of non-NaN elements over axes, in a's dtype (a float).
func (a *Array) count(axes []int) *Array {
	return LogicalNot(IsNaN(a)).Sum(axes...).AsType(a.DType())
}

// NanSum returns the sum over axes with NaN taken as zero (an all-NaN slice sums to 0).
func (a *Array) NanSum(axes ...int) *Array {
	if !a.hasNaN() {
		return a.Sum(axes...)
	}
	return a.noNaN(0).Sum(axes...)
}

// NanMean returns the mean of the non-NaN elements over axes; an all-NaN slice gives NaN
// (NumPy warns there). Integers give float64 values, floats keep their dtype.
func (a *Array) NanMean(axes ...int) *Array {
	if !a.hasNaN() {
		return a.Mean(axes...)
	}
	return a.noNaN(0).Sum(axes...).Div(a.count(axes))
}

// NanVar returns the variance (ddof 0) of the non-NaN elements over axes, two-pass as
// NumPy's nanvar; an all-NaN slice gives NaN.
func (a *Array) NanVar(axes ...int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if !a.hasNaN() {
		return a.Var(axes...)
	}
	if a.DType().IsComplex() {
		return errArray(fmt.Errorf("NanVar of %v values is not supported yet", a.DType()))
	}
	ax, err := axisList("NanVar", axes, len(a.Shape()))
	if err != nil {
		return errArray(err)
	}
	slices.Sort(ax)
	mean := ExpandDims(a.NanMean(ax...), ax...)
	d := Where(IsNaN(a), 0, a.Sub(mean))
	return d.Mul(d).Sum(ax...).Div(a.count(ax))
}

// NanStd returns the square root of NanVar.
func (a *Array) NanStd(axes ...int) *Array { return a.NanVar(axes...).Sqrt() }

// NanMin returns the minimum of the non-NaN elements over axes; an all-NaN slice gives NaN
// (NumPy warns there).
func (a *Array) NanMin(axes ...int) *Array { return a.nanExtreme(axes, math.Inf(1)) }

// NanMax returns the maximum of the non-NaN elements over axes (see NanMin).
func (a *Array) NanMax(axes ...int) *Array { return a.nanExtreme(axes, math.Inf(-1)) }

// nanExtreme is NanMin (fill +Inf) or NanMax (fill -Inf).
func (a *Array) nanExtreme(axes []int, fill float64) *Array {
	x := a
	if a.hasNaN() {
		x = a.noNaN(fill)
	}
	m := x.Min(axes...)
	if fill < 0 {
		m = x.Max(axes...)
	}
	if !a.hasNaN() {
		return m
	}
	return Where(IsNaN(a).All(axes...), math.NaN(), m)
}

// NanArgMin returns the index of the first minimum ignoring NaN along axis (the flat index
// when none is given), as int64 values. NaN is taken as +Inf, as NumPy's nanargmin does;
// where a slice is all NaN the result is -1 (NumPy raises an error; a lazy array cannot).
func (a *Array) NanArgMin(axis ...int) *Array { return a.nanArg(axis, math.Inf(1)) }

// NanArgMax returns the index of the first maximum ignoring NaN (see NanArgMin; NaN is
// taken as -Inf).
func (a *Array) NanArgMax(axis ...int) *Array { return a.nanArg(axis, math.Inf(-1)) }

func (a *Array) nanArg(axis []int, fill float64) *Array {
	if !a.hasNaN() {
		if fill > 0 {
			return a.ArgMin(axis...)
		}
		return a.ArgMax(axis...)
	}
	m := a.noNaN(fill)
	idx := m.ArgMin(axis...)
	if fill < 0 {
		idx = m.ArgMax(axis...)
	}
	return Where(IsNaN(a).All(axis...), -1, idx)
}
