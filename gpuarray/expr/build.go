package expr

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

func leaf(k Kind, dt DType, shape []int, chunks [][]int) (*Node, error) {
	for ax, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("negative length %d on axis %d of shape %s", d, ax, ShapeString(shape))
		}
	}
	if err := CheckChunks(shape, chunks); err != nil {
		return nil, err
	}
	return &Node{Kind: k, DType: dt, Shape: slices.Clone(shape), Chunks: cloneChunks(chunks)}, nil
}

func cloneChunks(c [][]int) [][]int {
	out := make([][]int, len(c))
	for i := range c {
		out[i] = slices.Clone(c[i])
	}
	return out
}

// NewConst returns an array whose elements are all v.
func NewConst(v float64, dt DType, shape []int, chunks [][]int) (*Node, error) {
	n, err := leaf(KConst, dt, shape, chunks)
	if err != nil {
		return nil, err
	}
	n.Value = roundTo(v, dt)
	return n, nil
}

// NewRandom returns an array of random numbers drawn as spec says.
func NewRandom(spec RandSpec, dt DType, shape []int, chunks [][]int) (*Node, error) {
	if spec.Dist == Integers && !(spec.P1 > spec.P0) {
		return nil, fmt.Errorf("integers: high %v must be greater than low %v", spec.P1, spec.P0)
	}
	n, err := leaf(KRandom, dt, shape, chunks)
	if err != nil {
		return nil, err
	}
	n.Rand = spec
	return n, nil
}

// NewRange returns the 1-d array start + step*i, i < num; with exact, element num-1 is stop.
func NewRange(start, step, stop float64, exact bool, num int, dt DType, chunks [][]int) (*Node, error) {
	n, err := leaf(KRange, dt, []int{num}, chunks)
	if err != nil {
		return nil, err
	}
	n.Start, n.Step, n.Stop, n.Exact = start, step, stop, exact
	return n, nil
}

// NewData returns a materialized array over data (row-major, length the shape's size), of
// data's dtype.
func NewData(data dtype.Slice, shape []int, chunks [][]int) (*Node, error) {
	if int64(data.Len()) != Size(shape) {
		return nil, fmt.Errorf("data has %d elements, shape %s needs %d", data.Len(), ShapeString(shape), Size(shape))
	}
	n, err := leaf(KData, data.DType(), shape, chunks)
	if err != nil {
		return nil, err
	}
	n.Data = data
	return n, nil
}

// NewBuffered returns a materialized array whose values buf holds (float64, row-major).
func NewBuffered(buf Buffer, shape []int, chunks [][]int) (*Node, error) {
	if buf == nil {
		return nil, fmt.Errorf("nil buffer")
	}
	n, err := leaf(KData, Float64, shape, chunks)
	if err != nil {
		return nil, err
	}
	n.Buf = buf
	return n, nil
}

// NewUnary applies a one-operand op.
func NewUnary(op Op, a *Node) (*Node, error) {
	if !op.Unary() {
		return nil, fmt.Errorf("%v is not a unary operation", op)
	}
	if op == OpNeg && a.DType == Bool {
		return nil, fmt.Errorf("neg of a bool array: use LogicalNot")
	}
	if g, ok := op.gen(); ok {
		in, out, err := genDType(op, g, a.DType)
		if err != nil {
			return nil, err
		}
		a = NewCast(a, in)
		return &Node{Kind: KUnary, Op: op, DType: out, Shape: a.Shape, Chunks: a.Chunks, Args: []*Node{a}}, nil
	}
	if op.Transcendental() {
		a = NewCast(a, FloatFor(a.DType, op))
	}
	if op == OpAbs && a.DType.IsComplex() {
		return &Node{Kind: KUnary, Op: op, DType: a.DType.Real(), Shape: a.Shape, Chunks: a.Chunks, Args: []*Node{a}}, nil
	}
	return &Node{Kind: KUnary, Op: op, DType: a.DType, Shape: a.Shape, Chunks: a.Chunks, Args: []*Node{a}}, nil
}

// NewCast rounds a to dt.
func NewCast(a *Node, dt DType) *Node {
	if a.DType == dt {
		return a
	}
	return &Node{Kind: KCast, DType: dt, Shape: a.Shape, Chunks: a.Chunks, Args: []*Node{a}}
}

// BroadcastShapes returns the NumPy broadcast of shapes, with the chunk grid of the result
// (axes of equal length get the common refinement of their chunks).
func BroadcastShapes(ns ...*Node) ([]int, [][]int, error) {
	rank := 0
	for _, n := range ns {
		rank = max(rank, len(n.Shape))
	}
	shape := make([]int, rank)
	chunks := make([][]int, rank)
	for ax := 0; ax < rank; ax++ {
		shape[ax] = 1
		for _, n := range ns {
			k := ax - (rank - len(n.Shape))
			if k < 0 {
				continue
			}
			d := n.Shape[k]
			switch {
			case d == shape[ax]:
				if chunks[ax] == nil {
					chunks[ax] = n.Chunks[k]
				} else {
					chunks[ax] = unify(chunks[ax], n.Chunks[k])
				}
			case d == 1:
			case shape[ax] == 1:
				shape[ax] = d
				chunks[ax] = n.Chunks[k]
			case d == Unknown || shape[ax] == Unknown:
				return nil, nil, ErrUnknown("broadcasting", n.Shape)
			default:
				return nil, nil, fmt.Errorf("shapes %s cannot broadcast together (axis %d: %d vs %d)", shapesString(ns), ax, shape[ax], d)
			}
		}
		if chunks[ax] == nil {
			chunks[ax] = []int{1}
		}
	}
	return shape, chunks, nil
}

func shapesString(ns []*Node) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += " and "
		}
		s += ShapeString(n.Shape)
	}
	return s
}

// BroadcastTo views a with shape and chunks (a's shape must broadcast to shape).
func BroadcastTo(a *Node, shape []int, chunks [][]int) (*Node, error) {
	if slices.Equal(a.Shape, shape) && chunksEqual(a.Chunks, chunks) {
		return a, nil
	}
	off := len(shape) - len(a.Shape)
	if off < 0 {
		return nil, fmt.Errorf("cannot broadcast shape %s to %s", ShapeString(a.Shape), ShapeString(shape))
	}
	m := make([]AxisMap, len(a.Shape))
	for k, d := range a.Shape {
		switch d {
		case shape[k+off]:
			m[k] = AxisMap{Axis: k + off, Step: 1}
		case 1:
			m[k] = AxisMap{Axis: -1}
		default:
			return nil, fmt.Errorf("cannot broadcast shape %s to %s", ShapeString(a.Shape), ShapeString(shape))
		}
	}
	return newView(a, m, shape, chunks), nil
}

func chunksEqual(a, b [][]int) bool {
	return slices.EqualFunc(a, b, func(x, y []int) bool { return slices.Equal(x, y) })
}

// NewBinary applies a two-operand op with broadcasting.
func NewBinary(op Op, a, b *Node) (*Node, error) {
	if op.Unary() {
		return nil, fmt.Errorf("%v is not a binary operation", op)
	}
	shape, chunks, err := BroadcastShapes(a, b)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	if a, err = BroadcastTo(a, shape, chunks); err != nil {
		return nil, err
	}
	if b, err = BroadcastTo(b, shape, chunks); err != nil {
		return nil, err
	}
	// Operands are cast to the dtype the op computes in, so executors see one dtype per op.
	dt := Promote(a.DType, b.DType)
	if g, ok := op.gen(); ok {
		in, out, err := genDType(op, g, dt)
		if err != nil {
			return nil, err
		}
		a, b = NewCast(a, in), NewCast(b, in)
		return &Node{Kind: KBinary, Op: op, DType: out, Shape: shape, Chunks: chunks, Args: []*Node{a, b}}, nil
	}
	if op.Transcendental() {
		dt = FloatFor(dt, op)
	}
	if (op == OpSub) && dt == Bool {
		return nil, fmt.Errorf("sub of bool arrays: use LogicalXor")
	}
	a, b = NewCast(a, dt), NewCast(b, dt)
	if op.Comparison() {
		dt = Bool
	}
	return &Node{Kind: KBinary, Op: op, DType: dt, Shape: shape, Chunks: chunks, Args: []*Node{a, b}}, nil
}

// NewWhere selects x where cond is true (nonzero) and y elsewhere, with broadcasting.
func NewWhere(cond, x, y *Node) (*Node, error) {
	shape, chunks, err := BroadcastShapes(cond, x, y)
	if err != nil {
		return nil, fmt.Errorf("where: %w", err)
	}
	args := []*Node{cond, x, y}
	for i := range args {
		if args[i], err = BroadcastTo(args[i], shape, chunks); err != nil {
			return nil, err
		}
	}
	dt := Promote(x.DType, y.DType)
	args[1], args[2] = NewCast(args[1], dt), NewCast(args[2], dt)
	return &Node{Kind: KWhere, DType: dt, Shape: shape, Chunks: chunks, Args: args}, nil
}

// newView builds a view of a, composing with a when a is itself a view.
func newView(a *Node, m []AxisMap, shape []int, chunks [][]int) *Node {
	if a.Kind == KView {
		inner := make([]AxisMap, len(a.Map))
		for d, am := range a.Map {
			if am.Axis < 0 {
				inner[d] = am
				continue
			}
			om := m[am.Axis]
			if om.Axis < 0 {
				inner[d] = AxisMap{Axis: -1, Off: am.Off + am.Step*om.Off}
			} else {
				inner[d] = AxisMap{Axis: om.Axis, Off: am.Off + am.Step*om.Off, Step: am.Step * om.Step}
			}
		}
		a, m = a.Args[0], inner
	}
	return &Node{Kind: KView, DType: a.DType, Shape: slices.Clone(shape), Chunks: cloneChunks(chunks), Args: []*Node{a}, Map: m}
}

// Index selects along one axis: everything, a slice, or one position (which drops the axis);
// or it inserts a new axis of length 1 (NewAxis), or stands for as many whole axes as the
// other indices leave (Ellipsis).
type Index struct {
	At                bool // a single position, Start
	NewAxis           bool
	Ellipsis          bool
	Start, Stop, Step int
	HasStart, HasStop bool // else the Python defaults for the step's direction
}

// resolve applies Python slice rules to an axis of length n: the first index, step and count.
func (ix Index) resolve(n, axis int) (start, step, count int, err error) {
	if ix.At {
		i := ix.Start
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return 0, 0, 0, fmt.Errorf("index %d out of range for axis %d of length %d", ix.Start, axis, n)
		}
		return i, 0, 1, nil
	}
	step = ix.Step
	if step == 0 {
		return 0, 0, 0, fmt.Errorf("slice step 0 on axis %d (length %d)", axis, n)
	}
	norm := func(v, lo, hi int) int {
		if v < 0 {
			v += n
		}
		return min(max(v, lo), hi)
	}
	var stop int
	if step > 0 {
		start, stop = 0, n
		if ix.HasStart {
			start = norm(ix.Start, 0, n)
		}
		if ix.HasStop {
			stop = norm(ix.Stop, 0, n)
		}
		count = max(0, (stop-start+step-1)/step)
	} else {
		start, stop = n-1, -1
		if ix.HasStart {
			start = norm(ix.Start, -1, n-1)
		}
		if ix.HasStop {
			stop = ix.Stop
			if stop < 0 {
				stop += n
			}
			stop = min(max(stop, -1), n-1)
		}
		count = max(0, (start-stop-step-1)/(-step))
	}
	return start, step, count, nil
}

// NewSlice indexes a with one Index per leading axis (missing trailing axes are kept whole),
// as NumPy's basic indexing: new axes and one ellipsis included.
func NewSlice(a *Node, idx []Index) (*Node, error) {
	if HasUnknown(a.Shape) {
		return nil, ErrUnknown("slicing", a.Shape)
	}
	consumed, ell := 0, -1
	for i, ix := range idx {
		switch {
		case ix.Ellipsis && ell >= 0:
			return nil, fmt.Errorf("an index can only have a single ellipsis")
		case ix.Ellipsis:
			ell = i
		case !ix.NewAxis:
			consumed++
		}
	}
	if consumed > len(a.Shape) {
		return nil, fmt.Errorf("%d indices for an array of shape %s", consumed, ShapeString(a.Shape))
	}
	if ell >= 0 {
		full := make([]Index, 0, len(idx)+len(a.Shape)-consumed)
		full = append(full, idx[:ell]...)
		for k := 0; k < len(a.Shape)-consumed; k++ {
			full = append(full, Index{Step: 1})
		}
		idx = append(full, idx[ell+1:]...)
	}
	var shape []int
	var chunks [][]int
	m := make([]AxisMap, len(a.Shape))
	ax := 0
	for i := 0; i < len(idx) || ax < len(a.Shape); i++ {
		ix := Index{Step: 1}
		if i < len(idx) {
			ix = idx[i]
		}
		if ix.NewAxis {
			shape = append(shape, 1)
			chunks = append(chunks, []int{1})
			continue
		}
		n := a.Shape[ax]
		start, step, count, err := ix.resolve(n, ax)
		if err != nil {
			return nil, err
		}
		if ix.At {
			m[ax] = AxisMap{Axis: -1, Off: start}
		} else {
			m[ax] = AxisMap{Axis: len(shape), Off: start, Step: step}
			shape = append(shape, count)
			chunks = append(chunks, sliceChunks(a.Chunks[ax], start, step, count))
		}
		ax++
	}
	return newView(a, m, shape, chunks), nil
}

// NewTranspose permutes the axes of a: output axis k is input axis perm[k]; an empty perm
// reverses the axes.
func NewTranspose(a *Node, perm []int) (*Node, error) {
	if HasUnknown(a.Shape) {
		return nil, ErrUnknown("a transpose", a.Shape)
	}
	r := len(a.Shape)
	if len(perm) == 0 {
		perm = make([]int, r)
		for k := range perm {
			perm[k] = r - 1 - k
		}
	}
	if len(perm) != r {
		return nil, fmt.Errorf("transpose: axes %v do not match shape %s", perm, ShapeString(a.Shape))
	}
	seen := make([]bool, r)
	m := make([]AxisMap, r)
	shape := make([]int, r)
	chunks := make([][]int, r)
	for k, d := range perm {
		if d < 0 {
			d += r
		}
		if d < 0 || d >= r || seen[d] {
			return nil, fmt.Errorf("transpose: axes %v are not a permutation of %d axes (shape %s)", perm, r, ShapeString(a.Shape))
		}
		seen[d] = true
		m[d] = AxisMap{Axis: k, Step: 1}
		shape[k] = a.Shape[d]
		chunks[k] = a.Chunks[d]
	}
	return newView(a, m, shape, chunks), nil
}

// NewRechunk regrids a (chunks must add up to a's shape).
func NewRechunk(a *Node, chunks [][]int) (*Node, error) {
	if HasUnknown(a.Shape) {
		return nil, ErrUnknown("rechunk", a.Shape)
	}
	if err := CheckChunks(a.Shape, chunks); err != nil {
		return nil, fmt.Errorf("rechunk: %w", err)
	}
	m := make([]AxisMap, len(a.Shape))
	for k := range m {
		m[k] = AxisMap{Axis: k, Step: 1}
	}
	return newView(a, m, a.Shape, chunks), nil
}

// NewReduce reduces a over axes (all axes when empty; negative axes count from the end).
// ArgMin and ArgMax take at most one axis; without one they give the flat index.
func NewReduce(a *Node, red Red, axes []int) (*Node, error) {
	r := len(a.Shape)
	var ax []int
	if len(axes) == 0 {
		for k := 0; k < r; k++ {
			ax = append(ax, k)
		}
	}
	for _, k := range axes {
		kk := k
		if kk < 0 {
			kk += r
		}
		if kk < 0 || kk >= r {
			return nil, fmt.Errorf("%v: axis %d out of range for shape %s", red, k, ShapeString(a.Shape))
		}
		if slices.Contains(ax, kk) {
			return nil, fmt.Errorf("%v: axis %d repeated in %v", red, k, axes)
		}
		ax = append(ax, kk)
	}
	slices.Sort(ax)
	if (red == ArgMin || red == ArgMax) && len(axes) > 1 {
		return nil, fmt.Errorf("%v takes one axis, got %v", red, axes)
	}
	if red == Min || red == Max || red == ArgMin || red == ArgMax {
		for _, k := range ax {
			if a.Shape[k] == 0 {
				return nil, fmt.Errorf("%v of an empty axis %d (shape %s)", red, k, ShapeString(a.Shape))
			}
		}
	}
	var shape []int
	var chunks [][]int
	for k := 0; k < r; k++ {
		if !slices.Contains(ax, k) {
			shape = append(shape, a.Shape[k])
			chunks = append(chunks, a.Chunks[k])
		}
	}
	dt, err := ReduceDType(red, a.DType)
	if err != nil {
		return nil, err
	}
	return &Node{Kind: KReduce, Red: red, Axes: ax, DType: dt, Shape: shape, Chunks: chunks, Args: []*Node{a}}, nil
}

func roundTo(v float64, dt DType) float64 {
	if dt == Float32 {
		return float64(float32(v))
	}
	return v
}

// ReduceDType returns the dtype of reduction red of values of dtype dt, as NumPy gives it:
// sums of bools and signed integers are int64, of unsigned ones uint64; means, variances and
// standard deviations of integers are float64 (complex values have Sum and Mean only);
// ArgMin and ArgMax give int64; Min and Max keep dt.
func ReduceDType(red Red, dt DType) (DType, error) {
	switch red {
	case ArgMin, ArgMax:
		if dt.IsComplex() {
			return 0, fmt.Errorf("%v of %v values is not supported yet", red, dt)
		}
		return Int64, nil
	case Sum:
		switch dt.Kind() {
		case dtype.KindBool, dtype.KindInt:
			return Int64, nil
		case dtype.KindUint:
			return Uint64, nil
		}
	case Mean, Var, Std:
		if dt.IsComplex() && red != Mean {
			return 0, fmt.Errorf("%v of %v values is not supported yet", red, dt)
		}
		if !dt.IsFloat() && !dt.IsComplex() {
			return Float64, nil
		}
	case Min, Max:
		if dt.IsComplex() {
			return 0, fmt.Errorf("%v of %v values: complex numbers are not ordered", red, dt)
		}
	}
	return dt, nil
}
