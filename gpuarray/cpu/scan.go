package cpu

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// applyScan runs a cumulative sum or product, or a product, along c.Axis of a block (row-major,
// shape). Values are converted to the result's dtype first and accumulated there in order,
// as NumPy's add.accumulate and multiply.reduce do, so float32 sums round as NumPy's and
// integers wrap at their width.
func applyScan(c *plan.CallStep, in dtype.Slice, shape []int) (dtype.Slice, []int, error) {
	l, err := fft.Split(shape, c.Axis)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	x := dtype.Convert(in, c.DType)
	if x.DType() == in.DType() {
		x = x.Clone()
	}
	out := c.OutShape(shape)
	prod := c.Fn != expr.FnCumSum
	last := c.Fn == expr.FnProd
	switch c.DType {
	case dtype.Float64:
		x = dtype.OfFloat64(scan(x.Float64s(), l, prod, last))
	case dtype.Float32:
		x = mustOf(scan(x.Float32s(), l, prod, last))
	case dtype.Int64:
		x = mustOf(scan(x.Int64s(), l, prod, last))
	case dtype.Uint64:
		x = mustOf(scan(x.Uint64s(), l, prod, last))
	case dtype.Complex128:
		x = mustOf(scan(x.Complex128s(), l, prod, last))
	case dtype.Complex64:
		x = mustOf(scan(x.Complex64s(), l, prod, last))
	default:
		return dtype.Slice{}, nil, fmt.Errorf("%v of %v values is not supported", c.Fn, c.DType)
	}
	return x, out, nil
}

func mustOf[T any](v []T) dtype.Slice {
	s, _ := dtype.Of(v) // v is one of the dtype's element types
	return s
}

// scan accumulates each line of x (l.Outer × l.N × l.Inner) in place, or (last) returns the
// line totals (l.Outer × l.Inner).
func scan[T int64 | uint64 | float32 | float64 | complex64 | complex128](x []T, l fft.Lines, prod, last bool) []T {
	for o := 0; o < l.Outer; o++ {
		base := o * l.N * l.Inner
		for k := 1; k < l.N; k++ {
			row, prev := x[base+k*l.Inner:base+(k+1)*l.Inner], x[base+(k-1)*l.Inner:base+k*l.Inner]
			if prod {
				for i := range row {
					row[i] = prev[i] * row[i]
				}
			} else {
				for i := range row {
					row[i] = prev[i] + row[i]
				}
			}
		}
	}
	if !last {
		return x
	}
	res := make([]T, l.Outer*l.Inner)
	for o := 0; o < l.Outer; o++ {
		copy(res[o*l.Inner:(o+1)*l.Inner], x[(o*l.N+l.N-1)*l.Inner:(o*l.N+l.N)*l.Inner])
	}
	return res
}
