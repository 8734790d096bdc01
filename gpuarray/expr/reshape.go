package expr

import (
	"fmt"
	"slices"
)

// Reshapes, joins and axis insertion or removal.
//
// A reshape keeps the row-major order of the elements, and every leaf reads its source by the
// source's row-major linear index (see gpuarray/plan): so a reshape is pushed down through
// elementwise nodes to the leaves, where a constant, a random array, a range or host data
// takes the new shape with no copy. Only a reshape of a view that is not a plain rechunk
// (a slice, a transpose, a broadcast) or of a reduction stays a KReshape node; the planner
// computes its operand first, as NumPy copies a non-contiguous array it reshapes.

// ResolveShape fills in a -1 in shape (at most one) so that it holds size elements.
func ResolveShape(size int64, shape []int) ([]int, error) {
	out := slices.Clone(shape)
	free := -1
	known := int64(1)
	for i, d := range shape {
		switch {
		case d == -1 && free >= 0:
			return nil, fmt.Errorf("reshape: more than one -1 in %v", shape)
		case d == -1:
			free = i
		case d < 0:
			return nil, fmt.Errorf("reshape: negative length %d in %v", d, shape)
		default:
			known *= int64(d)
		}
	}
	if free >= 0 {
		if known == 0 || size%known != 0 {
			return nil, fmt.Errorf("cannot reshape an array of size %d into shape %v", size, shape)
		}
		out[free] = int(size / known)
		known *= int64(out[free])
	}
	if known != size {
		return nil, fmt.Errorf("cannot reshape an array of size %d into shape %s", size, ShapeString(out))
	}
	return out, nil
}

// ReshapeChunks returns the chunks of a reshape of an array of shape in with chunks inChunks
// to shape out, following dask's rule: axes kept as they are keep their chunks; axes merged
// into one take the leading axis' chunks, split so a chunk holds about as many elements as
// before; an axis split into several gives the leading new axis chunks (rounded to whole
// rows) and the others one chunk. Other reshapes are treated as a ravel, then a split.
func ReshapeChunks(in []int, inChunks [][]int, out []int) [][]int {
	if Size(out) == 0 {
		return wholeChunks(out)
	}
	res := make([][]int, len(out))
	ii, oi := len(in)-1, len(out)-1
	for ii >= 0 || oi >= 0 {
		switch {
		case ii >= 0 && oi >= 0 && in[ii] == out[oi]:
			res[oi] = slices.Clone(inChunks[ii])
			ii--
			oi--
		case ii >= 0 && in[ii] == 1:
			ii--
		case oi >= 0 && out[oi] == 1:
			res[oi] = []int{1}
			oi--
		case ii < 0 || oi < 0:
			return ravelChunks(in, inChunks, out)
		case in[ii] < out[oi]: // merge in[left..ii] into out[oi]
			left, p := ii, int64(in[ii])
			for left > 0 && p < int64(out[oi]) {
				left--
				p *= int64(in[left])
			}
			if p != int64(out[oi]) {
				return ravelChunks(in, inChunks, out)
			}
			inner := int64(1)
			pieces := 1
			for k := left + 1; k <= ii; k++ {
				inner *= int64(in[k])
				pieces *= len(inChunks[k])
			}
			var cs []int
			for _, c := range expandChunks(inChunks[left], pieces) {
				cs = append(cs, c*int(inner))
			}
			res[oi] = cs
			oi--
			ii = left - 1
		default: // split in[ii] into out[left..oi]
			left, p := oi, int64(out[oi])
			for left > 0 && p < int64(in[ii]) {
				left--
				p *= int64(out[left])
			}
			if p != int64(in[ii]) {
				return ravelChunks(in, inChunks, out)
			}
			inner := 1
			for k := left + 1; k <= oi; k++ {
				inner *= out[k]
				res[k] = []int{out[k]}
			}
			var cs []int
			for _, c := range contractChunks(inChunks[ii], inner) {
				cs = append(cs, c/inner)
			}
			res[left] = cs
			oi = left - 1
			ii--
		}
	}
	return res
}

// ravelChunks chunks a general reshape: the input raveled (leading chunks expanded as in a
// merge), then split into out.
func ravelChunks(in []int, inChunks [][]int, out []int) [][]int {
	n := int(Size(in))
	flat := []int{n}
	if len(in) > 0 {
		flat = ReshapeChunks(in, inChunks, []int{n})[0]
	}
	return ReshapeChunks([]int{n}, [][]int{flat}, out)
}

func wholeChunks(shape []int) [][]int {
	c := make([][]int, len(shape))
	for i, d := range shape {
		c[i] = []int{d}
	}
	return c
}

// expandChunks splits each chunk into about factor pieces (dask's expand_tuple).
func expandChunks(cs []int, factor int) []int {
	if factor <= 1 {
		return slices.Clone(cs)
	}
	var out []int
	for _, c := range cs {
		part := max(c/factor, 1)
		x := c
		for x >= 2*part {
			out = append(out, part)
			x -= part
		}
		if x > 0 {
			out = append(out, x)
		}
	}
	return out
}

// contractChunks merges chunks into multiples of factor (dask's contract_tuple).
func contractChunks(cs []int, factor int) []int {
	var out []int
	res := 0
	for _, c := range cs {
		c += res
		good := factor * (c / factor)
		res = c % factor
		if good > 0 {
			out = append(out, good)
		}
	}
	return out
}

// NewReshape returns a with shape (no -1; see ResolveShape) and the given chunks (nil: dask's,
// see ReshapeChunks).
func NewReshape(a *Node, shape []int, chunks [][]int) (*Node, error) {
	if HasUnknown(a.Shape) {
		return nil, ErrUnknown("a reshape", a.Shape)
	}
	if Size(shape) != Size(a.Shape) {
		return nil, fmt.Errorf("cannot reshape an array of shape %s into shape %s", ShapeString(a.Shape), ShapeString(shape))
	}
	if chunks == nil {
		chunks = ReshapeChunks(a.Shape, a.Chunks, shape)
	}
	if err := CheckChunks(shape, chunks); err != nil {
		return nil, fmt.Errorf("reshape: %w", err)
	}
	if slices.Equal(a.Shape, shape) {
		if chunksEqual(a.Chunks, chunks) {
			return a, nil
		}
		return NewRechunk(a, chunks)
	}
	memo := map[*Node]*Node{}
	if r := pushReshape(a, shape, chunks, memo); r != nil {
		return r, nil
	}
	return &Node{Kind: KReshape, DType: a.DType, Shape: slices.Clone(shape), Chunks: cloneChunks(chunks), Args: []*Node{a}}, nil
}

// pushReshape rebuilds n with the new shape where the reshape reaches leaves through
// elementwise nodes and rechunks; nil where it does not.
func pushReshape(n *Node, shape []int, chunks [][]int, memo map[*Node]*Node) *Node {
	if r, ok := memo[n]; ok {
		return r
	}
	var r *Node
	with := func() *Node {
		c := *n
		c.Shape, c.Chunks = slices.Clone(shape), cloneChunks(chunks)
		return &c
	}
	switch n.Kind {
	case KConst, KRandom, KRange:
		r = with()
	case KData:
		if n.Buf == nil {
			r = with() // the same row-major values
		}
	case KFile:
		// A C-order file read whole is the same row-major values under another shape: tasks
		// read only their boxes of it, where the reshape's operand would be read entirely.
		if f := n.File; (f.Format == "npy" || f.Format == "raw") && !f.Fortran && f.Sel == nil {
			r = with()
			c := *f
			c.Shape = slices.Clone(shape)
			r.File = &c
		}
	case KReshape:
		r = pushReshape(n.Args[0], shape, chunks, memo)
		if r == nil {
			r = with()
		}
	case KView:
		src := n.Args[0]
		switch {
		case src.Kind == KConst:
			r = &Node{Kind: KConst, DType: n.DType, Shape: slices.Clone(shape), Chunks: cloneChunks(chunks), Value: src.Value}
		case identityView(n):
			r = pushReshape(src, shape, chunks, memo)
		}
	case KUnary, KBinary, KWhere, KCast:
		args := make([]*Node, len(n.Args))
		for i, a := range n.Args {
			if args[i] = pushReshape(a, shape, chunks, memo); args[i] == nil {
				memo[n] = nil
				return nil
			}
		}
		r = with()
		r.Args = args
	}
	memo[n] = r
	return r
}

// identityView reports whether a view reads its input element for element (a rechunk).
func identityView(n *Node) bool {
	if !slices.Equal(n.Shape, n.Args[0].Shape) {
		return false
	}
	for d, m := range n.Map {
		if m.Axis != d || m.Off != 0 || m.Step != 1 {
			return false
		}
	}
	return true
}

// NewExpandDims inserts axes of length 1 at the given positions of the result (negative
// positions count from the result's end).
func NewExpandDims(a *Node, axes []int) (*Node, error) {
	if HasUnknown(a.Shape) {
		return nil, ErrUnknown("expand_dims", a.Shape)
	}
	r := len(a.Shape) + len(axes)
	isNew := make([]bool, r)
	for _, ax := range axes {
		k := ax
		if k < 0 {
			k += r
		}
		if k < 0 || k >= r || isNew[k] {
			return nil, fmt.Errorf("expand_dims: axis %d out of range or repeated for a result of %d axes", ax, r)
		}
		isNew[k] = true
	}
	shape := make([]int, 0, r)
	chunks := make([][]int, 0, r)
	m := make([]AxisMap, len(a.Shape))
	src := 0
	for k := 0; k < r; k++ {
		if isNew[k] {
			shape = append(shape, 1)
			chunks = append(chunks, []int{1})
			continue
		}
		m[src] = AxisMap{Axis: k, Step: 1}
		shape = append(shape, a.Shape[src])
		chunks = append(chunks, a.Chunks[src])
		src++
	}
	return newView(a, m, shape, chunks), nil
}

// NewSqueeze removes the given axes, which must have length 1 (none given: every axis of
// length 1).
func NewSqueeze(a *Node, axes []int) (*Node, error) {
	if HasUnknown(a.Shape) {
		return nil, ErrUnknown("squeeze", a.Shape)
	}
	r := len(a.Shape)
	drop := make([]bool, r)
	if len(axes) == 0 {
		for k, d := range a.Shape {
			drop[k] = d == 1
		}
	}
	for _, ax := range axes {
		k := ax
		if k < 0 {
			k += r
		}
		if k < 0 || k >= r {
			return nil, fmt.Errorf("squeeze: axis %d out of range for shape %s", ax, ShapeString(a.Shape))
		}
		if a.Shape[k] != 1 {
			return nil, fmt.Errorf("squeeze: axis %d has length %d, not 1 (shape %s)", ax, a.Shape[k], ShapeString(a.Shape))
		}
		drop[k] = true
	}
	var shape []int
	var chunks [][]int
	m := make([]AxisMap, r)
	for k := range a.Shape {
		if drop[k] {
			m[k] = AxisMap{Axis: -1}
			continue
		}
		m[k] = AxisMap{Axis: len(shape), Step: 1}
		shape = append(shape, a.Shape[k])
		chunks = append(chunks, a.Chunks[k])
	}
	return newView(a, m, shape, chunks), nil
}

// NewConcat joins arrays along axis (negative counts from the end). Shapes must agree on the
// other axes; chunks along axis are the inputs' chunks one after another (so an output chunk
// is one input's chunk), and on the other axes their common refinement. The dtype is the
// inputs' promoted dtype.
func NewConcat(ns []*Node, axis int) (*Node, error) {
	if len(ns) == 0 {
		return nil, fmt.Errorf("concat: no arrays")
	}
	for _, n := range ns {
		if HasUnknown(n.Shape) {
			return nil, ErrUnknown("concat", n.Shape)
		}
	}
	r := len(ns[0].Shape)
	if r == 0 {
		return nil, fmt.Errorf("concat: zero-dimensional arrays cannot be concatenated")
	}
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return nil, fmt.Errorf("concat: axis %d out of range for %d-d arrays", axis, r)
	}
	shape := slices.Clone(ns[0].Shape)
	shape[ax] = 0
	chunks := make([][]int, r)
	dt := ns[0].DType
	for i, n := range ns {
		if len(n.Shape) != r {
			return nil, fmt.Errorf("concat: array %d has %d axes, array 0 has %d (shapes %s)", i, len(n.Shape), r, shapesString(ns))
		}
		for k := 0; k < r; k++ {
			if k == ax {
				continue
			}
			if n.Shape[k] != shape[k] {
				return nil, fmt.Errorf("concat: shapes %s differ on axis %d, not only on the join axis %d", shapesString(ns), k, ax)
			}
			if chunks[k] == nil {
				chunks[k] = n.Chunks[k]
			} else {
				chunks[k] = unify(chunks[k], n.Chunks[k])
			}
		}
		shape[ax] += n.Shape[ax]
		if n.Shape[ax] > 0 {
			chunks[ax] = append(chunks[ax], n.Chunks[ax]...)
		}
		dt = Promote(dt, n.DType)
	}
	if len(chunks[ax]) == 0 {
		chunks[ax] = []int{0}
	}
	args := make([]*Node, 0, len(ns))
	for _, n := range ns {
		if n.Shape[ax] == 0 && shape[ax] > 0 {
			continue // contributes nothing
		}
		c := slices.Clone(chunks)
		c[ax] = n.Chunks[ax]
		v := n
		if !chunksEqual(n.Chunks, c) {
			var err error
			if v, err = NewRechunk(n, c); err != nil {
				return nil, err
			}
		}
		args = append(args, NewCast(v, dt))
	}
	if len(args) == 1 {
		return args[0], nil
	}
	return &Node{Kind: KConcat, DType: dt, Shape: shape, Chunks: cloneChunks(chunks), Args: args, Axes: []int{ax}}, nil
}

// Piece returns the input of a KConcat node that holds position i along the join axis, and
// where that input starts.
func (n *Node) Piece(i int) (arg, start int) {
	ax := n.Axes[0]
	for j, a := range n.Args {
		if i < start+a.Shape[ax] {
			return j, start
		}
		start += a.Shape[ax]
	}
	return len(n.Args) - 1, start - n.Args[len(n.Args)-1].Shape[ax]
}

// IndexAlong returns an array of shape and chunks whose element is its index along axis, in dt.
func IndexAlong(shape []int, chunks [][]int, axis int, dt DType) (*Node, error) {
	if axis < 0 || axis >= len(shape) {
		return nil, fmt.Errorf("index along axis %d of shape %s", axis, ShapeString(shape))
	}
	rng, err := NewRange(0, 1, 0, false, shape[axis], dt, [][]int{chunks[axis]})
	if err != nil {
		return nil, err
	}
	return newView(rng, []AxisMap{{Axis: axis, Step: 1}}, shape, chunks), nil
}
