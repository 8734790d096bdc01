package gpuarray

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Integer-array and boolean indexing. Indices and masks are arrays like any other, computed
// before the values they select; the selected values are gathered chunk by chunk into the
// blocks that the CPU or cluster workers then read, on the host, or by a generated gather
// kernel on the GPU (see gpuarray/plan and gpuarray/cuda/gather.go). A mask's selected
// positions are found on the host from its computed values.

// Take returns the elements of x at the positions indices (a 1-d array of integer values;
// negative ones count from the end) along axis, as NumPy's take.
func Take(x, indices *Array, axis int) *Array {
	if err := firstErr([]*Array{x, indices}); err != nil {
		return errArray(err)
	}
	return wrap(expr.NewTake(x.n, indices.n, axis))
}

// Take returns Take(a, indices, axis); without an axis it takes from a flattened, as
// ndarray.take.
func (a *Array) Take(indices *Array, axis ...int) *Array { return takeMethod(a, indices, axis) }

// TakeAlongAxis returns x[..., indices[i, ...], ...] element by element along axis, as
// NumPy's take_along_axis: indices has x's rank and x's lengths on the other axes (what
// ArgSort or ArgMax with kept dimensions give).
func TakeAlongAxis(x, indices *Array, axis int) *Array {
	if err := firstErr([]*Array{x, indices}); err != nil {
		return errArray(err)
	}
	return wrap(expr.NewTakeAlong(x.n, indices.n, axis))
}

// Indices selects, in Slice, the positions a 1-d integer array gives along one axis (NumPy's
// x[:, idx]); one such index per Slice.
func Indices(idx *Array) Index { return Index{arr: idx} }

// sliceWithIndices applies Slice with an integer-array index: the basic indices with that
// axis whole, then a take along the axis it became.
func (a *Array) sliceWithIndices(idx []Index) *Array {
	pos := -1
	for i, x := range idx {
		if x.arr != nil {
			if pos >= 0 {
				return errArray(fmt.Errorf("Slice: more than one Indices index (integer arrays index one axis)"))
			}
			pos = i
		}
	}
	basic := make([]Index, len(idx))
	copy(basic, idx)
	basic[pos] = All()
	consumed := 0
	for _, x := range idx {
		if !x.ix.NewAxis && !x.ix.Ellipsis {
			consumed++
		}
	}
	out := 0
	for _, x := range idx[:pos] {
		switch {
		case x.ix.NewAxis:
			out++
		case x.ix.Ellipsis:
			out += a.NDim() - consumed
		case !x.ix.At:
			out++
		}
	}
	return a.Slice(basic...).Take(idx[pos].arr, out)
}

// Mask returns the elements of a where mask is true (nonzero), as NumPy's a[mask]: mask has
// the shape of a's leading axes, which the result replaces by one axis. Its length is unknown
// until the mask is computed (Shape reports -1, printed as nan, as dask's NaN chunks):
// elementwise operations and reductions work on it as usual, and Compute or ComputeChunkSizes
// give the length; operations that need it before (a reshape, a join, a slice) say so.
// (Named Mask because Go has no a[mask]; NumPy calls the 1-d case compress.)
func (a *Array) Mask(mask *Array) *Array {
	if err := firstErr([]*Array{a, mask}); err != nil {
		return errArray(err)
	}
	return wrap(expr.NewMask(a.n, mask.n))
}

// ComputeChunkSizes computes the masks an array depends on and returns the array with its
// shape and chunks known (still lazy otherwise), as dask's compute_chunk_sizes.
func (a *Array) ComputeChunkSizes(opts ...ComputeOption) (*Array, error) {
	if err := a.Err(); err != nil {
		return nil, err
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	n, err := resolveMasks(cfg, a.n)
	if err != nil {
		return nil, err
	}
	return &Array{n: n}, nil
}

// hasMask reports whether n's graph holds a mask whose length is unknown.
func hasMask(n *expr.Node) bool {
	return expr.HasUnknown(n.Shape) || hasMaskBelow(n, map[*expr.Node]bool{})
}

func hasMaskBelow(n *expr.Node, seen map[*expr.Node]bool) bool {
	if seen[n] {
		return false
	}
	seen[n] = true
	if n.Kind == expr.KMask {
		return true
	}
	for _, a := range n.Args {
		if hasMaskBelow(a, seen) {
			return true
		}
	}
	return false
}

// resolveMasks computes the masks in n's graph and rebuilds it with their lengths known: a
// mask becomes a take of the selected positions.
func resolveMasks(cfg computeConfig, n *expr.Node) (*expr.Node, error) {
	return rewriteMasks(n, func(m *expr.Node) (*expr.Node, error) { return takeMasked(cfg, m) })
}

// rewriteMasks rebuilds n's graph with each mask node replaced by replace's node (elementwise
// work and reductions above it re-derive their shapes).
func rewriteMasks(n *expr.Node, replace func(*expr.Node) (*expr.Node, error)) (*expr.Node, error) {
	if !hasMask(n) {
		return n, nil
	}
	memo := map[*expr.Node]*expr.Node{}
	var rebuild func(n *expr.Node) (*expr.Node, error)
	// operand undoes the broadcast view NewBinary and NewWhere put over an operand.
	operand := func(a *expr.Node) (*expr.Node, error) {
		if a.Kind == expr.KView && hasMask(a) {
			a = a.Args[0]
		}
		return rebuild(a)
	}
	rebuild = func(n *expr.Node) (*expr.Node, error) {
		if r, ok := memo[n]; ok {
			return r, nil
		}
		if !hasMask(n) {
			return n, nil
		}
		var r *expr.Node
		var err error
		switch n.Kind {
		case expr.KMask:
			r, err = replace(n)
		case expr.KUnary, expr.KCast:
			var a *expr.Node
			if a, err = operand(n.Args[0]); err == nil {
				c := *n
				c.Args, c.Shape, c.Chunks = []*expr.Node{a}, a.Shape, a.Chunks
				r = &c
			}
		case expr.KBinary, expr.KWhere:
			args := make([]*expr.Node, len(n.Args))
			for i, x := range n.Args {
				if args[i], err = operand(x); err != nil {
					return nil, err
				}
			}
			if n.Kind == expr.KBinary {
				r, err = expr.NewBinary(n.Op, args[0], args[1])
			} else {
				r, err = expr.NewWhere(args[0], args[1], args[2])
			}
			if err == nil {
				c := *r
				c.DType = n.DType // as decided when the graph was built
				r = &c
			}
		case expr.KReduce:
			var a *expr.Node
			if a, err = rebuild(n.Args[0]); err == nil {
				if r, err = expr.NewReduce(a, n.Red, n.Axes); err == nil {
					c := *r
					c.DType = n.DType
					r = &c
				}
			}
		default:
			err = expr.ErrUnknown("this operation", n.Shape)
		}
		if err != nil {
			return nil, err
		}
		memo[n] = r
		return r, nil
	}
	return rebuild(n)
}

// takeMasked computes mask node n's mask and returns the take of its selected positions from
// its operand, whose leading (masked) axes are flattened into one. The result's chunks follow
// the mask's chunks along its first axis (the number selected in each).
func takeMasked(cfg computeConfig, n *expr.Node) (*expr.Node, error) {
	x, m := n.Args[0], n.Args[1]
	r, mv, err := takeMaskedOnDevice(cfg, n)
	if err != nil || r != nil {
		return r, err
	}
	if mv.IsNil() {
		mc, err := computeHost(cfg, []*Array{{n: m}})
		if err != nil {
			return nil, fmt.Errorf("mask: %w", err)
		}
		if mv, err = mc[0].n.Values(); err != nil {
			return nil, fmt.Errorf("mask: %w", err)
		}
	}
	t0 := time.Now()
	pos := maskPositions(mv)
	var chunks []int
	row := int64(expr.Size(m.Shape[1:]))
	start, at := int64(0), 0
	for _, c := range m.Chunks[0] {
		// the positions selected in this chunk of rows
		end := (start + int64(c)) * row
		k := at + sort.Search(len(pos)-at, func(j int) bool { return pos[at+j] >= end })
		if k > at {
			chunks = append(chunks, k-at)
		}
		start, at = start+int64(c), k
	}
	if g, ok := cfg.sched.(*gpuSched); ok {
		g.libStep(fmt.Sprintf("mask: %d of %d positions listed on the host in %.3g s (the selection's length must be known)", len(pos), mv.Len(), time.Since(t0).Seconds()))
	}
	if len(chunks) == 0 {
		chunks = []int{0}
	}
	idx, err := expr.NewData(dtype.OfInt64(pos), []int{len(pos)}, [][]int{chunks})
	if err != nil {
		return nil, err
	}
	k := len(m.Shape)
	flat := append([]int{int(expr.Size(m.Shape))}, x.Shape[k:]...)
	xf, err := expr.NewReshape(x, flat, nil)
	if err != nil {
		return nil, err
	}
	return expr.NewTake(xf, idx, 0)
}

// maskedReduce rewrites a reduction of elementwise work on one mask over all of an array's
// axes (x.Mask(x > 1).Mean(), say) as a reduction of the same work on the whole array with
// the mask applied: Sum of Where(mask, e, 0); for Mean, the sum and the mask's count in one
// pass, as the two parts of one complex sum (Where(mask, e + 1i, 0): the real parts add the
// selected values, the imaginary parts count them, exactly below 2^53); Var and Std then
// add the squared deviations from that mean in a second pass. That fuses into one pass per
// chunk (two for Var and Std) and gathers nothing; the sum adds the selected values in chunk
// order, not in the order of the selection, so it may differ from NumPy's in the last bits
// (a sum of n terms: within about n ulp of the sum of their magnitudes). Min, Max and their
// arguments keep the gather (NumPy raises on an empty selection; a Where would not).
func maskedReduce(a *Array, r expr.Red, axes []int) (*Array, bool) {
	n := a.n
	if len(n.Shape) != 1 || n.Shape[0] != expr.Unknown || (len(axes) > 0 && !(len(axes) == 1 && (axes[0] == 0 || axes[0] == -1))) {
		return nil, false
	}
	if r != expr.Sum && r != expr.Mean && r != expr.Var && r != expr.Std {
		return nil, false
	}
	var mask *expr.Node
	ok := true
	var walk func(n *expr.Node)
	walk = func(n *expr.Node) {
		switch {
		case n.Kind == expr.KMask:
			if (mask != nil && mask != n) || len(n.Args[1].Shape) != len(n.Args[0].Shape) {
				ok = false
			}
			mask = n
		case n.Kind == expr.KUnary || n.Kind == expr.KBinary || n.Kind == expr.KCast || n.Kind == expr.KWhere || n.Kind == expr.KView:
			for _, x := range n.Args {
				walk(x)
			}
		case expr.HasUnknown(n.Shape):
			ok = false
		}
	}
	walk(n)
	if !ok || mask == nil {
		return nil, false
	}
	e, err := rewriteMasks(n, func(*expr.Node) (*expr.Node, error) { return mask.Args[0], nil })
	if err != nil {
		return nil, false
	}
	want, err := expr.NewReduce(n, r, nil) // the dtype the reduction of the selection has
	if err != nil {
		return nil, false
	}
	x := &Array{n: e}
	m := &Array{n: mask.Args[1]}
	if m.DType() != Bool {
		m = m.Ne(0)
	}
	if r == expr.Sum {
		return Where(m, x, 0).Sum().AsType(DType(want.DType)), true
	}
	var sum, count *Array
	if x.DType().IsComplex() {
		sum, count = Where(m, x, 0).Sum(), m.Sum()
	} else {
		// Integers too: NumPy's mean of integers adds them in float64. The imaginary unit is
		// a one-value array, broadcast (constants of a fused kernel are real).
		unit := FromSliceComplex128([]complex128{1i})
		both := Where(m, x.AsType(Complex128).Add(unit), 0).Sum()
		sum, count = Real(both), Imag(both)
	}
	mean := sum.Div(count)
	if r == expr.Mean {
		return mean.AsType(DType(want.DType)), true
	}
	d := x.Sub(mean)
	v := Where(m, d.Mul(d), 0).Sum().Div(count)
	if r == expr.Std {
		v = v.Sqrt()
	}
	return v.AsType(DType(want.DType)), true
}

// maskPositions returns the positions of m's nonzero values, in order: counted first, so the
// list is made once (growing it by appends took most of the time, 2e7 bools in 0.39 s), and
// for bools without a branch (a random mask mispredicts half of them).
func maskPositions(m dtype.Slice) []int64 {
	if m.DType() == dtype.Bool {
		b := m.Bytes()
		n := 0
		for _, v := range b {
			n += int((v | -v) >> 7) // 1 when v != 0
		}
		pos := make([]int64, n+1) // the last write may land one past the last position
		k := 0
		for i, v := range b {
			pos[k] = int64(i)
			k += int((v | -v) >> 7)
		}
		return pos[:n]
	}
	n := 0
	for i := range m.Len() {
		if m.Float(i) != 0 {
			n++
		}
	}
	pos := make([]int64, 0, n)
	for i := range m.Len() {
		if m.Float(i) != 0 {
			pos = append(pos, int64(i))
		}
	}
	return pos
}
