package expr

import (
	"fmt"
	"slices"
)

// Integer and boolean indexing. A take reads its operand at positions an integer array gives;
// the planner computes both first and gathers each task's box of the result on the host as the
// task's input block, so backends only read ordinary blocks. A boolean mask gives an array
// whose length is unknown (-1, printed as nan, as dask's chunks of NaN size) until the mask is
// computed.

// Unknown is the length of an axis whose length is not known before computing (a mask).
const Unknown = -1

// HasUnknown reports whether shape has an axis of unknown length.
func HasUnknown(shape []int) bool { return slices.Contains(shape, Unknown) }

// ErrUnknown is the error of an operation that needs a length a boolean mask leaves unknown.
func ErrUnknown(what string, shape []int) error {
	return fmt.Errorf("%s needs the shape of an array of shape %s, whose length depends on a boolean mask: call ComputeChunkSizes (or Compute) first", what, ShapeString(shape))
}

func axisOf(what string, axis, r int) (int, error) {
	k := axis
	if k < 0 {
		k += r
	}
	if k < 0 || k >= r {
		return 0, fmt.Errorf("%s: axis %d out of range for %d axes", what, axis, r)
	}
	return k, nil
}

// NewTake indexes x along axis by the 1-d integer array idx (negative indices count from the
// end): the result has idx's length and chunks on that axis.
func NewTake(x, idx *Node, axis int) (*Node, error) {
	if HasUnknown(x.Shape) || HasUnknown(idx.Shape) {
		return nil, ErrUnknown("take", x.Shape)
	}
	ax, err := axisOf("take", axis, len(x.Shape))
	if err != nil {
		return nil, err
	}
	if len(idx.Shape) != 1 {
		return nil, fmt.Errorf("take: indices of shape %s, want 1-d", ShapeString(idx.Shape))
	}
	if x.Shape[ax] == 0 && idx.Shape[0] > 0 {
		return nil, fmt.Errorf("take: cannot take from an empty axis %d (shape %s)", ax, ShapeString(x.Shape))
	}
	shape := slices.Clone(x.Shape)
	shape[ax] = idx.Shape[0]
	chunks := cloneChunks(x.Chunks)
	chunks[ax] = slices.Clone(idx.Chunks[0])
	return &Node{Kind: KTake, DType: x.DType, Shape: shape, Chunks: chunks, Args: []*Node{x, idx}, Axes: []int{ax}}, nil
}

// NewTakeAlong indexes x along axis by idx element by element, as NumPy's take_along_axis:
// idx has x's rank and x's lengths on the other axes; the result has idx's shape and chunks.
func NewTakeAlong(x, idx *Node, axis int) (*Node, error) {
	if HasUnknown(x.Shape) || HasUnknown(idx.Shape) {
		return nil, ErrUnknown("take_along_axis", x.Shape)
	}
	ax, err := axisOf("take_along_axis", axis, len(x.Shape))
	if err != nil {
		return nil, err
	}
	if len(idx.Shape) != len(x.Shape) {
		return nil, fmt.Errorf("take_along_axis: indices of shape %s for an array of shape %s: ranks differ", ShapeString(idx.Shape), ShapeString(x.Shape))
	}
	for k := range x.Shape {
		if k != ax && idx.Shape[k] != x.Shape[k] {
			return nil, fmt.Errorf("take_along_axis: indices of shape %s for an array of shape %s differ on axis %d", ShapeString(idx.Shape), ShapeString(x.Shape), k)
		}
	}
	return &Node{Kind: KTakeAlong, DType: x.DType, Shape: slices.Clone(idx.Shape), Chunks: cloneChunks(idx.Chunks), Args: []*Node{x, idx}, Axes: []int{ax}}, nil
}

// NewMask selects the elements of x where m is nonzero (true); m has the shape of x's leading
// axes, which the result replaces by one axis of unknown length, as NumPy's x[m].
func NewMask(x, m *Node) (*Node, error) {
	if HasUnknown(x.Shape) || HasUnknown(m.Shape) {
		return nil, ErrUnknown("a mask", x.Shape)
	}
	k := len(m.Shape)
	if k == 0 || k > len(x.Shape) || !slices.Equal(m.Shape, x.Shape[:k]) {
		return nil, fmt.Errorf("mask of shape %s does not match the leading axes of an array of shape %s", ShapeString(m.Shape), ShapeString(x.Shape))
	}
	shape := append([]int{Unknown}, x.Shape[k:]...)
	chunks := append([][]int{{Unknown}}, cloneChunks(x.Chunks[k:])...)
	return &Node{Kind: KMask, DType: x.DType, Shape: shape, Chunks: chunks, Args: []*Node{x, m}}, nil
}

// NewSearch gives, for each value of v, the int64 position where it would be inserted into the
// ascending 1-d sorted to keep it sorted, as numpy.searchsorted: before equal values, or after
// them with right; NaN sorts last. The result has v's shape and chunks. The planner computes
// sorted first; v is fused into the search's kernel (a binary search per value, plan.Search).
func NewSearch(sorted, v *Node, right bool) (*Node, error) {
	if HasUnknown(sorted.Shape) || HasUnknown(v.Shape) {
		return nil, ErrUnknown("searchsorted", v.Shape)
	}
	if len(sorted.Shape) != 1 {
		return nil, fmt.Errorf("searchsorted: the sorted array must be 1-d, not of shape %s", ShapeString(sorted.Shape))
	}
	side := 0
	if right {
		side = 1
	}
	return &Node{Kind: KSearch, DType: Int64, Shape: slices.Clone(v.Shape), Chunks: cloneChunks(v.Chunks), Args: []*Node{sorted, v}, Axes: []int{side}}, nil
}
