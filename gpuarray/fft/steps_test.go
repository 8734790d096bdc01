package fft_test

import (
	"context"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// TestFourStepMatchesDirect runs the four steps a GPU runs for a line too long for one cuFFT
// plan (fft.RunFourStep: column transforms, twiddles, row transforms, a transpose), here with
// the host's transforms for the sub-transforms, against the direct transform of the whole line
// (fft.Complex), forward and inverse, scaled and not, for splits n1 x n2 square, oblong both
// ways, of primes and of other non-powers of two: every value within the package's bound (1e-12
// of the largest magnitude, as against NumPy).
func TestFourStepMatchesDirect(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range [][2]int{{16, 16}, {8, 32}, {32, 8}, {12, 10}, {7, 13}, {2, 3}, {30, 33}, {64, 96}, {100, 250}, {243, 125}, {1, 17}, {181, 200}, {256, 512}} {
		n := s[0] * s[1]
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64()+1)
		}
		for _, inverse := range []bool{false, true} {
			for _, scale := range []float64{1, 1 / float64(n)} {
				what := fmt.Sprintf("%d x %d inverse %v scale %v", s[0], s[1], inverse, scale)
				want := append([]complex128(nil), x...)
				if err := fft.Complex(ctx, want, fft.Lines{Outer: 1, N: n, Inner: 1}, inverse, scale); err != nil {
					t.Fatal(err)
				}
				got := append([]complex128(nil), x...)
				if err := fft.RunFourStep(ctx, fft.HostFourStep(got, fft.CPU), s[0], s[1], inverse, scale); err != nil {
					t.Fatal(err)
				}
				within(t, what, got, want, 1e-12)
			}
		}
	}
}

// TestFourStepStepOrder: the steps run in the order the decomposition needs. Each step changes
// the result alone: leaving out the twiddles, or transforming rows before columns, gives a
// transform that is not the line's (so the test above checks each step, not only their sum).
func TestFourStepStepOrder(t *testing.T) {
	ctx := context.Background()
	const n1, n2 = 6, 10
	x := make([]complex128, n1*n2)
	for i := range x {
		x[i] = complex(float64(i%7)-3, float64(i%5))
	}
	want := append([]complex128(nil), x...)
	if err := fft.Complex(ctx, want, fft.Lines{Outer: 1, N: n1 * n2, Inner: 1}, false, 1); err != nil {
		t.Fatal(err)
	}
	got := append([]complex128(nil), x...)
	if err := fft.RunFourStep(ctx, noTwiddles{fft.HostFourStep(got, fft.CPU)}, n1, n2, false, 1); err != nil {
		t.Fatal(err)
	}
	if far := maxDiff(got, want); far < 1 {
		t.Fatalf("without twiddles the four steps still give the transform (max |diff| %g)", far)
	}
}

type noTwiddles struct{ fft.FourStepOps }

func (noTwiddles) Twiddle(context.Context, int, int, bool) error { return nil }

func maxDiff(a, b []complex128) float64 {
	d := 0.0
	for i := range a {
		d = max(d, cmplx.Abs(a[i]-b[i]))
	}
	return d
}

// within checks got against want to tol of want's largest magnitude.
func within(t *testing.T, what string, got, want []complex128, tol float64) {
	t.Helper()
	scale := 1.0
	for _, w := range want {
		scale = max(scale, cmplx.Abs(w))
	}
	for i := range want {
		if d := cmplx.Abs(got[i] - want[i]); d > tol*scale || math.IsNaN(d) {
			t.Fatalf("%s: element %d is %v, the direct transform's %v (|diff| %.3g, scale %.3g)", what, i, got[i], want[i], d, scale)
		}
	}
}

// TestFourStepSplit: the split of a line for the four steps is the divisor pair nearest the
// square root whose factors cuFFT transforms without Bluestein's algorithm (primes up to 127),
// else the nearest pair; lines with no pair within the longest sub-transform are refused with
// the sizes.
func TestFourStepSplit(t *testing.T) {
	for _, c := range []struct {
		n, max, n1, n2 int
		err            string
	}{
		{100_000_000, math.MaxInt32, 10000, 10000, ""},
		{1_000_000_000, math.MaxInt32, 31250, 32000, ""},
		{1 << 31, math.MaxInt32, 32768, 65536, ""},
		{1 << 33, math.MaxInt32, 65536, 131072, ""},
		{12, 100, 3, 4, ""},
		{131 * 137 * 4, 1 << 20, 262, 274, ""}, // no smooth pair: the nearest one
		{4 * 131, 1 << 20, 4, 131, ""},         // 131 is over 127: (4, 131) the nearest
		{2 * 3 * 131, 1 << 20, 6, 131, ""},     // (3, 262), (2, 393) have 131 too: the nearest
		{1000003, math.MaxInt32, 0, 0, "no split"},
		{2 * 1000003, 1 << 19, 0, 0, "no split"}, // (2, 1000003): a factor over max
		{3, 100, 0, 0, "too short"},
	} {
		n1, n2, err := fft.FourStepSplit(c.n, c.max)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("split of %d: %d x %d, error %v; want an error saying %q", c.n, n1, n2, err, c.err)
			}
		case err != nil || n1 != c.n1 || n2 != c.n2:
			t.Errorf("split of %d: %d x %d (%v), want %d x %d", c.n, n1, n2, err, c.n1, c.n2)
		}
	}
}

// TestTwiddleTables: the twiddles the four steps multiply by, as two table reads and Go's
// complex product (what the GPU's kernel computes), are within 2e-15 of exp(-2πi j/n) computed
// directly (both round the angle 2πj/n), w^0 exactly 1.
func TestTwiddleTables(t *testing.T) {
	for _, n := range []int{12, 1000, 1 << 20, 1_000_000_007} {
		hi, lo, shift := fft.TwiddleTables(n)
		if 1<<(2*shift) < n || len(lo) != 1<<shift || len(hi) != n>>shift+1 {
			t.Fatalf("n %d: tables of %d and %d, shift %d", n, len(hi), len(lo), shift)
		}
		step := max(1, n/5000)
		for j := 0; j <= n; j += step {
			want := cmplx.Exp(complex(0, -2*math.Pi*float64(j)/float64(n)))
			got := fft.TwiddleAt(n, j)
			if got != hi[j>>shift]*lo[j&(1<<shift-1)] {
				t.Fatalf("n %d, j %d: TwiddleAt %v is not the tables' product", n, j, got)
			}
			if d := cmplx.Abs(got - want); d > 2e-15 {
				t.Fatalf("n %d, j %d: %v, direct %v (|diff| %.3g)", n, j, got, want, d)
			}
		}
		if got := fft.TwiddleAt(n, 0); got != 1 {
			t.Fatalf("n %d: w^0 is %v", n, got)
		}
	}
}

// TestRealFromPairsInFourSteps: a real line of even length in four steps, as a GPU runs it
// (its values in pairs as a complex line of half the length, fft.RunFourStep, then
// fft.RealFromPairs), gives the real transform's half spectrum (fft.Real) within 1e-12 of the
// largest magnitude, scaled and not, for halves split square, oblong and odd.
func TestRealFromPairsInFourSteps(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 8))
	for _, s := range [][2]int{{8, 8}, {4, 16}, {7, 13}, {30, 33}, {100, 250}, {2, 2}} {
		m := s[0] * s[1]
		x := make([]float64, 2*m)
		for i := range x {
			x[i] = r.NormFloat64() + 2
		}
		for _, scale := range []float64{1, 1 / math.Sqrt(float64(2*m))} {
			want, err := fft.Real(ctx, x, fft.Lines{Outer: 1, N: 2 * m, Inner: 1}, scale)
			if err != nil {
				t.Fatal(err)
			}
			z := make([]complex128, m)
			for j := range z {
				z[j] = complex(x[2*j], x[2*j+1])
			}
			if err := fft.RunFourStep(ctx, fft.HostFourStep(z, fft.CPU), s[0], s[1], false, 1); err != nil {
				t.Fatal(err)
			}
			within(t, fmt.Sprintf("real line of %d (%d x %d), scale %v", 2*m, s[0], s[1], scale), fft.RealFromPairs(z, scale), want, 1e-12)
		}
	}
}

// TestPairsFromHalfInFourSteps: an inverse real transform in four steps, as a GPU runs it (the
// half spectrum to m values (fft.PairsFromHalf), their inverse complex transform in four steps,
// read as the line's values in pairs), gives fft.InverseReal's line within 1e-12 of its largest
// magnitude, from spectra whose first and last imaginary parts both ignore.
func TestPairsFromHalfInFourSteps(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range [][2]int{{8, 8}, {4, 16}, {7, 13}, {30, 33}, {100, 250}, {2, 2}} {
		m := s[0] * s[1]
		n := 2 * m
		x := make([]complex128, m+1)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		want, err := fft.InverseReal(ctx, x, fft.Lines{Outer: 1, N: m + 1, Inner: 1}, n, 1/float64(n))
		if err != nil {
			t.Fatal(err)
		}
		y := fft.PairsFromHalf(x)
		if err := fft.RunFourStep(ctx, fft.HostFourStep(y, fft.CPU), s[0], s[1], true, 1/float64(n)); err != nil {
			t.Fatal(err)
		}
		got := make([]complex128, n)
		wc := make([]complex128, n)
		for j, v := range y {
			got[2*j], got[2*j+1] = complex(real(v), 0), complex(imag(v), 0)
		}
		for i, v := range want {
			wc[i] = complex(v, 0)
		}
		within(t, fmt.Sprintf("inverse real line of %d (%d x %d)", n, s[0], s[1]), got, wc, 1e-12)
	}
}
