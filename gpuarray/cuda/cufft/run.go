package cufft

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// Complex transforms the lines of x (see fft.Lines) in place on d, forward or inverse
// (unnormalized), every result multiplied by scale: fft.Complex on a GPU.
func Complex(ctx context.Context, d *cuda.Device, x []complex128, l fft.Lines, inverse bool, scale float64) error {
	if len(x) != l.Count()*l.N {
		return fmt.Errorf("cufft: block of %d elements for %d lines of %d", len(x), l.Count(), l.N)
	}
	if l.N == 0 || len(x) == 0 {
		return nil
	}
	dir := dirForward
	if inverse {
		dir = dirInverse
	}
	err := run(ctx, d, typeZ2Z, l, l.N, floats(x), floats(x), func(p handle, in, out driver.DevicePtr) result {
		return execZ2Z(p, in, out, dir)
	})
	if err != nil {
		return err
	}
	scaleComplex(x, scale)
	return nil
}

// Real returns the half spectrum (N/2+1 coefficients per line) of the real lines of x,
// multiplied by scale: fft.Real on a GPU.
func Real(ctx context.Context, d *cuda.Device, x []float64, l fft.Lines, scale float64) ([]complex128, error) {
	if len(x) != l.Count()*l.N {
		return nil, fmt.Errorf("cufft: block of %d elements for %d lines of %d", len(x), l.Count(), l.N)
	}
	if l.N == 0 {
		return nil, fmt.Errorf("cufft: a transform of length 0")
	}
	out := make([]complex128, l.Count()*(l.N/2+1))
	if len(out) == 0 {
		return out, nil
	}
	if err := run(ctx, d, typeD2Z, l, l.N, x, floats(out), execD2Z); err != nil {
		return nil, err
	}
	scaleComplex(out, scale)
	return out, nil
}

// InverseReal returns the real lines of length n whose half spectra are the lines of x,
// unnormalized and multiplied by scale: fft.InverseReal on a GPU (the imaginary parts of the
// zero-frequency and, for even n, Nyquist terms are ignored, as NumPy does).
func InverseReal(ctx context.Context, d *cuda.Device, x []complex128, l fft.Lines, n int, scale float64) ([]float64, error) {
	if len(x) != l.Count()*l.N {
		return nil, fmt.Errorf("cufft: block of %d elements for %d lines of %d", len(x), l.Count(), l.N)
	}
	if n < 1 || l.N != n/2+1 {
		return nil, fmt.Errorf("cufft: an inverse real transform of length %d needs %d coefficients per line, not %d", n, n/2+1, l.N)
	}
	in := make([]complex128, len(x)) // cuFFT's C2R overwrites its input
	copy(in, x)
	for k := 0; k < l.Count(); k++ {
		o, i := k/l.Inner, k%l.Inner
		s := o*l.N*l.Inner + i
		in[s] = complex(real(in[s]), 0)
		if n%2 == 0 {
			e := s + (l.N-1)*l.Inner
			in[e] = complex(real(in[e]), 0)
		}
	}
	out := make([]float64, l.Count()*n)
	if len(out) == 0 {
		return out, nil
	}
	if err := run(ctx, d, typeZ2D, fft.Lines{Outer: l.Outer, N: n, Inner: l.Inner}, n, floats(in), out, execZ2D); err != nil {
		return nil, err
	}
	for i := range out {
		out[i] *= scale
	}
	return out, nil
}

// floats views complex values as their float64 parts (real, imaginary, …).
func floats(c []complex128) []float64 {
	if len(c) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&c[0])), 2*len(c))
}

func scaleComplex(x []complex128, scale float64) {
	if scale == 1 {
		return
	}
	c := complex(scale, 0)
	for i := range x {
		x[i] *= c
	}
}

// run uploads in, plans transforms of length n over the lines of l (l.N is the logical
// length n; the input and output line lengths follow from the type), executes them on d's
// stream and downloads out.
func run(ctx context.Context, d *cuda.Device, t fftType, l fft.Lines, n int, in, out []float64, exec func(p handle, in, out driver.DevicePtr) result) error {
	if err := Load(); err != nil {
		return err
	}
	return d.Do(ctx, func() error {
		pool := d.Pool()
		din, err := pool.Alloc(uint64(len(in)) * 8)
		if err != nil {
			return fmt.Errorf("cufft: input buffer: %w", err)
		}
		defer pool.Free(din)
		dout := din
		if &in[0] != &out[0] {
			if dout, err = pool.Alloc(uint64(len(out)) * 8); err != nil {
				return fmt.Errorf("cufft: output buffer: %w", err)
			}
			defer pool.Free(dout)
		}
		if err := d.CopyToDevice(din, in); err != nil {
			return fmt.Errorf("cufft: upload: %w", err)
		}
		if err := transform(ctx, d, t, l, n, din, dout, exec); err != nil {
			return err
		}
		if err := d.CopyToHost(out, dout); err != nil {
			return fmt.Errorf("cufft: download: %w", err)
		}
		return nil
	})
}

// transform plans transforms of type t and length n over the lines of l and runs them on d's
// stream, from din to dout (device memory). Call it on the device goroutine.
func transform(ctx context.Context, d *cuda.Device, t fftType, l fft.Lines, n int, din, dout driver.DevicePtr, exec func(p handle, in, out driver.DevicePtr) result) error {
	if err := checkPlanSizes(l, n); err != nil {
		return err
	}
	inLen, outLen := n, n // elements per line, in units of the element type
	inSize, outSize := 16, 16
	switch t {
	case typeD2Z:
		inSize, outLen = 8, n/2+1
	case typeZ2D:
		inLen, outSize = n/2+1, 8
	}
	// Contiguous lines are one batch; lines strided by Inner are one batch per outer index.
	batch, stride, rounds := l.Outer, 1, 1
	idist, odist := inLen, outLen
	if l.Inner > 1 {
		batch, stride, rounds = l.Inner, l.Inner, l.Outer
		idist, odist = 1, 1
	}
	if planCaching {
		key := planKey{dev: d, t: t, n: int64(n), inLen: int64(inLen), outLen: int64(outLen), stride: int64(stride), idist: int64(idist), odist: int64(odist), batch: int64(batch)}
		return execCached(d, key, rounds, func(r int) (driver.DevicePtr, driver.DevicePtr) {
			return din + driver.DevicePtr(r*inLen*l.Inner*inSize), dout + driver.DevicePtr(r*outLen*l.Inner*outSize)
		}, exec, ctx.Err)
	}
	nn := []int32{int32(n)}
	inEmbed, outEmbed := []int32{int32(inLen)}, []int32{int32(outLen)}
	var p handle
	if err := check("cufftPlanMany", planMany(&p, 1, &nn[0], &inEmbed[0], int32(stride), int32(idist), &outEmbed[0], int32(stride), int32(odist), t, int32(batch))); err != nil {
		return err
	}
	defer destroy(p)
	if err := check("cufftSetStream", setStream(p, d.Stream())); err != nil {
		return err
	}
	for r := 0; r < rounds; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		ip := din + driver.DevicePtr(r*inLen*l.Inner*inSize)
		op := dout + driver.DevicePtr(r*outLen*l.Inner*outSize)
		if err := check("cufftExec", exec(p, ip, op)); err != nil {
			return err
		}
	}
	return nil
}

// RealOnDevice is Real with the real lines already in device memory at x (float64, l's
// layout, left unchanged): the half spectrum is computed there and only it comes to the host.
func RealOnDevice(ctx context.Context, d *cuda.Device, x driver.DevicePtr, l fft.Lines, scale float64) ([]complex128, error) {
	if l.N == 0 {
		return nil, fmt.Errorf("cufft: a transform of length 0")
	}
	if err := Load(); err != nil {
		return nil, err
	}
	out := make([]complex128, l.Count()*(l.N/2+1))
	if len(out) == 0 {
		return out, nil
	}
	err := d.Do(ctx, func() error {
		t0 := time.Now()
		dout, err := d.Pool().Alloc(uint64(len(out)) * 16)
		if err != nil {
			return fmt.Errorf("cufft: output buffer: %w", err)
		}
		defer d.Pool().Free(dout)
		if err := transform(ctx, d, typeD2Z, l, l.N, x, dout, execD2Z); err != nil {
			return err
		}
		if err := d.Stream().Synchronize(); err != nil {
			return fmt.Errorf("cufft: %w", err)
		}
		t1 := time.Now()
		if err := d.CopyToHost(floats(out), dout); err != nil {
			return fmt.Errorf("cufft: download: %w", err)
		}
		cuda.Trace("cufft: D2Z of %d lines of %d on GPU %d: plan and transform %.4f s, spectrum to the host %.4f s", l.Count(), l.N, d.Info.Index, t1.Sub(t0).Seconds(), time.Since(t1).Seconds())
		return nil
	})
	if err != nil {
		return nil, err
	}
	scaleComplex(out, scale)
	return out, nil
}

// ComplexOnDevice is Complex with the lines' values already in device memory at src, as lay
// says (cuda.LineLayout: real or complex words, padded to l.N on the device): cuFFT's Z2Z runs
// in place on the prepared words, as Complex runs it on the uploaded ones, and only the result
// comes to the host.
func ComplexOnDevice(ctx context.Context, d *cuda.Device, src driver.DevicePtr, lay cuda.LineLayout, l fft.Lines, inverse bool, scale float64) ([]complex128, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	x := make([]complex128, l.Count()*l.N)
	if len(x) == 0 {
		return x, nil
	}
	dir := dirForward
	if inverse {
		dir = dirInverse
	}
	err := d.Do(ctx, func() error {
		buf, err := d.Pool().Alloc(uint64(len(x)) * 16)
		if err != nil {
			return fmt.Errorf("cufft: input buffer: %w", err)
		}
		defer d.Pool().Free(buf)
		if err := d.PrepareLines(buf, src, lay); err != nil {
			return fmt.Errorf("cufft: %w", err)
		}
		why, n1, n2, err := fourStepChoice(d, l, typeZ2Z)
		if err != nil {
			return err
		}
		if why != "" {
			four, err := fourStepOnDevice(ctx, d, buf, n1, n2, inverse, scale)
			if err != nil {
				return err
			}
			if four != buf {
				defer d.Pool().Free(four)
			}
			scale = 1 // the transpose scaled it
			cuda.Trace("cufft: %s, the result copied to the host", fourStepNote(l.N, n1, n2, why))
			buf = four
		} else if err := transform(ctx, d, typeZ2Z, l, l.N, buf, buf, func(p handle, in, out driver.DevicePtr) result {
			return execZ2Z(p, in, out, dir)
		}); err != nil {
			return err
		}
		if err := d.CopyToHost(floats(x), buf); err != nil {
			return fmt.Errorf("cufft: download: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	scaleComplex(x, scale)
	return x, nil
}

// realPrepared is RealOnDevice of lines that lay first pads with zeros (or takes the real parts
// of), on the device, into a buffer of their own.
func realPrepared(ctx context.Context, d *cuda.Device, src driver.DevicePtr, lay cuda.LineLayout, l fft.Lines, scale float64) ([]complex128, error) {
	var buf driver.DevicePtr
	err := d.Do(ctx, func() error {
		var err error
		if buf, err = d.Pool().Alloc(uint64(l.Count()*l.N) * 8); err != nil {
			return fmt.Errorf("cufft: input buffer: %w", err)
		}
		if err := d.PrepareLines(buf, src, lay); err != nil {
			d.Pool().Free(buf)
			buf = 0
			return fmt.Errorf("cufft: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = d.Do(context.WithoutCancel(ctx), func() error { d.Pool().Free(buf); return nil })
	}()
	return RealOnDevice(ctx, d, buf, l, scale)
}

// InverseRealOnDevice is InverseReal with the half spectra already in device memory at src, as
// lay says (lay.ZeroEnds and Last set as InverseReal sets those imaginary parts, lay.Conj for
// hfft): cuFFT's Z2D reads the prepared words, and only the real lines come to the host.
func InverseRealOnDevice(ctx context.Context, d *cuda.Device, src driver.DevicePtr, lay cuda.LineLayout, l fft.Lines, n int, scale float64) ([]float64, error) {
	if n < 1 || l.N != n/2+1 {
		return nil, fmt.Errorf("cufft: an inverse real transform of length %d needs %d coefficients per line, not %d", n, n/2+1, l.N)
	}
	if err := Load(); err != nil {
		return nil, err
	}
	out := make([]float64, l.Count()*n)
	if len(out) == 0 {
		return out, nil
	}
	err := d.Do(ctx, func() error {
		pool := d.Pool()
		buf, err := pool.Alloc(uint64(l.Count()*l.N) * 16)
		if err != nil {
			return fmt.Errorf("cufft: input buffer: %w", err)
		}
		defer pool.Free(buf)
		dout, err := pool.Alloc(uint64(len(out)) * 8)
		if err != nil {
			return fmt.Errorf("cufft: output buffer: %w", err)
		}
		defer pool.Free(dout)
		if err := d.PrepareLines(buf, src, lay); err != nil {
			return fmt.Errorf("cufft: %w", err)
		}
		if err := transform(ctx, d, typeZ2D, fft.Lines{Outer: l.Outer, N: n, Inner: l.Inner}, n, buf, dout, execZ2D); err != nil {
			return err
		}
		if err := d.CopyToHost(out, dout); err != nil {
			return fmt.Errorf("cufft: download: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i] *= scale
	}
	return out, nil
}
