package cufft

import (
	"context"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// A program that imports this package runs the Fourier transforms of planned library calls on
// GPUs (cuda.RunPlan); without cuFFT, cuda.Runs says why and they run on the CPU.
func init() {
	cuda.RegisterLibrary("cuFFT", func(ctx context.Context, d *cuda.Device, c *plan.CallStep, vals dtype.Slice, shape []int, _ []dtype.Slice) (dtype.Slice, []int, error) {
		return cpu.ApplyCall(ctx, OnDevice(d), c, vals, shape)
	}, nil, Load, func(fn expr.CallFn) bool { return fn.Transform() })
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
