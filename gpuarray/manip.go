package gpuarray

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Manipulation functions of the Array API (reshape, join, split, flip, roll, tile, repeat,
// broadcast, move axes). They are lazy like every operation: they build views and joins that
// the planner fuses into the chunk kernels (see gpuarray/plan), so none of them copies data
// by itself, except a reshape of a slice, a transpose or a broadcast, whose operand is
// computed first (NumPy copies those too).

func firstErr(xs []*Array) error {
	for _, x := range xs {
		if err := x.Err(); err != nil {
			return err
		}
	}
	return nil
}

func nodes(xs []*Array) []*expr.Node {
	ns := make([]*expr.Node, len(xs))
	for i, x := range xs {
		ns[i] = x.n
	}
	return ns
}

func errorf(what string, err error) *Array { return errArray(fmt.Errorf("%s: %w", what, err)) }

// Reshape returns a with a new shape holding the same elements in row-major order; one length
// may be -1 and is then inferred. Chunks follow dask's rule (axes kept keep their chunks);
// a reshape of a computed array or of an elementwise expression reads the same values with
// no copy.
func (a *Array) Reshape(shape ...int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if expr.HasUnknown(a.n.Shape) {
		return errArray(expr.ErrUnknown("Reshape", a.n.Shape))
	}
	s, err := expr.ResolveShape(a.Size(), shape)
	if err != nil {
		return errArray(fmt.Errorf("Reshape of shape %s: %w", expr.ShapeString(a.n.Shape), err))
	}
	return wrap(expr.NewReshape(a.n, s, nil))
}

// Reshape returns x.Reshape(shape...).
func Reshape(x *Array, shape ...int) *Array { return x.Reshape(shape...) }

// Ravel returns a as a 1-d array.
func (a *Array) Ravel() *Array { return a.Reshape(-1) }

// Ravel returns x.Ravel().
func Ravel(x *Array) *Array { return x.Ravel() }

// Concat joins arrays along their first axis (see ConcatAxis).
func Concat(xs ...*Array) *Array { return ConcatAxis(0, xs...) }

// ConcatAxis joins arrays along axis (negative counts from the end); the other axes must
// agree. Each output chunk is one input's chunk: nothing is copied into a joined buffer.
func ConcatAxis(axis int, xs ...*Array) *Array {
	if err := firstErr(xs); err != nil {
		return errArray(err)
	}
	n, err := expr.NewConcat(nodes(xs), axis)
	if err != nil {
		return errorf("Concat", err)
	}
	return &Array{n: n}
}

// Stack joins arrays of one shape along a new first axis (see StackAxis).
func Stack(xs ...*Array) *Array { return StackAxis(0, xs...) }

// StackAxis joins arrays of one shape along a new axis at position axis of the result.
func StackAxis(axis int, xs ...*Array) *Array {
	if err := firstErr(xs); err != nil {
		return errArray(err)
	}
	if len(xs) == 0 {
		return errArray(fmt.Errorf("Stack: no arrays"))
	}
	ns := make([]*expr.Node, len(xs))
	for i, x := range xs {
		if !slices.Equal(x.n.Shape, xs[0].n.Shape) {
			return errArray(fmt.Errorf("Stack: array %d has shape %s, array 0 has %s; all must agree", i, expr.ShapeString(x.n.Shape), expr.ShapeString(xs[0].n.Shape)))
		}
		var err error
		if ns[i], err = expr.NewExpandDims(x.n, []int{axis}); err != nil {
			return errorf("Stack", err)
		}
	}
	n, err := expr.NewConcat(ns, axis)
	if err != nil {
		return errorf("Stack", err)
	}
	return &Array{n: n}
}

// Unstack splits x along axis into the arrays x[..., i, ...], each without that axis.
func Unstack(x *Array, axis int) []*Array {
	if err := x.Err(); err != nil {
		return []*Array{errArray(err)}
	}
	if expr.HasUnknown(x.n.Shape) {
		return []*Array{errArray(expr.ErrUnknown("Unstack", x.n.Shape))}
	}
	r := x.NDim()
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return []*Array{errArray(fmt.Errorf("Unstack: axis %d out of range for shape %s", axis, expr.ShapeString(x.n.Shape)))}
	}
	out := make([]*Array, x.n.Shape[ax])
	for i := range out {
		idx := make([]Index, ax+1)
		for k := range idx {
			idx[k] = All()
		}
		idx[ax] = At(i)
		out[i] = x.Slice(idx...)
	}
	return out
}

// Squeeze removes axes of length 1: the given ones, or all of them.
func (a *Array) Squeeze(axes ...int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	n, err := expr.NewSqueeze(a.n, axes)
	if err != nil {
		return errorf("Squeeze", err)
	}
	return &Array{n: n}
}

// Squeeze returns x.Squeeze(axes...).
func Squeeze(x *Array, axes ...int) *Array { return x.Squeeze(axes...) }

// ExpandDims inserts axes of length 1 at the given positions of the result (default: 0).
func ExpandDims(x *Array, axes ...int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	if len(axes) == 0 {
		axes = []int{0}
	}
	n, err := expr.NewExpandDims(x.n, axes)
	if err != nil {
		return errorf("ExpandDims", err)
	}
	return &Array{n: n}
}

// axisList resolves axes (negative count from the end; none: all) for an array of rank r.
func axisList(what string, axes []int, r int) ([]int, error) {
	if len(axes) == 0 {
		out := make([]int, r)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	var out []int
	for _, ax := range axes {
		k := ax
		if k < 0 {
			k += r
		}
		if k < 0 || k >= r || slices.Contains(out, k) {
			return nil, fmt.Errorf("%s: axis %d out of range or repeated for %d axes", what, ax, r)
		}
		out = append(out, k)
	}
	return out, nil
}

// Flip reverses the order of elements along the given axes (all when none are given).
func Flip(x *Array, axes ...int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	ax, err := axisList("Flip", axes, x.NDim())
	if err != nil {
		return errArray(err)
	}
	idx := make([]Index, x.NDim())
	for k := range idx {
		idx[k] = All()
		if slices.Contains(ax, k) {
			idx[k] = Every(-1)
		}
	}
	return x.Slice(idx...)
}

// Roll shifts elements by shift positions along each given axis, wrapping around; with no
// axes the array is rolled as if flattened.
func Roll(x *Array, shift int, axes ...int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	if len(axes) == 0 {
		return roll(x.Ravel(), shift, 0).Reshape(x.n.Shape...)
	}
	ax, err := axisList("Roll", axes, x.NDim())
	if err != nil {
		return errArray(err)
	}
	for _, k := range ax {
		x = roll(x, shift, k)
	}
	return x
}

func roll(x *Array, shift, axis int) *Array {
	if x.Err() != nil {
		return x
	}
	n := x.n.Shape[axis]
	if n == 0 {
		return x
	}
	s := ((shift % n) + n) % n
	if s == 0 {
		return x
	}
	idx := func(ix Index) []Index {
		out := make([]Index, axis+1)
		for k := range out {
			out[k] = All()
		}
		out[axis] = ix
		return out
	}
	return ConcatAxis(axis, x.Slice(idx(From(n-s))...), x.Slice(idx(Span(0, n-s))...))
}

// Tile repeats x reps[k] times along axis k (reps shorter than x's rank apply to the last
// axes; longer reps add leading axes).
func Tile(x *Array, reps ...int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	for _, r := range reps {
		if r < 0 {
			return errArray(fmt.Errorf("Tile: negative repetition %d in %v", r, reps))
		}
	}
	for x.NDim() < len(reps) {
		x = ExpandDims(x, 0)
	}
	full := make([]int, x.NDim())
	for k := range full {
		full[k] = 1
	}
	copy(full[len(full)-len(reps):], reps)
	for k, r := range full {
		switch r {
		case 1:
			continue
		case 0:
			idx := make([]Index, k+1)
			for j := range idx {
				idx[j] = All()
			}
			idx[k] = Span(0, 0)
			x = x.Slice(idx...)
		default:
			xs := make([]*Array, r)
			for i := range xs {
				xs[i] = x
			}
			x = ConcatAxis(k, xs...)
		}
	}
	return x
}

// Repeat repeats each element repeats times along axis; with no axis x is flattened first.
func (a *Array) Repeat(repeats int, axis ...int) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if repeats < 0 {
		return errArray(fmt.Errorf("Repeat: negative count %d", repeats))
	}
	x := a
	ax := 0
	switch len(axis) {
	case 0:
		x = a.Ravel()
	case 1:
		ax = axis[0]
		if ax < 0 {
			ax += a.NDim()
		}
		if ax < 0 || ax >= a.NDim() {
			return errArray(fmt.Errorf("Repeat: axis %d out of range for shape %s", axis[0], expr.ShapeString(a.n.Shape)))
		}
	default:
		return errArray(fmt.Errorf("Repeat takes one axis, got %v", axis))
	}
	shape := x.Shape()
	wide := slices.Insert(slices.Clone(shape), ax+1, repeats)
	out := slices.Clone(shape)
	out[ax] *= repeats
	return BroadcastTo(ExpandDims(x, ax+1), wide...).Reshape(out...)
}

// Repeat returns x.Repeat(repeats, axis...).
func Repeat(x *Array, repeats int, axis ...int) *Array { return x.Repeat(repeats, axis...) }

// PermuteDims permutes the axes of x: output axis k is input axis axes[k] (Transpose).
func PermuteDims(x *Array, axes ...int) *Array { return x.Transpose(axes...) }

// MoveAxis moves axis src of x to position dst, keeping the order of the others.
func MoveAxis(x *Array, src, dst int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	r := x.NDim()
	s, d := src, dst
	if s < 0 {
		s += r
	}
	if d < 0 {
		d += r
	}
	if s < 0 || s >= r || d < 0 || d >= r {
		return errArray(fmt.Errorf("MoveAxis: source %d or destination %d out of range for shape %s", src, dst, expr.ShapeString(x.n.Shape)))
	}
	var perm []int
	for k := 0; k < r; k++ {
		if k != s {
			perm = append(perm, k)
		}
	}
	perm = slices.Insert(perm, d, s)
	return x.Transpose(perm...)
}

// BroadcastTo returns x broadcast to shape as NumPy does; new and stretched axes are one chunk.
func BroadcastTo(x *Array, shape ...int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	off := len(shape) - x.NDim()
	if off < 0 {
		return errArray(fmt.Errorf("BroadcastTo: cannot broadcast shape %s to %s", expr.ShapeString(x.n.Shape), expr.ShapeString(shape)))
	}
	chunks := make([][]int, len(shape))
	for k, d := range shape {
		if d < 0 {
			return errArray(fmt.Errorf("BroadcastTo: negative length in %v", shape))
		}
		chunks[k] = []int{d}
		if k >= off && x.n.Shape[k-off] == d {
			chunks[k] = x.n.Chunks[k-off]
		}
	}
	return wrap(expr.BroadcastTo(x.n, shape, chunks))
}

// BroadcastArrays broadcasts arrays against each other (their chunks unified, as dask does).
func BroadcastArrays(xs ...*Array) []*Array {
	if err := firstErr(xs); err != nil {
		return []*Array{errArray(err)}
	}
	shape, chunks, err := expr.BroadcastShapes(nodes(xs)...)
	if err != nil {
		return []*Array{errorf("BroadcastArrays", err)}
	}
	out := make([]*Array, len(xs))
	for i, x := range xs {
		out[i] = wrap(expr.BroadcastTo(x.n, shape, chunks))
	}
	return out
}

// NewAxis inserts an axis of length 1 in Slice, like NumPy's None.
func NewAxis() Index { return Index{ix: expr.Index{NewAxis: true}} }

// Ellipsis stands in Slice for as many whole axes as the other indices leave, like NumPy's ....
func Ellipsis() Index { return Index{ix: expr.Index{Ellipsis: true}} }
