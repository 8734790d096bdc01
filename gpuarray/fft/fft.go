package fft

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/gpunotes/gpunotes/internal/parallel"
)

// Lines describes a row-major block as Outer x N x Inner around the transformed axis: there
// are Outer*Inner lines of N elements, element j of line (o, i) at o*N*Inner + j*Inner + i.
type Lines struct {
	Outer, N, Inner int
}

// Split returns the lines of a block of shape along axis.
func Split(shape []int, axis int) (Lines, error) {
	if axis < 0 || axis >= len(shape) {
		return Lines{}, fmt.Errorf("fft: axis %d out of range for a block of %d axes", axis, len(shape))
	}
	l := Lines{Outer: 1, N: shape[axis], Inner: 1}
	for d, n := range shape {
		switch {
		case d < axis:
			l.Outer *= n
		case d > axis:
			l.Inner *= n
		}
	}
	return l, nil
}

// Count returns the number of lines.
func (l Lines) Count() int { return l.Outer * l.Inner }

// start returns the offset of line k's first element and the stride between its elements.
func (l Lines) start(k int) (int, int) {
	o, i := k/l.Inner, k%l.Inner
	return o*l.N*l.Inner + i, l.Inner
}

// Complex transforms the lines of x along l in place: forward or inverse (unnormalized),
// every result multiplied by scale.
func Complex(ctx context.Context, x []complex128, l Lines, inverse bool, scale float64) error {
	if len(x) != l.Count()*l.N {
		return fmt.Errorf("fft: block of %d elements for %d lines of %d", len(x), l.Count(), l.N)
	}
	if l.N == 0 {
		return nil
	}
	if splits(l, l.N) {
		for k := 0; k < l.Count(); k++ {
			line, put := lineOf(x, l, k)
			if err := complexSplit(ctx, line, inverse, scale); err != nil {
				return err
			}
			put(line)
		}
		return nil
	}
	return parallel.ForEach(ctx, l.Count(), func() func(int) {
		t := fourier.NewCmplxFFT(l.N)
		buf := make([]complex128, l.N)
		c := complex(scale, 0)
		return func(k int) {
			s, st := l.start(k)
			for j := range buf {
				buf[j] = x[s+j*st]
			}
			if inverse {
				t.Sequence(buf, buf)
			} else {
				t.Coefficients(buf, buf)
			}
			for j, v := range buf {
				x[s+j*st] = v * c
			}
		}
	})
}

// Real returns the half spectrum (N/2+1 coefficients per line) of the real lines of x, in a
// block of lines Lines{l.Outer, l.N/2 + 1, l.Inner}, every coefficient multiplied by scale.
func Real(ctx context.Context, x []float64, l Lines, scale float64) ([]complex128, error) {
	if len(x) != l.Count()*l.N {
		return nil, fmt.Errorf("fft: block of %d elements for %d lines of %d", len(x), l.Count(), l.N)
	}
	if l.N == 0 {
		return nil, fmt.Errorf("fft: a transform of length 0")
	}
	h := Lines{l.Outer, l.N/2 + 1, l.Inner}
	if l.N%2 == 0 && splits(l, l.N/2) {
		if l.Count() == 1 {
			return realSplit(ctx, x, scale)
		}
		out := make([]complex128, h.Count()*h.N)
		for k := 0; k < l.Count(); k++ {
			line, _ := lineOf(x, l, k)
			y, err := realSplit(ctx, line, scale)
			if err != nil {
				return nil, err
			}
			s, st := h.start(k)
			for j, v := range y {
				out[s+j*st] = v
			}
		}
		return out, nil
	}
	out := make([]complex128, h.Count()*h.N)
	err := parallel.ForEach(ctx, l.Count(), func() func(int) {
		t := fourier.NewFFT(l.N)
		in := make([]float64, l.N)
		co := make([]complex128, h.N)
		c := complex(scale, 0)
		return func(k int) {
			s, st := l.start(k)
			for j := range in {
				in[j] = x[s+j*st]
			}
			t.Coefficients(co, in)
			s, st = h.start(k)
			for j, v := range co {
				out[s+j*st] = v * c
			}
		}
	})
	return out, err
}

// InverseReal returns the real lines of length n whose half spectra are the lines of x
// (l.N must be n/2+1), unnormalized and multiplied by scale. As NumPy's irfft, it ignores the
// imaginary parts of the zero-frequency term and, for even n, of the Nyquist term.
func InverseReal(ctx context.Context, x []complex128, l Lines, n int, scale float64) ([]float64, error) {
	if len(x) != l.Count()*l.N {
		return nil, fmt.Errorf("fft: block of %d elements for %d lines of %d", len(x), l.Count(), l.N)
	}
	if n < 1 || l.N != n/2+1 {
		return nil, fmt.Errorf("fft: an inverse real transform of length %d needs %d coefficients per line, not %d", n, n/2+1, l.N)
	}
	r := Lines{l.Outer, n, l.Inner}
	if n%2 == 0 && splits(l, n/2) {
		if l.Count() == 1 {
			return inverseRealSplit(ctx, x, n, scale)
		}
		out := make([]float64, r.Count()*n)
		for k := 0; k < l.Count(); k++ {
			line, _ := lineOf(x, l, k)
			y, err := inverseRealSplit(ctx, line, n, scale)
			if err != nil {
				return nil, err
			}
			s, st := r.start(k)
			for j, v := range y {
				out[s+j*st] = v
			}
		}
		return out, nil
	}
	out := make([]float64, r.Count()*n)
	err := parallel.ForEach(ctx, l.Count(), func() func(int) {
		t := fourier.NewFFT(n)
		co := make([]complex128, l.N)
		seq := make([]float64, n)
		return func(k int) {
			s, st := l.start(k)
			for j := range co {
				co[j] = x[s+j*st]
			}
			co[0] = complex(real(co[0]), 0)
			if n%2 == 0 {
				co[l.N-1] = complex(real(co[l.N-1]), 0)
			}
			t.Sequence(seq, co)
			s, st = r.start(k)
			for j, v := range seq {
				out[s+j*st] = v * scale
			}
		}
	})
	return out, err
}

// lineOf returns line k of x along l: a window on x where the line is contiguous, else a copy;
// put writes a line's new values back (a no-op for the window).
func lineOf[T any](x []T, l Lines, k int) (line []T, put func([]T)) {
	s, st := l.start(k)
	if st == 1 {
		return x[s : s+l.N], func([]T) {}
	}
	line = make([]T, l.N)
	for j := range line {
		line[j] = x[s+j*st]
	}
	return line, func(v []T) {
		for j, e := range v {
			x[s+j*st] = e
		}
	}
}

// Transforms computes the three transforms somewhere: CPU runs this package's functions,
// package cuda/cufft gives one that runs them on a GPU.
type Transforms interface {
	Complex(ctx context.Context, x []complex128, l Lines, inverse bool, scale float64) error
	Real(ctx context.Context, x []float64, l Lines, scale float64) ([]complex128, error)
	InverseReal(ctx context.Context, x []complex128, l Lines, n int, scale float64) ([]float64, error)
}

// CPU runs the transforms on the CPU (the package's functions).
var CPU Transforms = cpuTransforms{}

type cpuTransforms struct{}

func (cpuTransforms) Complex(ctx context.Context, x []complex128, l Lines, inverse bool, scale float64) error {
	return Complex(ctx, x, l, inverse, scale)
}

func (cpuTransforms) Real(ctx context.Context, x []float64, l Lines, scale float64) ([]complex128, error) {
	return Real(ctx, x, l, scale)
}

func (cpuTransforms) InverseReal(ctx context.Context, x []complex128, l Lines, n int, scale float64) ([]float64, error) {
	return InverseReal(ctx, x, l, n, scale)
}
