package cufft

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// A program that imports this package runs the Fourier transforms of planned library calls on
// GPUs (cuda.RunPlan); without cuFFT, cuda.Runs says why and they run on the CPU.
func init() {
	cuda.RegisterLibrary("cuFFT", runHost, runDevice, Load, func(fn expr.CallFn) bool { return fn.Transform() })
	cuda.RegisterHostTrips("cuFFT", hostTrip)
}

// hostTrip is runDevice's rule (cuda.HostTripFunc): why it copies the fused values of c to host
// memory before cuFFT transforms them, or "" when cuFFT reads them on the device. Every
// transform reads them there now: padding, widening real values to complex ones, conjugating
// (hfft) and the imaginary parts NumPy ignores (irfft) are done by a generated kernel
// (cuda.PrepareLines) as the host path does them, so cuFFT reads the same words.
func hostTrip(c *plan.CallStep, dt dtype.DType, shape []int) string {
	if c.Axis < 0 || c.Axis >= len(shape) {
		return fmt.Sprintf("%v: axis %d of a block of shape %v", c.Fn, c.Axis, shape)
	}
	if !c.Fn.Transform() {
		return fmt.Sprintf("%v is no transform", c.Fn)
	}
	return ""
}

// runHost transforms a block of values in host memory on d.
func runHost(ctx context.Context, d *cuda.Device, c *plan.CallStep, vals dtype.Slice, shape []int, _ []dtype.Slice) (dtype.Slice, []int, error) {
	return cpu.ApplyCall(ctx, OnDevice(d), c, vals, shape)
}

// runDevice transforms a block of values that a fused kernel left on d (float64 words, complex
// values as pairs of them, see cuda.EncodeWords), reading them there: cuFFT gets the words the
// host path would upload (see hostTrip), and only the result crosses to the host.
func runDevice(ctx context.Context, d *cuda.Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, dops []cuda.Operand) (dtype.Slice, []int, error) {
	ops, err := cuda.HostValues(dops)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	if why := hostTrip(c, dt, shape); why != "" {
		words := make([]float64, int(expr.Size(shape))*cuda.Words(dt))
		if err := d.Do(ctx, func() error { return d.CopyToHost(words, ptr) }); err != nil {
			return dtype.Slice{}, nil, fmt.Errorf("cufft: copy the values to the host: %w", err)
		}
		return runHost(ctx, d, c, cuda.DecodeWords(words, dt), shape, ops)
	}
	padded := append([]int(nil), shape...)
	padded[c.Axis] = max(shape[c.Axis], c.InLen()) // as cpu.ApplyCall pads
	l, err := fft.Split(padded, c.Axis)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	lay := cuda.LineLayout{Outer: int64(l.Outer), Inner: int64(l.Inner), SrcLen: int64(shape[c.Axis]), Len: int64(l.N), SrcComplex: dt.IsComplex()}
	var res dtype.Slice
	switch c.Fn {
	case expr.FnFFT, expr.FnIFFT:
		lay.DstComplex = true
		var y []complex128
		if y, err = ComplexOnDevice(ctx, d, ptr, lay, l, c.Fn == expr.FnIFFT, c.Scale); err == nil {
			res = dtype.OfComplex128(y)
		}
	case expr.FnRFFT, expr.FnIHFFT:
		var y []complex128
		if !lay.SrcComplex && lay.SrcLen == lay.Len {
			y, err = RealOnDevice(ctx, d, ptr, l, c.Scale)
		} else {
			y, err = realPrepared(ctx, d, ptr, lay, l, c.Scale)
		}
		if err == nil && c.Fn == expr.FnIHFFT {
			for i, v := range y {
				y[i] = complex(real(v), -imag(v))
			}
		}
		res = dtype.OfComplex128(y)
	case expr.FnIRFFT, expr.FnHFFT:
		lay.DstComplex, lay.Conj, lay.ZeroEnds = true, c.Fn == expr.FnHFFT, true
		if c.N%2 == 0 {
			lay.Last = lay.Len - 1
		}
		var y []float64
		if y, err = InverseRealOnDevice(ctx, d, ptr, lay, l, c.N, c.Scale); err == nil {
			res = dtype.OfFloat64(y)
		}
	default:
		return dtype.Slice{}, nil, fmt.Errorf("cufft: %v is no transform", c.Fn)
	}
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	if res.DType() != c.DType {
		res = dtype.Convert(res, c.DType)
	}
	return res, c.OutShape(padded), nil
}

// OnDevice returns the transforms of package fft computed on d.
func OnDevice(d *cuda.Device) fft.Transforms { return device{d} }

type device struct{ d *cuda.Device }

func (g device) Complex(ctx context.Context, x []complex128, l fft.Lines, inverse bool, scale float64) error {
	return Complex(ctx, g.d, x, l, inverse, scale)
}

func (g device) Real(ctx context.Context, x []float64, l fft.Lines, scale float64) ([]complex128, error) {
	return Real(ctx, g.d, x, l, scale)
}

func (g device) InverseReal(ctx context.Context, x []complex128, l fft.Lines, n int, scale float64) ([]float64, error) {
	return InverseReal(ctx, g.d, x, l, n, scale)
}
