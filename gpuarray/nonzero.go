package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Nonzero returns, for each axis of x, the int64 indices along it of x's nonzero elements
// (NaN counts as nonzero) in row-major order, as the Array API's nonzero and numpy.nonzero.
// Their length is unknown until computed (Shape reports -1, as for Mask); each array computes
// x's mask once.
func Nonzero(x *Array) []*Array {
	flat, size, err := nonzeroFlat(x, "Nonzero")
	if err != nil {
		return []*Array{errArray(err)}
	}
	shape := x.Shape()
	out := make([]*Array, len(shape))
	pos := Arange(0, float64(size), 1, WithDType(Int64), ChunkSizes(flat.Chunks()[0]))
	stride := 1
	for d := len(shape) - 1; d >= 0; d-- {
		out[d] = Remainder(FloorDivide(pos, stride), shape[d]).AsType(Int64).Mask(flat)
		stride *= shape[d]
	}
	return out
}

// Argwhere returns the int64 indices of x's nonzero elements, one row of x.NDim() indices
// per element in row-major order, as numpy.argwhere (and dask's): its first axis is unknown
// until computed.
func Argwhere(x *Array) *Array {
	flat, size, err := nonzeroFlat(x, "Argwhere")
	if err != nil {
		return errArray(err)
	}
	shape := x.Shape()
	strides := make([]int64, len(shape))
	dims := make([]int64, len(shape))
	stride := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d], dims[d] = stride, int64(shape[d])
		stride *= int64(shape[d])
	}
	pos := Arange(0, float64(size), 1, WithDType(Int64), ChunkSizes(flat.Chunks()[0])).Reshape(size, 1)
	at := Remainder(FloorDivide(pos, FromSliceInt64(strides, Shape(len(shape)))), FromSliceInt64(dims, Shape(len(shape))))
	return at.AsType(Int64).Mask(flat)
}

// nonzeroFlat returns x's flattened nonzero mask and its length.
func nonzeroFlat(x *Array, name string) (*Array, int, error) {
	if err := x.Err(); err != nil {
		return nil, 0, err
	}
	if expr.HasUnknown(x.Shape()) {
		return nil, 0, expr.ErrUnknown(name, x.Shape())
	}
	if x.NDim() == 0 {
		return nil, 0, fmt.Errorf("%s: a 0-d array has no indices (reshape it to 1-d)", name)
	}
	flat := x.Ravel().Ne(0)
	if err := flat.Err(); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	return flat, flat.Shape()[0], nil
}
