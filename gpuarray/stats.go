package gpuarray

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// The statistics below are compositions of elementwise ops and the existing reductions, so
// they fuse with the work around them and run on every backend with no executor code.

// Any reports whether any element over axes (all when none are given) is nonzero (NaN
// counts as nonzero); an empty reduction gives false. The result is bool.
// (Array API any)
func (a *Array) Any(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Any)
	}
	return a.Ne(0).Sum(axes...).Gt(0)
}

// All reports whether every element over axes is nonzero; an empty reduction gives true.
// The result is bool. (Array API all)
func (a *Array) All(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).All)
	}
	return a.Eq(0).Sum(axes...).Eq(0)
}

// CountNonzero returns the number of nonzero elements over axes, as int64 values.
func (a *Array) CountNonzero(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).CountNonzero)
	}
	return a.Ne(0).Sum(axes...)
}

// hasNaN reports whether a's dtype can hold NaN.
func (a *Array) hasNaN() bool { return a.DType().IsFloat() || a.DType().IsComplex() }

// noNaN returns a with NaN replaced by v.
func (a *Array) noNaN(v float64) *Array { return Where(IsNaN(a), v, a) }

// count returns the number of non-NaN elements over axes, in a's dtype (a float).
func (a *Array) count(axes []int) *Array {
	return LogicalNot(IsNaN(a)).Sum(axes...).AsType(a.DType())
}

// NaNSum returns the sum over axes with NaN taken as zero (an all-NaN slice sums to 0).
func (a *Array) NaNSum(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).NanSum)
	}
	if !a.hasNaN() {
		return a.Sum(axes...)
	}
	return a.noNaN(0).Sum(axes...)
}

// NaNMean returns the mean of the non-NaN elements over axes; an all-NaN slice gives NaN
// (NumPy warns there). Integers give float64 values, floats keep their dtype.
func (a *Array) NaNMean(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).NanMean)
	}
	if !a.hasNaN() {
		return a.Mean(axes...)
	}
	return a.noNaN(0).Sum(axes...).Div(a.count(axes))
}

// NaNVar returns the variance (ddof 0) of the non-NaN elements over axes, two-pass as
// NumPy's nanvar; an all-NaN slice gives NaN.
func (a *Array) NaNVar(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).NanVar)
	}
	return a.nanVar("NanVar", 0, axes)
}

// NaNStd returns the square root of NanVar.
func (a *Array) NaNStd(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).NanStd)
	}
	return a.NanVar(axes...).Sqrt()
}

// NaNVarDdof returns NanVar with ddof delta degrees of freedom: the sum of squared
// deviations divided by count-ddof, NaN where that is not positive (as NumPy's nanvar).
func (a *Array) NaNVarDdof(ddof float64, axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, func(b *Array, ax ...int) *Array { return b.NanVarDdof(ddof, ax...) })
	}
	return a.nanVar("NanVarDdof", ddof, axes)
}

// NaNStdDdof returns the square root of NanVarDdof.
func (a *Array) NaNStdDdof(ddof float64, axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, func(b *Array, ax ...int) *Array { return b.NanStdDdof(ddof, ax...) })
	}
	return a.NanVarDdof(ddof, axes...).Sqrt()
}

func (a *Array) nanVar(name string, ddof float64, axes []int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if !a.hasNaN() {
		return a.varDdof(name, ddof, axes)
	}
	if a.DType().IsComplex() {
		return errArray(fmt.Errorf("%s of %v values is not supported yet", name, a.DType()))
	}
	ax, err := axisList(name, axes, len(a.Shape()))
	if err != nil {
		return errArray(err)
	}
	slices.Sort(ax)
	mean := ExpandDims(a.NanMean(ax...), ax...)
	d := Where(IsNaN(a), 0, a.Sub(mean))
	dof := a.count(ax).Sub(ddof)
	return Where(dof.Gt(0), d.Mul(d).Sum(ax...).Div(dof), math.NaN())
}

// VarDdof returns the variance over axes with ddof delta degrees of freedom: the sum of
// squared deviations from the mean divided by N-ddof (NumPy's var(ddof=...), the Array
// API's correction), two-pass as NumPy; N-ddof <= 0 divides by zero as NumPy does.
// Integers give float64 values.
func (a *Array) VarDdof(ddof float64, axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, func(b *Array, ax ...int) *Array { return b.VarDdof(ddof, ax...) })
	}
	return a.varDdof("VarDdof", ddof, axes)
}

// StdDdof returns the square root of VarDdof.
func (a *Array) StdDdof(ddof float64, axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, func(b *Array, ax ...int) *Array { return b.StdDdof(ddof, ax...) })
	}
	return a.VarDdof(ddof, axes...).Sqrt()
}

func (a *Array) varDdof(name string, ddof float64, axes []int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if ddof == 0 {
		return a.Var(axes...)
	}
	if a.DType().IsComplex() {
		return errArray(fmt.Errorf("%s of %v values is not supported yet", name, a.DType()))
	}
	x := a
	if !a.DType().IsFloat() {
		x = a.AsType(Float64)
	}
	ax, err := axisList(name, axes, len(a.Shape()))
	if err != nil {
		return errArray(err)
	}
	slices.Sort(ax)
	n := 1
	for _, k := range ax {
		n *= a.Shape()[k]
	}
	d := x.Sub(ExpandDims(x.Mean(ax...), ax...))
	return d.Mul(d).Sum(ax...).Div(max(float64(n)-ddof, 0))
}

// diff returns the n-th discrete difference along axis (negative: from the end): x[1:]-x[:-1]
// applied n times, lazily (slices and a subtraction, fused); bools give x[1:] != x[:-1] as
// NumPy's diff. An axis of at most n elements gives an empty axis. (Array API diff)
func diff(x *Array, n, axis int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	r := len(x.Shape())
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return errArray(fmt.Errorf("Diff: axis %d out of range for shape %s", axis, expr.ShapeString(x.Shape())))
	}
	if n < 0 {
		return errArray(fmt.Errorf("Diff: order n=%d must be non-negative", n))
	}
	for i := 0; i < n; i++ {
		l := x.Shape()[ax]
		if l == 0 {
			break
		}
		hi, lo := make([]Index, ax+1), make([]Index, ax+1)
		for k := range ax {
			hi[k], lo[k] = All(), All()
		}
		hi[ax], lo[ax] = Span(1, l), Span(0, l-1)
		if x.DType() == Bool {
			x = x.Slice(hi...).Ne(x.Slice(lo...))
		} else {
			x = x.Slice(hi...).Sub(x.Slice(lo...))
		}
	}
	return x
}

// NaNMin returns the minimum of the non-NaN elements over axes; an all-NaN slice gives NaN
// (NumPy warns there).
func (a *Array) NaNMin(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).NanMin)
	}
	return a.nanExtreme(axes, math.Inf(1))
}

// NaNMax returns the maximum of the non-NaN elements over axes (see NanMin).
func (a *Array) NaNMax(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).NanMax)
	}
	return a.nanExtreme(axes, math.Inf(-1))
}

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

// NaNArgMin returns the index of the first minimum ignoring NaN along axis (the flat index
// when none is given), as int64 values. NaN is taken as +Inf, as NumPy's nanargmin does;
// where a slice is all NaN the result is -1 (NumPy raises an error; a lazy array cannot).
func (a *Array) NaNArgMin(axis ...int) *Array {
	if a.marked() {
		return a.kept(axis, (*Array).NanArgMin)
	}
	return a.nanArg(axis, math.Inf(1))
}

// NaNArgMax returns the index of the first maximum ignoring NaN (see NanArgMin; NaN is
// taken as -Inf).
func (a *Array) NaNArgMax(axis ...int) *Array {
	if a.marked() {
		return a.kept(axis, (*Array).NanArgMax)
	}
	return a.nanArg(axis, math.Inf(-1))
}

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
