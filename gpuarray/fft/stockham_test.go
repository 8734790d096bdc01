package fft

import (
	"fmt"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// TestStockhamMatchesGonum: the short power-of-two transforms agree with gonum's, forward and
// inverse, to rounding.
func TestStockhamMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := 1; n <= 4096; n *= 2 {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		g := fourier.NewCmplxFFT(n)
		s := newStockham(n)
		for _, inverse := range []bool{false, true} {
			want := make([]complex128, n)
			if inverse {
				g.Sequence(want, x)
			} else {
				g.Coefficients(want, x)
			}
			got := append([]complex128(nil), x...)
			s.transform(got, inverse)
			for i := range got {
				if d := cmplx.Abs(got[i] - want[i]); d > 1e-13*float64(n) {
					t.Fatalf("n %d inverse %v: element %d is %v, gonum %v", n, inverse, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkShort times the four-step split's short transforms against gonum's.
func BenchmarkShort(b *testing.B) {
	for _, n := range []int{1024, 2048} {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(float64(i%7), float64(i%5))
		}
		b.Run(fmt.Sprint("gonum", n), func(b *testing.B) {
			g := fourier.NewCmplxFFT(n)
			for b.Loop() {
				g.Coefficients(x, x)
			}
		})
		b.Run(fmt.Sprint("stockham", n), func(b *testing.B) {
			s := newStockham(n)
			for b.Loop() {
				s.transform(x, false)
			}
		})
	}
}
