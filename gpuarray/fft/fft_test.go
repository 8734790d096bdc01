package fft_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// numpyFFT runs NumPy's transform of what on the block in (raw little-endian bytes of dtype
// inType and shape) along axis and returns its raw result.
func numpyFFT(t *testing.T, what, inType string, in []byte, shape []int, axis, n int) []byte {
	t.Helper()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin")
	if err := os.WriteFile(src, in, 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`import numpy as np
x = np.fromfile(%q, dtype=%q).reshape(%s)
y = np.fft.%s(x, n=%d, axis=%d)
np.ascontiguousarray(y).tofile(%q)
`, src, inType, pyShape(shape), what, n, axis, dst)
	out, err := exec.Command(testenv.Python(t), "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pyShape(s []int) string {
	out := "("
	for _, d := range s {
		out += fmt.Sprint(d, ",")
	}
	return out + ")"
}

func bytesOf[T any](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

func complexes(b []byte) []complex128 {
	out := make([]complex128, len(b)/16)
	for i := range out {
		out[i] = complex(math.Float64frombits(binary.LittleEndian.Uint64(b[16*i:])), math.Float64frombits(binary.LittleEndian.Uint64(b[16*i+8:])))
	}
	return out
}

func reals(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// closeTo checks got against want to 1e-12 of the block's largest magnitude (FFT errors grow
// like log n times the rounding of the largest terms).
func closeTo[T float64 | complex128](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, NumPy has %d", what, len(got), len(want))
	}
	abs := func(v T) float64 {
		switch v := any(v).(type) {
		case complex128:
			return cmplx.Abs(v)
		case float64:
			return math.Abs(v)
		}
		return math.NaN()
	}
	scale := 1.0
	for _, w := range want {
		scale = max(scale, abs(w))
	}
	for i := range got {
		if d := abs(got[i] - want[i]); d > 1e-12*scale || math.IsNaN(d) {
			t.Fatalf("%s: element %d is %v, NumPy %v (|diff| %.3g, scale %.3g)", what, i, got[i], want[i], d, scale)
		}
	}
}

var shapes = []struct {
	shape []int
	axis  int
}{
	{[]int{16}, 0}, {[]int{1}, 0}, {[]int{7}, 0}, {[]int{1000}, 0}, {[]int{97}, 0},
	{[]int{6, 10}, 1}, {[]int{6, 10}, 0}, {[]int{3, 5, 8}, 1}, {[]int{4, 9, 3}, 2}, {[]int{5, 2, 3}, 0},
}

func TestComplexAgainstNumPy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range shapes {
		for _, inverse := range []bool{false, true} {
			l, err := fft.Split(c.shape, c.axis)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]complex128, l.Count()*l.N)
			for i := range x {
				x[i] = complex(r.NormFloat64(), r.NormFloat64())
			}
			what, scale := "fft", 1.0
			if inverse {
				what, scale = "ifft", 1/float64(l.N)
			}
			want := complexes(numpyFFT(t, what, "<c16", bytesOf(x), c.shape, c.axis, l.N))
			if err := fft.Complex(context.Background(), x, l, inverse, scale); err != nil {
				t.Fatal(err)
			}
			closeTo(t, fmt.Sprintf("%s %v axis %d", what, c.shape, c.axis), x, want)
		}
	}
}

func TestRealAgainstNumPy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range shapes {
		l, _ := fft.Split(c.shape, c.axis)
		x := make([]float64, l.Count()*l.N)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		want := complexes(numpyFFT(t, "rfft", "<f8", bytesOf(x), c.shape, c.axis, l.N))
		got, err := fft.Real(context.Background(), x, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		closeTo(t, fmt.Sprintf("rfft %v axis %d", c.shape, c.axis), got, want)

		// irfft of the spectrum (with nonzero imaginary parts at DC and Nyquist, which both
		// sides must ignore) back to length n.
		n := l.N
		h := fft.Lines{Outer: l.Outer, N: n/2 + 1, Inner: l.Inner}
		spec := make([]complex128, h.Count()*h.N)
		for i := range spec {
			spec[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		hshape := append([]int(nil), c.shape...)
		hshape[c.axis] = h.N
		wantR := reals(numpyFFT(t, "irfft", "<c16", bytesOf(spec), hshape, c.axis, n))
		gotR, err := fft.InverseReal(context.Background(), spec, h, n, 1/float64(n))
		if err != nil {
			t.Fatal(err)
		}
		closeTo(t, fmt.Sprintf("irfft %v axis %d", c.shape, c.axis), gotR, wantR)
	}
}

// TestLongLinesAgainstNumPy: lines long enough to be split in four steps (on all cores), of
// lengths that are powers of two and not, contiguous and strided, against NumPy.
func TestLongLinesAgainstNumPy(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // two lines leave cores idle: both split
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{65536}, 0}, {[]int{60000}, 0}, {[]int{1 << 15, 2}, 0}, {[]int{131072}, 0}, {[]int{118098}, 0}, {[]int{1, 70000}, 1}} {
		l, _ := fft.Split(c.shape, c.axis)
		x := make([]complex128, l.Count()*l.N)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		for _, inverse := range []bool{false, true} {
			what, scale := "fft", 1.0
			if inverse {
				what, scale = "ifft", 1/float64(l.N)
			}
			want := complexes(numpyFFT(t, what, "<c16", bytesOf(x), c.shape, c.axis, l.N))
			got := append([]complex128(nil), x...)
			if err := fft.Complex(context.Background(), got, l, inverse, scale); err != nil {
				t.Fatal(err)
			}
			closeTo(t, fmt.Sprintf("%s %v axis %d", what, c.shape, c.axis), got, want)
		}
		re := make([]float64, len(x))
		for i := range re {
			re[i] = r.NormFloat64() + 3 // a mean: a large zero-frequency term
		}
		want := complexes(numpyFFT(t, "rfft", "<f8", bytesOf(re), c.shape, c.axis, l.N))
		got, err := fft.Real(context.Background(), re, l, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			want[i] *= 0.5
		}
		closeTo(t, fmt.Sprintf("rfft %v axis %d", c.shape, c.axis), got, want)

		// irfft back to the even length, from a spectrum with imaginary parts at DC and
		// Nyquist that both sides ignore.
		n := l.N
		h := fft.Lines{Outer: l.Outer, N: n/2 + 1, Inner: l.Inner}
		spec := make([]complex128, h.Count()*h.N)
		for i := range spec {
			spec[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		hshape := append([]int(nil), c.shape...)
		hshape[c.axis] = h.N
		wantR := reals(numpyFFT(t, "irfft", "<c16", bytesOf(spec), hshape, c.axis, n))
		gotR, err := fft.InverseReal(context.Background(), spec, h, n, 1/float64(n))
		if err != nil {
			t.Fatal(err)
		}
		closeTo(t, fmt.Sprintf("irfft %v axis %d", c.shape, c.axis), gotR, wantR)
	}
}

func TestErrors(t *testing.T) {
	if _, err := fft.Split([]int{3, 4}, 2); err == nil {
		t.Error("axis 2 of a 2-d block: no error")
	}
	l := fft.Lines{Outer: 1, N: 4, Inner: 1}
	if err := fft.Complex(context.Background(), make([]complex128, 3), l, false, 1); err == nil {
		t.Error("3 elements for one line of 4: no error")
	}
	if _, err := fft.InverseReal(context.Background(), make([]complex128, 4), l, 4, 1); err == nil {
		t.Error("4 coefficients for an inverse of length 4 (needs 3): no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := fft.Lines{Outer: 4096, N: 64, Inner: 1}
	if err := fft.Complex(ctx, make([]complex128, 4096*64), big, false, 1); err != context.Canceled {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
}
