package gpuarray

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// operand turns an argument of an operation into a node: an *Array, or a Go number, which
// takes the dtype like (as NumPy treats Python scalars).
func operand(v any, like expr.DType) (*expr.Node, error) {
	var f float64
	switch x := v.(type) {
	case *Array:
		if err := x.Err(); err != nil {
			return nil, err
		}
		return x.n, nil
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint64:
		f = float64(x)
	case uint32:
		f = float64(x)
	case bool:
		if x {
			f = 1
		}
	default:
		return nil, fmt.Errorf("operand of type %T: want *gpuarray.Array or a number", v)
	}
	return expr.NewConst(f, like, nil, nil)
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

// Add returns a + v (v is an array or a number; shapes broadcast as in NumPy).
func (a *Array) Add(v any) *Array { return a.binary(expr.OpAdd, v) }

// Sub returns a - v.
func (a *Array) Sub(v any) *Array { return a.binary(expr.OpSub, v) }

// Mul returns a * v.
func (a *Array) Mul(v any) *Array { return a.binary(expr.OpMul, v) }

// Div returns a / v.
func (a *Array) Div(v any) *Array { return a.binary(expr.OpDiv, v) }

// Pow returns a raised to the power v.
func (a *Array) Pow(v any) *Array { return a.binary(expr.OpPow, v) }

// Maximum returns the elementwise maximum of a and v (NaN propagates).
func (a *Array) Maximum(v any) *Array { return a.binary(expr.OpMax, v) }

// Minimum returns the elementwise minimum of a and v (NaN propagates).
func (a *Array) Minimum(v any) *Array { return a.binary(expr.OpMin, v) }

// Eq returns 1 where a == v and 0 elsewhere, in a's dtype.
func (a *Array) Eq(v any) *Array { return a.binary(expr.OpEq, v) }

// Ne returns 1 where a != v.
func (a *Array) Ne(v any) *Array { return a.binary(expr.OpNe, v) }

// Lt returns 1 where a < v.
func (a *Array) Lt(v any) *Array { return a.binary(expr.OpLt, v) }

// Le returns 1 where a <= v.
func (a *Array) Le(v any) *Array { return a.binary(expr.OpLe, v) }

// Gt returns 1 where a > v.
func (a *Array) Gt(v any) *Array { return a.binary(expr.OpGt, v) }

// Ge returns 1 where a >= v.
func (a *Array) Ge(v any) *Array { return a.binary(expr.OpGe, v) }

// Neg returns -a.
func (a *Array) Neg() *Array { return a.unary(expr.OpNeg) }

// Abs returns |a|.
func (a *Array) Abs() *Array { return a.unary(expr.OpAbs) }

// Exp returns e**a.
func (a *Array) Exp() *Array { return a.unary(expr.OpExp) }

// Log returns the natural logarithm of a.
func (a *Array) Log() *Array { return a.unary(expr.OpLog) }

// Sqrt returns the square root of a.
func (a *Array) Sqrt() *Array { return a.unary(expr.OpSqrt) }

// Sin returns the sine of a.
func (a *Array) Sin() *Array { return a.unary(expr.OpSin) }

// Cos returns the cosine of a.
func (a *Array) Cos() *Array { return a.unary(expr.OpCos) }

// Tanh returns the hyperbolic tangent of a.
func (a *Array) Tanh() *Array { return a.unary(expr.OpTanh) }

// AsType returns a converted to dt.
func (a *Array) AsType(dt DType) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if dt != Float64 && dt != Float32 {
		return errArray(fmt.Errorf("AsType: unknown dtype %d", dt))
	}
	return &Array{n: expr.NewCast(a.n, expr.DType(dt))}
}

// Where returns x where cond is nonzero and y elsewhere; each is an array or a number, and
// shapes broadcast.
func Where(cond, x, y any) *Array {
	like := expr.Float64
	for _, v := range []any{x, y, cond} {
		if a, ok := v.(*Array); ok && a.Err() == nil {
			like = a.n.DType
			break
		}
	}
	ns := make([]*expr.Node, 3)
	for i, v := range []any{cond, x, y} {
		n, err := operand(v, like)
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
	return wrap(expr.NewReduce(a.n, r, axes))
}

// Sum returns the sum over axes (all axes when none are given).
func (a *Array) Sum(axes ...int) *Array { return a.reduce(expr.Sum, axes) }

// Mean returns the mean over axes.
func (a *Array) Mean(axes ...int) *Array { return a.reduce(expr.Mean, axes) }

// Var returns the variance (ddof 0) over axes.
func (a *Array) Var(axes ...int) *Array { return a.reduce(expr.Var, axes) }

// Std returns the standard deviation (ddof 0) over axes.
func (a *Array) Std(axes ...int) *Array { return a.reduce(expr.Std, axes) }

// Min returns the minimum over axes (NaN propagates).
func (a *Array) Min(axes ...int) *Array { return a.reduce(expr.Min, axes) }

// Max returns the maximum over axes (NaN propagates).
func (a *Array) Max(axes ...int) *Array { return a.reduce(expr.Max, axes) }

// ArgMin returns the index of the first minimum along axis, or the flat index over the whole
// array when no axis is given. Indices are float64 values.
func (a *Array) ArgMin(axis ...int) *Array { return a.reduce(expr.ArgMin, axis) }

// ArgMax returns the index of the first maximum (see ArgMin).
func (a *Array) ArgMax(axis ...int) *Array { return a.reduce(expr.ArgMax, axis) }
