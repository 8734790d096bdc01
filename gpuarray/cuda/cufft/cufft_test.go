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
