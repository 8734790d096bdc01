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
// memory before cuFFT transforms them, or "" when cuFFT reads them on the device.
func hostTrip(c *plan.CallStep, dt dtype.DType, shape []int) string {
	switch {
	case c.Fn != expr.FnRFFT && c.Fn != expr.FnIHFFT:
		return fmt.Sprintf("only the forward real transforms (rfft, ihfft) read the fused values on the device; %v gets them from host memory", c.Fn)
	case dt.IsComplex():
		return fmt.Sprintf("%v of %v values reads them from host memory", c.Fn, dt)
	case c.Axis < 0 || c.Axis >= len(shape):
		return fmt.Sprintf("%v: axis %d of a block of shape %v", c.Fn, c.Axis, shape)
	case shape[c.Axis] != c.InLen():
		return fmt.Sprintf("lines padded with zeros to length %d are padded in host memory", c.InLen())
	}
	return ""
}

// runHost transforms a block of values in host memory on d.
func runHost(ctx context.Context, d *cuda.Device, c *plan.CallStep, vals dtype.Slice, shape []int, _ []dtype.Slice) (dtype.Slice, []int, error) {
	return cpu.ApplyCall(ctx, OnDevice(d), c, vals, shape)
}

// runDevice transforms a block of real values that a fused kernel left on d (as float64): a
// forward real transform (Rfft, Ihfft) reads them there, so that only the spectrum crosses to
// the host; other transforms, and a line padded with zeros, copy them to the host first.
func runDevice(ctx context.Context, d *cuda.Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, ops []dtype.Slice) (dtype.Slice, []int, error) {
	if hostTrip(c, dt, shape) != "" {
		words := make([]float64, expr.Size(shape))
		if err := d.Do(ctx, func() error { return d.CopyToHost(words, ptr) }); err != nil {
			return dtype.Slice{}, nil, fmt.Errorf("cufft: copy the values to the host: %w", err)
		}
		return runHost(ctx, d, c, cuda.DecodeWords(words, dt), shape, ops)
	}
	l, err := fft.Split(shape, c.Axis)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	y, err := RealOnDevice(ctx, d, ptr, l, c.Scale)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	if c.Fn == expr.FnIHFFT {
		for i, v := range y {
			y[i] = complex(real(v), -imag(v))
		}
	}
	res, err := dtype.Of(y)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	if res.DType() != c.DType {
		res = dtype.Convert(res, c.DType)
	}
	return res, c.OutShape(shape), nil
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
