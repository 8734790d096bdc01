package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Searchsorted returns, for each value of x2, the int64 index where it would be inserted into
// the ascending 1-d x1 to keep it sorted (the Array API's searchsorted and numpy.searchsorted):
// before equal values for side "left" (or ""), after them for "right"; NaN sorts last as Sort
// puts it. The result has x2's shape and chunks. x1 is computed first and read whole by every
// task (in place where a GPU holds it in one chunk, as a kept Sort result; held in several, it
// goes through host memory, which Path says); x2 is fused into
// the search's kernel like any operand, a binary search per value (log2(len(x1)) comparisons)
// in x1's and x2's common dtype, as NumPy compares: exactly in int64 or uint64 for integers,
// in float64 otherwise. On a GPU the searches run in the fused
// kernel and an array result stays on the device; on the CPU and cluster workers inside the
// tasks, with the same positions.
func Searchsorted(x1, x2 *Array, side string) *Array {
	for _, x := range []*Array{x1, x2} {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
	}
	if r := x1.n.Shape; len(r) != 1 {
		return errArray(fmt.Errorf("Searchsorted: the sorted array must be 1-d, not of shape %v", r))
	}
	for _, x := range []*Array{x1, x2} {
		if x.n.DType.Kind() == dtype.KindComplex {
			return errArray(fmt.Errorf("Searchsorted: %v values have no order", x.n.DType))
		}
	}
	var right bool
	switch side {
	case "left", "":
	case "right":
		right = true
	default:
		return errArray(fmt.Errorf("Searchsorted: side %q is not \"left\" or \"right\"", side))
	}
	out := wrap(expr.NewSearch(x1.n, x2.n, right))
	if err := out.Err(); err != nil {
		return errArray(fmt.Errorf("Searchsorted: %w", err))
	}
	return out
}
