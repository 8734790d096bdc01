package gpuarray

import (
	"fmt"

	_ "github.com/gpunotes/gpunotes/gpuarray/cuda/devsort" // sorts on GPUs
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// SortOption adjusts Sort and Argsort (the Array API's keyword arguments): Descending.
type SortOption func(*sortConfig)

type sortConfig struct {
	desc bool
	keep []int // positions of the sorted axis kept (expr.Call.Keep); nil: all
}

// keepSorted keeps only positions keep of the sorted axis (TopK, quantiles): the rest never
// leaves the device that sorted it.
func keepSorted(keep []int) SortOption { return func(c *sortConfig) { c.keep = keep } }

// Descending sorts from the largest value down (the Array API's descending=True): NaN first,
// equal values in their original order, as numpy.flip(numpy.sort(numpy.flip(x))).
func Descending() SortOption { return func(c *sortConfig) { c.desc = true } }

// Sort returns x sorted along axis (negative: from the end), as the Array API's sort and
// numpy.sort(kind="stable"): ascending with NaN last, or Descending. The axis is brought into
// one chunk, as dask does for its transforms; the other axes keep their chunks. Values keep
// their dtype (integers are sorted exactly); complex values are refused. On a GPU scheduler
// the lines are sorted on the device (a stable radix sort, kernels/sort.cu), with the same
// result bit for bit.
func Sort(x *Array, axis int, opts ...SortOption) *Array {
	return sortCall(x, axis, false, "Sort", opts)
}

// Sort returns a sorted along an axis (see the function), as ndarray.sort: args are the axis
// (default -1, the last) and SortOptions.
func (a *Array) Sort(args ...any) *Array { return sortMethod(a, false, "Sort", args) }

// Argsort returns the int64 indices that sort x along axis (the Array API's argsort, stable):
// equal values keep their index order, NaN sorts last (first with Descending).
func Argsort(x *Array, axis int, opts ...SortOption) *Array {
	return sortCall(x, axis, true, "Argsort", opts)
}

// Argsort returns the indices that sort a along an axis (see the function), as
// ndarray.argsort: args are the axis (default -1, the last) and SortOptions.
func (a *Array) Argsort(args ...any) *Array { return sortMethod(a, true, "Argsort", args) }

// TopK returns the k largest values of x along axis, largest first, or for k < 0 the -k
// smallest, smallest first, as dask's topk (NaN counts as the largest value).
func TopK(x *Array, k, axis int) *Array { return topK(x, k, axis, false, "TopK") }

// ArgTopK returns the int64 indices of TopK's values along axis (dask's argtopk); among equal
// values the lower index comes first.
func ArgTopK(x *Array, k, axis int) *Array { return topK(x, k, axis, true, "ArgTopK") }

func topK(x *Array, k, axis int, arg bool, name string) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	r := x.n.Shape
	ax, err := sortAxis(name, r, axis)
	if err != nil {
		return errArray(err)
	}
	n := k
	if k < 0 {
		n = -k
	}
	if k == 0 || n > r[ax] {
		return errArray(fmt.Errorf("%s: k = %d for an axis of length %d (want 1 <= |k| <= %d)", name, k, r[ax], r[ax]))
	}
	keep := make([]int, n)
	for i := range keep {
		keep[i] = i
	}
	opts := []SortOption{keepSorted(keep)}
	if k > 0 {
		opts = append(opts, Descending())
	}
	return sortCall(x, ax, arg, name, opts)
}

func sortAxis(name string, shape []int, axis int) (int, error) {
	r := len(shape)
	if r == 0 {
		return 0, fmt.Errorf("%s: a 0-d array has no axis to sort", name)
	}
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return 0, fmt.Errorf("%s: axis %d out of range for shape %s", name, axis, expr.ShapeString(shape))
	}
	return ax, nil
}

func sortCall(x *Array, axis int, arg bool, name string, opts []SortOption) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	var c sortConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	a := x.n
	if expr.HasUnknown(a.Shape) {
		return errArray(expr.ErrUnknown(name, a.Shape))
	}
	ax, err := sortAxis(name, a.Shape, axis)
	if err != nil {
		return errArray(err)
	}
	if a.DType.Kind() == dtype.KindComplex {
		return errArray(fmt.Errorf("%s: %v values have no order (sort their real parts or absolute values)", name, a.DType))
	}
	if a.Shape[ax] == 0 {
		if arg {
			return x.AsType(Int64)
		}
		return x
	}
	if len(a.Chunks[ax]) != 1 {
		chunks := make([][]int, len(a.Shape))
		copy(chunks, a.Chunks)
		chunks[ax] = []int{a.Shape[ax]}
		if a, err = expr.NewRechunk(a, chunks); err != nil {
			return errArray(fmt.Errorf("%s: %w", name, err))
		}
	}
	fn, dt := expr.FnSort, a.DType
	switch {
	case arg && c.desc:
		fn, dt = expr.FnArgsortDesc, dtype.Int64
	case arg:
		fn, dt = expr.FnArgsort, dtype.Int64
	case c.desc:
		fn = expr.FnSortDesc
	}
	out, err := expr.NewCall(a, expr.Call{Fn: fn, Axis: ax, N: a.Shape[ax], Keep: c.keep}, dt)
	if err != nil {
		return errArray(fmt.Errorf("%s: %w", name, err))
	}
	return wrap(out, nil)
}
