package cufft

import (
	"context"
	"fmt"
	"time"

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
	cuda.RegisterKeep("cuFFT", runKeep, keepRule)
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

// keepRule is runKeep's rule (cuda.KeepRule): a transform's output stays on the device when its
// dtype is complex128 or float64, the words cuFFT writes (a complex64 or float32 result is
// rounded on the host).
func keepRule(c *plan.CallStep, dt dtype.DType) string {
	if !c.Fn.Transform() {
		return fmt.Sprintf("%v is no transform", c.Fn)
	}
	if c.Fn == expr.FnIHFFT {
		return "ihfft conjugates its half spectrum on the host"
	}
	switch c.DType {
	case dtype.Complex128, dtype.Float64:
		return ""
	}
	return fmt.Sprintf("%v giving %v: cuFFT writes double precision, rounded on the host", c.Fn, c.DType)
}

// runKeep is runDevice leaving the transform on the device (cuda.KeepCallRunner): cuFFT's output
// buffer becomes the call's output (complex pairs of float64 words, or float64 words for the
// inverse real transforms), scaled there as the host scales it (Device.ScaleWords).
func runKeep(ctx context.Context, d *cuda.Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, _ []cuda.Operand) (cuda.KeptCall, error) {
	if why := keepRule(c, dt); why != "" {
		return cuda.KeptCall{}, fmt.Errorf("cufft: %w: %s", cuda.ErrNotKept, why)
	}
	if err := Load(); err != nil {
		return cuda.KeptCall{}, err
	}
	padded := append([]int(nil), shape...)
	padded[c.Axis] = max(shape[c.Axis], c.InLen()) // as cpu.ApplyCall pads
	l, err := fft.Split(padded, c.Axis)
	if err != nil {
		return cuda.KeptCall{}, err
	}
	lay := cuda.LineLayout{Outer: int64(l.Outer), Inner: int64(l.Inner), SrcLen: int64(shape[c.Axis]), Len: int64(l.N), SrcComplex: dt.IsComplex()}
	out := cuda.KeptCall{Shape: c.OutShape(padded)}
	n := expr.Size(out.Shape)
	err = d.Do(ctx, func() error {
		pool := d.Pool()
		var res driver.DevicePtr
		ok := false
		scaled := false // the four steps' transpose scaled the result
		defer func() {
			if !ok && res != 0 {
				pool.Free(res)
			}
		}()
		t0 := time.Now()
		switch c.Fn {
		case expr.FnFFT, expr.FnIFFT:
			lay.DstComplex = true
			if res, err = pool.Alloc(uint64(max(l.Count()*l.N, 1)) * 16); err != nil {
				return fmt.Errorf("cufft: output buffer: %w", err)
			}
			if l.Count()*l.N > 0 {
				if err := d.PrepareLines(res, ptr, lay); err != nil {
					return fmt.Errorf("cufft: %w", err)
				}
				why, n1, n2, err := fourStepChoice(d, l, typeZ2Z)
				if err != nil {
					return err
				}
				if why != "" {
					four, err := fourStepOnDevice(ctx, d, res, n1, n2, c.Fn == expr.FnIFFT, c.Scale)
					if err != nil {
						return err
					}
					if four != res {
						pool.Free(res)
					}
					res, scaled = four, true
					out.Note = fourStepNote(l.N, n1, n2, why)
				} else {
					dir := dirForward
					if c.Fn == expr.FnIFFT {
						dir = dirInverse
					}
					if err := transform(ctx, d, typeZ2Z, l, l.N, res, res, func(p handle, in, out driver.DevicePtr) result {
						return execZ2Z(p, in, out, dir)
					}); err != nil {
						return err
					}
				}
			}
		case expr.FnRFFT, expr.FnIHFFT:
			src := ptr
			if lay.SrcComplex || lay.SrcLen != lay.Len {
				buf, err := pool.Alloc(uint64(max(l.Count()*l.N, 1)) * 8)
				if err != nil {
					return fmt.Errorf("cufft: input buffer: %w", err)
				}
				defer pool.Free(buf)
				if err := d.PrepareLines(buf, ptr, lay); err != nil {
					return fmt.Errorf("cufft: %w", err)
				}
				src = buf
			}
			if res, err = pool.Alloc(uint64(max(l.Count()*(l.N/2+1), 1)) * 16); err != nil {
				return fmt.Errorf("cufft: output buffer: %w", err)
			}
			if l.Count()*l.N > 0 {
				why, n1, n2, err := "", 0, 0, error(nil)
				if c.Fn == expr.FnRFFT {
					if why, n1, n2, err = fourStepChoice(d, l, typeD2Z); err != nil {
						return err
					}
				}
				if why != "" {
					a := src // the four steps overwrite the line: a copy unless it is ours
					if src == ptr {
						if a, err = pool.Alloc(uint64(l.N) * 8); err != nil {
							return fmt.Errorf("cufft: the four steps' copy of the line: %w", err)
						}
						defer pool.Free(a)
						if err := driver.MemcpyDtoDAsync(a, src, uint64(l.N)*8, d.Stream()); err != nil {
							return fmt.Errorf("cufft: the four steps' copy of the line: %w", err)
						}
					}
					if err := realFourStepOnDevice(ctx, d, a, res, n1, n2, c.Scale); err != nil {
						return err
					}
					scaled = true
					out.Note = realFourStepNote(l.N, n1, n2, why)
				} else if err := transform(ctx, d, typeD2Z, l, l.N, src, res, execD2Z); err != nil {
					return err
				}
			}
		case expr.FnIRFFT, expr.FnHFFT:
			lay.DstComplex, lay.Conj, lay.ZeroEnds = true, c.Fn == expr.FnHFFT, true
			if c.N%2 == 0 {
				lay.Last = lay.Len - 1
			}
			if c.N < 1 || l.N != c.N/2+1 {
				return fmt.Errorf("cufft: an inverse real transform of length %d needs %d coefficients per line, not %d", c.N, c.N/2+1, l.N)
			}
			buf, err := pool.Alloc(uint64(max(l.Count()*l.N, 1)) * 16)
			if err != nil {
				return fmt.Errorf("cufft: input buffer: %w", err)
			}
			defer pool.Free(buf)
			if res, err = pool.Alloc(uint64(max(l.Count()*c.N, 1)) * 8); err != nil {
				return fmt.Errorf("cufft: output buffer: %w", err)
			}
			if l.Count()*l.N > 0 {
				if err := d.PrepareLines(buf, ptr, lay); err != nil {
					return fmt.Errorf("cufft: %w", err)
				}
				rl := fft.Lines{Outer: l.Outer, N: c.N, Inner: l.Inner}
				why, n1, n2, err := fourStepChoice(d, rl, typeZ2D)
				if err != nil {
					return err
				}
				if why != "" {
					// Scaled below, as real words: the transpose's complex scale would turn an
					// infinite part's partner into NaN (inf * 0).
					four, err := inverseRealFourStepOnDevice(ctx, d, buf, n1, n2, 1)
					if err != nil {
						return err
					}
					pool.Free(res)
					res = four
					out.Note = inverseRealNote(c.N, n1, n2, why)
				} else if err := transform(ctx, d, typeZ2D, rl, c.N, buf, res, execZ2D); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("cufft: %v is no transform", c.Fn)
		}
		complexOut := c.DType == dtype.Complex128
		if !scaled {
			if err := d.ScaleWords(res, n, c.Scale, complexOut); err != nil {
				return fmt.Errorf("cufft: scale: %w", err)
			}
		}
		if err := d.Stream().Synchronize(); err != nil {
			return fmt.Errorf("cufft: %w", err)
		}
		cuda.Trace("cufft: %v of %d lines of %d on GPU %d in %.4f s, left there", c.Fn, l.Count(), l.N, d.Info.Index, time.Since(t0).Seconds())
		out.Ptr, ok = res, true
		return nil
	})
	if err != nil {
		return cuda.KeptCall{}, err
	}
	return out, nil
}
