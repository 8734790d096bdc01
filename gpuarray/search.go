package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// Searchsorted returns, for each value of x2, the int64 index where it would be inserted into
// the ascending 1-d x1 to keep it sorted (the Array API's searchsorted and numpy.searchsorted):
// before equal values for side "left" (or ""), after them for "right"; NaN sorts last as Sort
// puts it. The result has x2's shape. It is a fused count (x1 < v, or x1 <= v, summed over
// x1), so it runs wherever Compute runs, in len(x1)*len(x2) comparisons without materializing
// them: fine for a sorted array of up to a few thousand values; a binary search as a library
// call is still to come.
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
	v := ExpandDims(x2, -1) // (..., 1) against x1's (n,): one count per value
	var in *Array
	switch side {
	case "left", "":
		// x1[i] < v in the order with NaN last: a NaN value goes after every number.
		in = LogicalOr(x1.Lt(v), LogicalAnd(IsNaN(v), LogicalNot(IsNaN(x1))))
	case "right":
		in = LogicalOr(x1.Le(v), IsNaN(v))
	default:
		return errArray(fmt.Errorf("Searchsorted: side %q is not \"left\" or \"right\"", side))
	}
	out := in.Sum(-1).AsType(Int64)
	if err := out.Err(); err != nil {
		return errArray(fmt.Errorf("Searchsorted: %w", err))
	}
	return out
}
