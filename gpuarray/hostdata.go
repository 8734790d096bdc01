package gpuarray

import (
	"fmt"
	"runtime"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Host data in and out, one function per Go element type (the exported API has no generics:
// cells cannot call them). FromSlice takes []float64; the others are named after their dtype.
// Each FromSliceX copies data into an array of that dtype (WithDType converts it further, by
// AsType's rules); each ToSliceX computes the array and returns a copy of its values
// converted to that type by AsType's rules.

func fromTyped(what string, data dtype.Slice, opts []ArrayOption) *Array {
	shape, chunks, dt, err := resolveDT(what, []int{data.Len()}, data.DType(), opts)
	if err != nil {
		return errArray(err)
	}
	return wrap(expr.NewData(dtype.Convert(data.Clone(), dt), shape, chunks))
}

// FromSliceInt64 returns an int64 array over a copy of data (row-major).
func FromSliceInt64(data []int64, opts ...ArrayOption) *Array {
	return fromTyped("FromSliceInt64", dtype.OfInt64(data), opts)
}

// FromSliceInt32 returns an int32 array over a copy of data (row-major).
func FromSliceInt32(data []int32, opts ...ArrayOption) *Array {
	s, _ := dtype.Of(data)
	return fromTyped("FromSliceInt32", s, opts)
}

// FromSliceUint8 returns a uint8 array over a copy of data (row-major), one byte per element.
func FromSliceUint8(data []uint8, opts ...ArrayOption) *Array {
	s, _ := dtype.Of(data)
	return fromTyped("FromSliceUint8", s, opts)
}

// FromSliceBool returns a bool array over a copy of data (row-major).
func FromSliceBool(data []bool, opts ...ArrayOption) *Array {
	return fromTyped("FromSliceBool", dtype.OfBool(data), opts)
}

// FromSliceFloat32 returns a float32 array over a copy of data (row-major); FromSlice32 is
// its older name.
func FromSliceFloat32(data []float32, opts ...ArrayOption) *Array {
	return fromTyped("FromSliceFloat32", dtype.OfFloat32(data), opts)
}

// FromSliceComplex128 returns a complex128 array over a copy of data (row-major).
func FromSliceComplex128(data []complex128, opts ...ArrayOption) *Array {
	s, _ := dtype.Of(data)
	return fromTyped("FromSliceComplex128", s, opts)
}

// FromSlice2D returns a 2-d float64 array over a copy of rows, which must all have the same
// length.
func FromSlice2D(rows [][]float64, opts ...ArrayOption) *Array {
	cols := 0
	if len(rows) > 0 {
		cols = len(rows[0])
	}
	flat := make([]float64, 0, len(rows)*cols)
	for i, r := range rows {
		if len(r) != cols {
			return errArray(fmt.Errorf("FromSlice2D: row %d has %d values, row 0 has %d", i, len(r), cols))
		}
		flat = append(flat, r...)
	}
	shape, chunks, dt, err := resolveDT("FromSlice2D", []int{len(rows), cols}, Float64, opts)
	if err != nil {
		return errArray(err)
	}
	return wrap(expr.NewData(dtype.Convert(dtype.OfFloat64(flat), dt), shape, chunks))
}

// values computes a and returns its values converted to dt (a copy, never the array's own
// memory).
func (a *Array) values(dt DType, opts []ComputeOption) (dtype.Slice, error) {
	c, err := a.computeHost(opts)
	if err != nil {
		return dtype.Slice{}, err
	}
	// A held array's host copy lives as long as its buffer (engine.HostBuffer): c keeps it.
	defer runtime.KeepAlive(c)
	v, err := c.n.Values()
	if err != nil {
		return dtype.Slice{}, err
	}
	if v.DType() == dt {
		return v.Clone(), nil
	}
	return dtype.Convert(v, dt), nil
}

// ToSliceInt64 computes the array and returns its elements as int64s, row-major.
func (a *Array) ToSliceInt64(opts ...ComputeOption) ([]int64, error) {
	v, err := a.values(Int64, opts)
	return v.Int64s(), err
}

// ToSliceInt32 computes the array and returns its elements as int32s, row-major.
func (a *Array) ToSliceInt32(opts ...ComputeOption) ([]int32, error) {
	v, err := a.values(Int32, opts)
	return v.Int32s(), err
}

// ToSliceUint8 computes the array and returns its elements as bytes, row-major.
func (a *Array) ToSliceUint8(opts ...ComputeOption) ([]uint8, error) {
	v, err := a.values(Uint8, opts)
	return v.Uint8s(), err
}

// ToSliceBool computes the array and returns its elements as bools (nonzero is true).
func (a *Array) ToSliceBool(opts ...ComputeOption) ([]bool, error) {
	v, err := a.values(Bool, opts)
	return v.Bools(), err
}

// ToSliceFloat32 computes the array and returns its elements as float32s, row-major.
func (a *Array) ToSliceFloat32(opts ...ComputeOption) ([]float32, error) {
	v, err := a.values(Float32, opts)
	return v.Float32s(), err
}

// ToSliceComplex128 computes the array and returns its elements as complex128s, row-major.
func (a *Array) ToSliceComplex128(opts ...ComputeOption) ([]complex128, error) {
	v, err := a.values(Complex128, opts)
	return v.Complex128s(), err
}

// ToSlice2D computes a 2-d array and returns its rows as float64s.
func (a *Array) ToSlice2D(opts ...ComputeOption) ([][]float64, error) {
	if err := a.Err(); err != nil {
		return nil, err
	}
	if len(a.n.Shape) != 2 {
		return nil, fmt.Errorf("ToSlice2D of an array of shape %s: want 2 axes", expr.ShapeString(a.n.Shape))
	}
	v, err := a.values(Float64, opts)
	if err != nil {
		return nil, err
	}
	flat, cols := v.Float64s(), a.n.Shape[1]
	rows := make([][]float64, a.n.Shape[0])
	for i := range rows {
		rows[i] = flat[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return rows, nil
}
