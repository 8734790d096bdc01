package cufft_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/cufft"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// gpu opens GPU 0 and cuFFT, or skips; GPUNOTES_GPU_TESTS=1 turns a missing GPU or library
// into a failure.
func gpu(t *testing.T) *cuda.Device {
	t.Helper()
	d, err := cuda.Open(0)
	if err == nil {
		err = cufft.Load()
	}
	if err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU tests required: %v", err)
		}
		t.Skipf("no GPU or cuFFT: %v", err)
	}
	return d
}

// near checks got against the CPU package's result (itself checked against NumPy) to 1e-12 of
// the largest magnitude.
func near(t *testing.T, what string, got, want []complex128) {
	t.Helper()
	scale := 1.0
	for _, w := range want {
		scale = max(scale, cmplx.Abs(w))
	}
	for i := range want {
		if d := cmplx.Abs(got[i] - want[i]); d > 1e-12*scale || math.IsNaN(d) {
			t.Fatalf("%s: element %d is %v on the GPU, %v on the CPU", what, i, got[i], want[i])
		}
	}
}

func TestGPUFFTMatchesCPU(t *testing.T) {
	d := gpu(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{1 << 16}, 0}, {[]int{1000}, 0}, {[]int{97}, 0}, {[]int{64, 100}, 1}, {[]int{64, 100}, 0}, {[]int{3, 50, 7}, 1}, {[]int{5, 4, 9}, 2}} {
		l, err := fft.Split(c.shape, c.axis)
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%v axis %d", c.shape, c.axis)
		x := make([]complex128, l.Count()*l.N)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		for _, inv := range []bool{false, true} {
			want := append([]complex128(nil), x...)
			got := append([]complex128(nil), x...)
			if err := fft.Complex(ctx, want, l, inv, 0.5); err != nil {
				t.Fatal(err)
			}
			if err := cufft.Complex(ctx, d, got, l, inv, 0.5); err != nil {
				t.Fatal(err)
			}
			near(t, fmt.Sprintf("complex (inverse %v) %s", inv, what), got, want)
		}
		re := make([]float64, len(x))
		for i := range re {
			re[i] = real(x[i])
		}
		want, err := fft.Real(ctx, re, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cufft.Real(ctx, d, re, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "real "+what, got, want)
		h := fft.Lines{Outer: l.Outer, N: l.N/2 + 1, Inner: l.Inner}
		wantR, err := fft.InverseReal(ctx, x[:h.Count()*h.N], h, l.N, 1/float64(l.N))
		if err != nil {
			t.Fatal(err)
		}
		gotR, err := cufft.InverseReal(ctx, d, x[:h.Count()*h.N], h, l.N, 1/float64(l.N))
		if err != nil {
			t.Fatal(err)
		}
		wc, gc := make([]complex128, len(wantR)), make([]complex128, len(gotR))
		for i := range wantR {
			wc[i], gc[i] = complex(wantR[i], 0), complex(gotR[i], 0)
		}
		near(t, "inverse real "+what, gc, wc)
	}
}

func TestLoadErrorNamesLibrary(t *testing.T) {
	err := cufft.Load()
	if err == nil {
		if cufft.Library() == "" {
			t.Fatal("Load succeeded but names no library")
		}
		return
	}
	if !errors.Is(err, cufft.ErrNoLibrary) {
		t.Fatalf("Load: %v does not wrap ErrNoLibrary", err)
	}
}

// TestGPUFourStepMatchesOnePlan: one line transformed in four steps on the device
// (GPUNOTES_CUFFT_FOURSTEP=1: cuFFT's column and row transforms, the twiddle and transpose
// kernels), from values in device memory (ComplexOnDevice), gives the one plan's values
// (GPUNOTES_CUFFT_FOURSTEP=0) and the CPU's within 1e-12 of the largest magnitude, forward and
// inverse, scaled and not, for lengths whose splits are square, oblong, odd and with a factor
// over 127 (a Bluestein sub-transform).
func TestGPUFourStepMatchesOnePlan(t *testing.T) {
	d := gpu(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1 << 16, 1 << 17, 1000000, 60000, 3 * 5 * 7 * 11 * 13 * 17, 4 * 131 * 1000} {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		src := make([]float64, 2*n)
		for i, v := range x {
			src[2*i], src[2*i+1] = real(v), imag(v)
		}
		var dsrc driver.DevicePtr
		if err := d.Do(ctx, func() error {
			var err error
			if dsrc, err = d.Pool().Alloc(uint64(16 * n)); err != nil {
				return err
			}
			return d.CopyToDevice(dsrc, src)
		}); err != nil {
			t.Fatal(err)
		}
		l := fft.Lines{Outer: 1, N: n, Inner: 1}
		lay := cuda.LineLayout{Outer: 1, Inner: 1, SrcLen: int64(n), Len: int64(n), SrcComplex: true, DstComplex: true}
		for _, inv := range []bool{false, true} {
			for _, scale := range []float64{1, 1 / math.Sqrt(float64(n))} {
				what := fmt.Sprintf("line of %d, inverse %v, scale %v", n, inv, scale)
				want := append([]complex128(nil), x...)
				if err := fft.Complex(ctx, want, l, inv, scale); err != nil {
					t.Fatal(err)
				}
				t.Setenv("GPUNOTES_CUFFT_FOURSTEP", "0")
				one, err := cufft.ComplexOnDevice(ctx, d, dsrc, lay, l, inv, scale)
				if err != nil {
					t.Fatalf("%s, one plan: %v", what, err)
				}
				t.Setenv("GPUNOTES_CUFFT_FOURSTEP", "1")
				four, err := cufft.ComplexOnDevice(ctx, d, dsrc, lay, l, inv, scale)
				if err != nil {
					t.Fatalf("%s, four steps: %v", what, err)
				}
				near(t, what+", four steps against the CPU", four, want)
				near(t, what+", four steps against one plan", four, one)
			}
		}
		_ = d.Do(ctx, func() error { d.Pool().Free(dsrc); return nil })
	}
}
