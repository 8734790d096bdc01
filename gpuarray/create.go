package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Creation functions of the Array API beyond Full, Zeros, Ones, Arange and Linspace. Like those
// they are lazy: Eye, Tril and Triu are elementwise expressions of element indices, so they
// fuse with what follows and never hold a dense mask.

// Empty returns an array of the given shape. gpuarray has no uninitialized memory: its
// elements are zeros.
func Empty(opts ...ArrayOption) *Array { return Full(0, opts...) }

// likeOptions returns a's shape, chunks and dtype as options, followed by opts (which win;
// a Shape in opts drops a's chunks).
func likeOptions(a *Array, opts []ArrayOption) []ArrayOption {
	s := spec{}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	base := []ArrayOption{WithDType(a.DType())}
	if !s.hasShape {
		base = append(base, Shape(a.Shape()...))
		if !s.hasChunks {
			base = append(base, ChunkSizes(a.Chunks()...))
		}
	}
	return append(base, opts...)
}

// FullLike returns an array of a's shape, chunks and dtype whose elements are all v; opts
// override them.
func FullLike(a *Array, v float64, opts ...ArrayOption) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	return Full(v, likeOptions(a, opts)...)
}

// ZerosLike returns zeros shaped like a.
func ZerosLike(a *Array, opts ...ArrayOption) *Array { return FullLike(a, 0, opts...) }

// OnesLike returns ones shaped like a.
func OnesLike(a *Array, opts ...ArrayOption) *Array { return FullLike(a, 1, opts...) }

// EmptyLike returns an array shaped like a (zeros; see Empty).
func EmptyLike(a *Array, opts ...ArrayOption) *Array { return FullLike(a, 0, opts...) }

// indexAlong returns the index of each element of x along axis, in x's dtype.
func indexAlong(x *Array, axis int) *Array {
	return wrap(expr.IndexAlong(x.n.Shape, x.n.Chunks, axis, x.n.DType))
}

// eye returns the nRows x nCols array with ones on diagonal k (0 the main one, k > 0 above
// it, k < 0 below) and zeros elsewhere.
func eye(nRows, nCols, k int, opts ...ArrayOption) *Array {
	if nRows < 0 || nCols < 0 {
		return errArray(fmt.Errorf("Eye: negative size %d x %d", nRows, nCols))
	}
	ones := Full(1, append([]ArrayOption{Shape(nRows, nCols)}, opts...)...)
	if err := ones.Err(); err != nil {
		return errorf("Eye", err)
	}
	if len(ones.n.Shape) != 2 {
		return errArray(fmt.Errorf("Eye: shape %s is not %d x %d", expr.ShapeString(ones.n.Shape), nRows, nCols))
	}
	return Where(indexAlong(ones, 0).Add(k).Eq(indexAlong(ones, 1)), ones, ZerosLike(ones))
}

// triangle keeps the elements of x's last two axes where col - row compares with k as keep
// says, and zeros the others.
func triangle(what string, x *Array, k int, lower bool) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	r := x.NDim()
	if r < 2 {
		return errArray(fmt.Errorf("%s: array of shape %s has fewer than 2 axes", what, expr.ShapeString(x.n.Shape)))
	}
	d := indexAlong(x, r-1).Sub(indexAlong(x, r-2)) // col - row
	keep := d.Le(k)
	if !lower {
		keep = d.Ge(k)
	}
	return Where(keep, x, ZerosLike(x))
}

// Tril returns x with the elements above diagonal k (default 0) of its last two axes set to zero.
func Tril(x *Array, k ...int) *Array { return triangle("Tril", x, offset(k), true) }

// Triu returns x with the elements below diagonal k (default 0) of its last two axes set to zero.
func Triu(x *Array, k ...int) *Array { return triangle("Triu", x, offset(k), false) }

// Meshgrid returns coordinate arrays from 1-d arrays with Cartesian ("xy") indexing, as NumPy's
// default: for inputs of lengths m and n the outputs have shape (n, m). Each output is a view
// of its input (nothing is copied); chunks are the inputs' chunks.
func Meshgrid(xs ...*Array) []*Array { return meshgrid("Meshgrid", true, xs) }

// MeshgridIJ is Meshgrid with matrix ("ij") indexing: outputs have shape (m, n).
func MeshgridIJ(xs ...*Array) []*Array { return meshgrid("MeshgridIJ", false, xs) }

func meshgrid(what string, xy bool, xs []*Array) []*Array {
	if err := firstErr(xs); err != nil {
		return []*Array{errArray(err)}
	}
	r := len(xs)
	pos := make([]int, r) // output axis of input i
	for i := range pos {
		pos[i] = i
	}
	if xy && r >= 2 {
		pos[0], pos[1] = 1, 0
	}
	shape := make([]int, r)
	chunks := make([][]int, r)
	for i, x := range xs {
		if x.NDim() != 1 {
			return []*Array{errArray(fmt.Errorf("%s: input %d has shape %s, not 1-d", what, i, expr.ShapeString(x.n.Shape)))}
		}
		shape[pos[i]] = x.n.Shape[0]
		chunks[pos[i]] = x.n.Chunks[0]
	}
	out := make([]*Array, r)
	for i, x := range xs {
		var others []int
		for k := 0; k < r; k++ {
			if k != pos[i] {
				others = append(others, k)
			}
		}
		v, err := expr.NewExpandDims(x.n, others)
		if err != nil {
			return []*Array{errorf(what, err)}
		}
		out[i] = wrap(expr.BroadcastTo(v, shape, chunks))
	}
	return out
}
