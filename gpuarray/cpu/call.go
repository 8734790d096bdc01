package cpu

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// executeCall runs a task of a kernel with a library call: the fused values of the task's
// region, then the call.
func executeCall(ctx context.Context, t *plan.Task) (*plan.Output, error) {
	vals, ok := t.CallValues()
	if c := t.Kernel.Call; c.Fn == expr.FnBincount && !c.Weighted() {
		if ok {
			data, shape, err := applyBincount(c, vals, t.Shape) // reads vals, writes none
			if err != nil {
				return nil, fmt.Errorf("cpu: %w", err)
			}
			return &plan.Output{Shape: shape, Data: data}, nil
		}
		// Count each block of the fused values as it is computed.
		sub := *t
		sub.Kernel = t.Kernel.Elementwise()
		o, err := execute(ctx, &sub, newBinCounts(c.N))
		if err != nil {
			return nil, fmt.Errorf("cpu: %w", err)
		}
		return o, nil
	}
	if ok {
		vals = vals.Clone() // the call may overwrite its values; the block may be shared
	} else {
		sub := *t
		sub.Kernel = t.Kernel.Elementwise()
		o, err := Execute(ctx, &sub)
		if err != nil {
			return nil, err
		}
		vals = o.Data
	}
	data, shape, err := ApplyCall(ctx, fft.CPU, t.Kernel.Call, vals, t.Shape, t.Operands()...)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	o := &plan.Output{Shape: shape, Data: data}
	switch fn := t.Kernel.Call.Fn; {
	case fn.Matrix():
		o.Lib = fmt.Sprintf("%v on the CPU with %s", fn, MatrixLibrary())
	case fn == expr.FnMatMul:
		o.Lib = fmt.Sprintf("%v on the CPU with %s", fn, GemmLibrary())
	}
	return o, nil
}

// ApplyCall passes a block of values (row-major, shape) through a library call, with its
// transforms computed by tr (fft.CPU here; a GPU's from package cuda/cufft), and returns the
// result and its shape. operands are the values of the call's further operands (the
// right-hand sides of a solve given apart, plan.Task.Operands). It may overwrite in.
func ApplyCall(ctx context.Context, tr fft.Transforms, c *plan.CallStep, in dtype.Slice, shape []int, operands ...dtype.Slice) (dtype.Slice, []int, error) {
	if c.Fn.Matrix() {
		return applyMatrix(ctx, c, in, shape, operands)
	}
	if c.Fn == expr.FnMatMul {
		return applyMatMul(ctx, c, in, shape, operands)
	}
	if c.Fn.Sorts() {
		return applySort(ctx, c, in, shape)
	}
	if c.Fn.Scans() {
		return applyScan(c, in, shape)
	}
	if c.Fn == expr.FnBincount {
		return applyBincount(c, in, shape)
	}
	if c.Axis < 0 || c.Axis >= len(shape) {
		return dtype.Slice{}, nil, fmt.Errorf("%v: axis %d of a block of shape %s", c.Fn, c.Axis, expr.ShapeString(shape))
	}
	if shape[c.Axis] < c.InLen() {
		in, shape = padAxis(in, shape, c.Axis, c.InLen())
	}
	l, err := fft.Split(shape, c.Axis)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	out := c.OutShape(shape)
	var res dtype.Slice
	switch c.Fn {
	case expr.FnFFT, expr.FnIFFT:
		x := dtype.Convert(in, dtype.Complex128) // in is the task's own buffer: transform in place
		err = tr.Complex(ctx, x.Complex128s(), l, c.Fn == expr.FnIFFT, c.Scale)
		res = x
	case expr.FnRFFT:
		var y []complex128
		y, err = tr.Real(ctx, dtype.Convert(in, dtype.Float64).Float64s(), l, c.Scale)
		res = complexSlice(y)
	case expr.FnIHFFT:
		var y []complex128
		if y, err = tr.Real(ctx, dtype.Convert(in, dtype.Float64).Float64s(), l, c.Scale); err == nil {
			conj(y)
		}
		res = complexSlice(y)
	case expr.FnIRFFT, expr.FnHFFT:
		x := dtype.Convert(in, dtype.Complex128)
		if c.Fn == expr.FnHFFT {
			if x.DType() == in.DType() {
				x = x.Clone() // conjugated below: not the caller's values
			}
			conj(x.Complex128s())
		}
		var y []float64
		y, err = tr.InverseReal(ctx, x.Complex128s(), l, c.N, c.Scale)
		res = dtype.OfFloat64(y)
	default:
		return dtype.Slice{}, nil, fmt.Errorf("unknown library call %v", c.Fn)
	}
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	if res.DType() != c.DType {
		res = dtype.Convert(res, c.DType)
	}
	return res, out, nil
}

func complexSlice(v []complex128) dtype.Slice {
	s, _ := dtype.Of(v) // a []complex128 is always a dtype slice
	return s
}

func conj(x []complex128) {
	for i, v := range x {
		x[i] = complex(real(v), -imag(v))
	}
}

// padAxis returns the block (row-major, shape) with its axis extended to n by zeros.
func padAxis(in dtype.Slice, shape []int, axis, n int) (dtype.Slice, []int) {
	l, _ := fft.Split(shape, axis)
	out := append([]int(nil), shape...)
	out[axis] = n
	res := dtype.Make(in.DType(), l.Outer*n*l.Inner)
	run := l.N * l.Inner // one outer index's values are contiguous
	for o := 0; o < l.Outer; o++ {
		dtype.Copy(res.Slice(o*n*l.Inner, o*n*l.Inner+run), in.Slice(o*run, (o+1)*run))
	}
	return res, out
}
