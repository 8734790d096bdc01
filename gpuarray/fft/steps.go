package fft

import (
	"context"
	"fmt"
	"math"
)

// The four-step decomposition of one long transform, as a GPU runs it (issue 32: a line that one
// cuFFT plan cannot take, longer than a C int or with a work area that does not fit the free
// memory). A line x of length n = n1*n2 is the n1 x n2 matrix A[r][c] = x[r*n2 + c]; then
//
//  1. n2 transforms of length n1 down its columns (lines of stride n2: Lines{1, n1, n2}),
//  2. element (k1, c) multiplied by w^(k1*c), w = exp(-2πi/n) (its conjugate for the inverse),
//  3. n1 transforms of length n2 along its rows (Lines{n1, n2, 1}),
//  4. the n1 x n2 matrix transposed: element k1 + n1*k2 of the transform is row k1's k2.
//
// RunFourStep runs these steps through a FourStepOps, so that the host (HostFourStep, this
// package's transforms) and a GPU (package cuda/cufft: cuFFT and generated kernels) run the same
// steps in the same order, and the host's result checks the decomposition the GPU runs.

// FourStepOps are the operations of the four steps on one buffer of n1*n2 complex values.
type FourStepOps interface {
	// Lines transforms the lines l of the buffer in place, forward or inverse (unnormalized).
	Lines(ctx context.Context, l Lines, inverse bool) error
	// Twiddle multiplies element r*n2 + c of the buffer by w^(r*c) (TwiddleAt), or by its
	// conjugate for the inverse.
	Twiddle(ctx context.Context, n1, n2 int, inverse bool) error
	// Transpose writes the transpose of the buffer's rows x cols matrix, every value times
	// complex(scale, 0) unless scale is 1, as the transform's result.
	Transpose(ctx context.Context, rows, cols int, scale float64) error
}

// RunFourStep transforms the buffer of ops, one line of n1*n2 values, in four steps: forward or
// inverse (unnormalized), every result multiplied by scale.
func RunFourStep(ctx context.Context, ops FourStepOps, n1, n2 int, inverse bool, scale float64) error {
	if n1 < 1 || n2 < 1 {
		return fmt.Errorf("fft: a four-step split %d x %d", n1, n2)
	}
	if err := ops.Lines(ctx, Lines{Outer: 1, N: n1, Inner: n2}, inverse); err != nil {
		return fmt.Errorf("fft: four-step columns (%d of %d): %w", n2, n1, err)
	}
	if err := ops.Twiddle(ctx, n1, n2, inverse); err != nil {
		return fmt.Errorf("fft: four-step twiddles: %w", err)
	}
	if err := ops.Lines(ctx, Lines{Outer: n1, N: n2, Inner: 1}, inverse); err != nil {
		return fmt.Errorf("fft: four-step rows (%d of %d): %w", n1, n2, err)
	}
	if err := ops.Transpose(ctx, n1, n2, scale); err != nil {
		return fmt.Errorf("fft: four-step transpose: %w", err)
	}
	return nil
}

// FourStepSplit returns n = n1*n2 for the four steps: n1 the divisor of n nearest below sqrt(n)
// whose two factors have no prime factor over 127 (cuFFT's sizes that need no Bluestein
// transform), else the nearest of any divisors, with both factors at least 2 and at most
// maxLen; an error says why n has none (a prime, or a factor longer than maxLen).
func FourStepSplit(n, maxLen int) (n1, n2 int, err error) {
	if n < 4 {
		return 0, 0, fmt.Errorf("fft: a line of %d elements is too short to split in four steps", n)
	}
	first := 0
	for d := int(math.Sqrt(float64(n))) + 1; d >= 2; d-- {
		if n%d != 0 || d*d > n || n/d > maxLen {
			continue
		}
		if first == 0 {
			first = d
		}
		if smooth(d) && smooth(n/d) {
			return d, n / d, nil
		}
	}
	if first == 0 {
		return 0, 0, fmt.Errorf("fft: a line of %d elements has no split n1 x n2 with both factors from 2 to %d", n, maxLen)
	}
	return first, n / first, nil
}

// smooth reports whether m has no prime factor over 127.
func smooth(m int) bool {
	for p := 2; p <= 127 && m > 1; p++ {
		for m%p == 0 {
			m /= p
		}
	}
	return m == 1
}

// TwiddleTables returns the tables of TwiddleAt for a transform of length n: w^j =
// hi[j>>shift] * lo[j&(1<<shift-1)] (Go's complex product), 4^shift >= n; hi has n>>shift + 1
// entries, lo 1<<shift. A GPU's twiddle kernel reads the same tables and multiplies as Go does.
func TwiddleTables(n int) (hi, lo []complex128, shift int) {
	t := twiddlesOf(n)
	return t.hi, t.lo, t.shift
}

// TwiddleAt returns exp(-2πi j/n) for j in [0, n] as the four steps compute it (TwiddleTables).
func TwiddleAt(n, j int) complex128 { return twiddlesOf(n).at(j) }

// HostFourStep returns the four steps on the host over x (length n1*n2), the sub-transforms
// computed by tr (CPU, say): the decomposition a GPU runs, on this machine. Its Transpose writes
// the result back into x.
func HostFourStep(x []complex128, tr Transforms) FourStepOps { return &hostSteps{x: x, tr: tr} }

type hostSteps struct {
	x  []complex128
	tr Transforms
}

func (h *hostSteps) Lines(ctx context.Context, l Lines, inverse bool) error {
	return h.tr.Complex(ctx, h.x, l, inverse, 1)
}

func (h *hostSteps) Twiddle(ctx context.Context, n1, n2 int, inverse bool) error {
	if len(h.x) != n1*n2 {
		return fmt.Errorf("fft: twiddles of %d x %d over %d values", n1, n2, len(h.x))
	}
	tw := twiddlesOf(n1 * n2)
	for r := range n1 {
		if err := ctx.Err(); err != nil {
			return err
		}
		row := h.x[r*n2 : (r+1)*n2]
		for c, v := range row {
			f := tw.at(r * c)
			if inverse {
				f = complex(real(f), -imag(f))
			}
			row[c] = v * f
		}
	}
	return nil
}

func (h *hostSteps) Transpose(ctx context.Context, rows, cols int, scale float64) error {
	if len(h.x) != rows*cols {
		return fmt.Errorf("fft: a transpose of %d x %d over %d values", rows, cols, len(h.x))
	}
	t := make([]complex128, len(h.x))
	s := complex(scale, 0)
	for r := range rows {
		for c := range cols {
			v := h.x[r*cols+c]
			if scale != 1 {
				v *= s
			}
			t[c*rows+r] = v
		}
	}
	copy(h.x, t)
	return ctx.Err()
}

// RealFromPairs returns the half spectrum (m+1 coefficients) of a real line of even length
// n = 2m from z, the complex transform (length m) of its values taken in pairs x[2j] +
// i x[2j+1], every coefficient multiplied by scale: the pass after the four steps of a real
// line, the one realSplit runs, element by element (a GPU's kernel computes the same).
func RealFromPairs(z []complex128, scale float64) []complex128 {
	m := len(z)
	if m == 0 {
		return nil
	}
	tw := twiddlesOf(2 * m)
	out := make([]complex128, m+1)
	z0 := z[0]
	out[0] = complex((real(z0)+imag(z0))*scale, 0)
	out[m] = complex((real(z0)-imag(z0))*scale, 0)
	for k := 1; k < m; k++ {
		x := post(z[k], z[m-k], tw.at(k))
		out[k] = complex(real(x)*scale, imag(x)*scale)
	}
	return out
}

// PairsFromHalf returns, from the half spectrum x (m+1 coefficients) of a real line of even
// length n = 2m, the m values whose inverse complex transform (unnormalized) is the line's
// values in pairs x[2j] + i x[2j+1], times n: the pass before the four steps of an inverse real
// transform, the one inverseRealSplit runs (the imaginary parts of x[0] and x[m] ignored, as
// NumPy's irfft ignores them), element by element (a GPU's kernel computes the same).
func PairsFromHalf(x []complex128) []complex128 {
	m := len(x) - 1
	if m < 1 {
		return nil
	}
	tw := twiddlesOf(2 * m)
	y := make([]complex128, m)
	for k := range y {
		y[k] = pairFromHalf(x[k], x[m-k], k == 0, tw.at(k))
	}
	return y
}

// pairFromHalf is element k of PairsFromHalf from X[k], X[m-k] (their imaginary parts dropped
// at k == 0) and w^k.
func pairFromHalf(xk, xm complex128, first bool, w complex128) complex128 {
	if first {
		xk, xm = complex(real(xk), 0), complex(real(xm), 0)
	}
	xc := complex(real(xm), -imag(xm))
	e, d := xk+xc, xk-xc
	wd := complex(real(w), -imag(w)) * d
	return complex(real(e)-imag(wd), imag(e)+real(wd)) // e + i*wd
}
