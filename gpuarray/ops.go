package gpuarray

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// scalarKind returns the kind of a Go number and its value as a float64.
func scalarKind(v any) (dtype.Kind, float64, bool) {
	switch x := v.(type) {
	case float64:
		return dtype.KindFloat, x, true
	case float32:
		return dtype.KindFloat, float64(x), true
	case int:
		return dtype.KindInt, float64(x), true
	case int64:
		return dtype.KindInt, float64(x), true
	case int32:
		return dtype.KindInt, float64(x), true
	case uint:
		return dtype.KindInt, float64(x), true
	case uint64:
		return dtype.KindInt, float64(x), true
	case uint32:
		return dtype.KindInt, float64(x), true
	case uint8:
		return dtype.KindInt, float64(x), true
	case bool:
		if x {
			return dtype.KindBool, 1, true
		}
		return dtype.KindBool, 0, true
	}
	return 0, 0, false
}

// operand turns an argument of an operation into a node: an *Array, or a Go number, which is
// a weak scalar as NumPy 2 treats Python's (NEP 50): it takes the dtype like unless its kind
// is higher (a float with an integer array gives float64, an int with a bool array int64).
func operand(v any, like expr.DType) (*expr.Node, error) {
	if x, ok := v.(*Array); ok {
		if err := x.Err(); err != nil {
			return nil, err
		}
		return x.n, nil
	}
	k, f, ok := scalarKind(v)
	if !ok {
		return nil, fmt.Errorf("operand of type %T: want *gpuarray.Array or a number", v)
	}
	dt := dtype.PromoteWeak(like, k)
	if k == dtype.KindInt && dt.IsInteger() {
		// As NumPy 2: a Go integer that the array's dtype cannot hold is an error, not a wrap.
		if c := dtype.Convert(dtype.OfFloat64([]float64{f}), dt); c.Float(0) != f {
			return nil, fmt.Errorf("the Go integer %v is out of bounds for %v", v, dt)
		}
	}
	return expr.NewConst(f, dt, nil, nil)
}

func (a *Array) unary(op expr.Op) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	return wrap(expr.NewUnary(op, a.n))
}

func (a *Array) binary(op expr.Op, v any) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	b, err := operand(v, a.n.DType)
	if err != nil {
		return errArray(fmt.Errorf("%v: %w", op, err))
	}
	return wrap(expr.NewBinary(op, a.n, b))
}

// AsType returns a converted to dt by NumPy's astype rules: integers wrap to the width,
// floats truncate toward zero (NaN and out-of-range values as NumPy gives them on x86-64),
// complex numbers keep their real part, and anything nonzero is true.
func (a *Array) AsType(dt DType) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if !dt.Valid() {
		return errArray(fmt.Errorf("AsType: unknown dtype %d", dt))
	}
	return &Array{n: expr.NewCast(a.n, dt)}
}

// Where returns x where cond is true (nonzero) and y elsewhere; each is an array or a
// number, and shapes broadcast. Numbers are weak scalars (see operand); two numbers give
// int64 for Go ints and float64 for Go floats.
func Where(cond, x, y any) *Array {
	like, found := expr.Float64, false
	for _, v := range []any{x, y} {
		if a, ok := v.(*Array); ok && a.Err() == nil {
			if !found {
				like, found = a.n.DType, true
			} else {
				like = dtype.Promote(like, a.n.DType)
			}
		}
	}
	if !found { // two numbers: NumPy's default types for their kinds
		like = expr.Bool
		for _, v := range []any{x, y} {
			if k, _, ok := scalarKind(v); ok {
				like = dtype.PromoteWeak(like, k)
			}
		}
	}
	ns := make([]*expr.Node, 3)
	for i, v := range []any{cond, x, y} {
		l := like
		if i == 0 {
			l = expr.Bool
		}
		n, err := operand(v, l)
		if err != nil {
			return errArray(fmt.Errorf("Where: %w", err))
		}
		ns[i] = n
	}
	return wrap(expr.NewWhere(ns[0], ns[1], ns[2]))
}

// Index selects along one axis in Slice; make one with All, At, Every, Span, SpanStep or From.
type Index struct {
	ix  expr.Index
	arr *Array // Indices: an integer array
}

// All selects a whole axis.
func All() Index { return Index{ix: expr.Index{Step: 1}} }

// At selects position i (negative counts from the end) and drops the axis.
func At(i int) Index { return Index{ix: expr.Index{At: true, Start: i}} }

// Every selects every step-th element, like [::step]; a negative step walks backwards.
func Every(step int) Index { return Index{ix: expr.Index{Step: step}} }

// Span selects [start:stop] (negative values count from the end).
func Span(start, stop int) Index {
	return Index{ix: expr.Index{Start: start, Stop: stop, Step: 1, HasStart: true, HasStop: true}}
}

// SpanStep selects [start:stop:step].
func SpanStep(start, stop, step int) Index {
	return Index{ix: expr.Index{Start: start, Stop: stop, Step: step, HasStart: true, HasStop: true}}
}

// From selects [start:].
func From(start int) Index { return Index{ix: expr.Index{Start: start, Step: 1, HasStart: true}} }

// Slice indexes a with one Index per leading axis, like NumPy basic indexing; axes not given
// are kept whole. Chunk boundaries follow the selected elements.
func (a *Array) Slice(idx ...Index) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	ix := make([]expr.Index, len(idx))
	for i, x := range idx {
		if x.arr != nil {
			return a.sliceWithIndices(idx)
		}
		ix[i] = x.ix
	}
	return wrap(expr.NewSlice(a.n, ix))
}

// Transpose permutes the axes: output axis k is input axis axes[k]; no axes reverses them.
func (a *Array) Transpose(axes ...int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	return wrap(expr.NewTranspose(a.n, axes))
}

// T returns a with its axes reversed.
func (a *Array) T() *Array { return a.Transpose() }

// Rechunk returns a with chunks of the given size per axis, as dask: -1 takes a whole axis,
// and one size applies to every axis. It moves no data by itself: the chunks decide how later
// work is split into tasks.
func (a *Array) Rechunk(sizes ...int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	shape := a.n.Shape
	if len(sizes) == 1 && len(shape) != 1 {
		sizes = slices.Repeat(sizes, len(shape))
	} else {
		sizes = slices.Clone(sizes)
	}
	for k, c := range sizes {
		if c == -1 && k < len(shape) {
			sizes[k] = max(shape[k], 1)
		}
	}
	c, err := expr.RegularChunks(shape, sizes)
	if err != nil {
		return errArray(fmt.Errorf("rechunk: %w", err))
	}
	return wrap(expr.NewRechunk(a.n, c))
}

func (a *Array) reduce(r expr.Red, axes []int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if m, ok := maskedReduce(a, r, axes); ok {
		return m
	}
	return wrap(expr.NewReduce(a.n, r, axes))
}

// Sum returns the sum over axes (all axes when none are given).
func (a *Array) Sum(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Sum)
	}
	return a.reduce(expr.Sum, axes)
}

// Mean returns the mean over axes.
func (a *Array) Mean(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Mean)
	}
	return a.reduce(expr.Mean, axes)
}

// Var returns the variance (ddof 0) over axes.
func (a *Array) Var(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Var)
	}
	return a.reduce(expr.Var, axes)
}

// Std returns the standard deviation (ddof 0) over axes.
func (a *Array) Std(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Std)
	}
	return a.reduce(expr.Std, axes)
}

// Min returns the minimum over axes (NaN propagates).
func (a *Array) Min(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Min)
	}
	return a.reduce(expr.Min, axes)
}

// Max returns the maximum over axes (NaN propagates).
func (a *Array) Max(axes ...int) *Array {
	if a.marked() {
		return a.kept(axes, (*Array).Max)
	}
	return a.reduce(expr.Max, axes)
}

// ArgMin returns the index of the first minimum along axis, or the flat index over the whole
// array when no axis is given. Indices are int64 values.
func (a *Array) ArgMin(axis ...int) *Array {
	if a.marked() {
		return a.kept(axis, (*Array).ArgMin)
	}
	return a.reduce(expr.ArgMin, axis)
}

// ArgMax returns the index of the first maximum (see ArgMin).
func (a *Array) ArgMax(axis ...int) *Array {
	if a.marked() {
		return a.kept(axis, (*Array).ArgMax)
	}
	return a.reduce(expr.ArgMax, axis)
}

// operands turns arguments into nodes: arrays as they are, Go numbers as weak scalars of the
// arrays' promoted dtype (NumPy's default dtype of their kind when all are numbers).
func operands(vs ...any) ([]*expr.Node, error) {
	like, found := expr.Bool, false
	for _, v := range vs {
		if a, ok := v.(*Array); ok {
			if err := a.Err(); err != nil {
				return nil, err
			}
			if !found {
				like, found = a.n.DType, true
			} else {
				like = dtype.Promote(like, a.n.DType)
			}
		}
	}
	if !found {
		for _, v := range vs {
			if k, _, ok := scalarKind(v); ok {
				like = dtype.PromoteWeak(like, k)
			}
		}
	}
	ns := make([]*expr.Node, len(vs))
	for i, v := range vs {
		n, err := operand(v, like)
		if err != nil {
			return nil, err
		}
		ns[i] = n
	}
	return ns, nil
}

// unaryOf applies a one-operand op of the table to an array or a number.
func unaryOf(op expr.Op, x any) *Array {
	ns, err := operands(x)
	if err != nil {
		return errArray(fmt.Errorf("%v: %w", op, err))
	}
	return wrap(expr.NewUnary(op, ns[0]))
}

// binaryOf applies a two-operand op of the table; shapes broadcast.
func binaryOf(op expr.Op, x, y any) *Array {
	ns, err := operands(x, y)
	if err != nil {
		return errArray(fmt.Errorf("%v: %w", op, err))
	}
	return wrap(expr.NewBinary(op, ns[0], ns[1]))
}

// Clip returns x limited to [lo, hi]: Minimum(Maximum(x, lo), hi), so NaN propagates and
// hi wins where lo > hi, as in NumPy (Array API clip).
func Clip(x, lo, hi any) *Array {
	ns, err := operands(x, lo, hi)
	if err != nil {
		return errArray(fmt.Errorf("clip: %w", err))
	}
	m, err := expr.NewBinary(expr.OpMax, ns[0], ns[1])
	if err != nil {
		return errArray(fmt.Errorf("clip: %w", err))
	}
	return wrap(expr.NewBinary(expr.OpMin, m, ns[2]))
}

// Clip is the package function Clip of a.
func (a *Array) Clip(lo, hi any) *Array { return Clip(a, lo, hi) }
