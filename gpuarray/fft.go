package gpuarray

import (
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/expr"

	// Fourier transforms of planned library calls run on GPUs when cuFFT is present.
	_ "github.com/gpunotes/gpunotes/gpuarray/cuda/cufft"
)

// FFTOption adjusts a Fourier transform (the keyword arguments of numpy.fft's functions):
// FFTLen, FFTAxis, FFTAxes, FFTNorm.
type FFTOption func(*fftConfig)

type fftConfig struct {
	n       []int // transform lengths, one per axis (or one for the 1-d functions)
	axes    []int
	hasAxes bool
	norm    string
}

// FFTLen sets the transform length(s) (NumPy's n, or s for the n-d functions): the input is
// cropped or padded with zeros to it along the transformed axis.
func FFTLen(n ...int) FFTOption { return func(c *fftConfig) { c.n = append([]int(nil), n...) } }

// FFTAxis sets the transformed axis of a 1-d transform (default -1, the last).
func FFTAxis(axis int) FFTOption {
	return func(c *fftConfig) { c.axes, c.hasAxes = []int{axis}, true }
}

// FFTAxes sets the transformed axes of an n-d transform (default: all, or the last len(FFTLen)).
func FFTAxes(axes ...int) FFTOption {
	return func(c *fftConfig) { c.axes, c.hasAxes = append([]int(nil), axes...), true }
}

// FFTNorm sets the normalization: "backward" (the default: the inverse transforms divide by n),
// "ortho" (both by sqrt(n)) or "forward" (the forward transforms divide by n).
func FFTNorm(norm string) FFTOption { return func(c *fftConfig) { c.norm = norm } }

// FFT returns the discrete Fourier transform of x along one axis, complex128 (complex64 for
// float32 and complex64 input), as numpy.fft.fft. The transformed axis is brought into one
// chunk, as dask does; the other axes keep their chunks. Every task runs on the CPU (gonum's
// FFTPACK algorithms) or, with OnGPU, on a GPU (cuFFT, loaded at run time).
func FFT(x *Array, opts ...FFTOption) *Array { return fft1(x, expr.FnFFT, "FFT", opts) }

// IFFT returns the inverse discrete Fourier transform of x along one axis (numpy.fft.ifft).
func IFFT(x *Array, opts ...FFTOption) *Array { return fft1(x, expr.FnIFFT, "IFFT", opts) }

// RFFT returns the n/2+1 non-negative-frequency terms of the transform of real x along one
// axis (numpy.fft.rfft).
func RFFT(x *Array, opts ...FFTOption) *Array { return fft1(x, expr.FnRFFT, "RFFT", opts) }

// IRFFT returns the real inverse of Rfft along one axis, of length FFTLen (default
// 2*(m-1) for m input terms), as numpy.fft.irfft.
func IRFFT(x *Array, opts ...FFTOption) *Array { return fft1(x, expr.FnIRFFT, "IRFFT", opts) }

// HFFT returns the real spectrum of a signal with Hermitian symmetry given by its first half
// (numpy.fft.hfft): Irfft of the conjugate, scaled as a forward transform.
func HFFT(x *Array, opts ...FFTOption) *Array { return fft1(x, expr.FnHFFT, "HFFT", opts) }

// IHFFT returns the inverse of Hfft (numpy.fft.ihfft): the conjugate of Rfft, scaled as an
// inverse transform.
func IHFFT(x *Array, opts ...FFTOption) *Array { return fft1(x, expr.FnIHFFT, "IHFFT", opts) }

// FFTN returns the n-d discrete Fourier transform over FFTAxes (default: every axis), as
// numpy.fft.fftn: one 1-d transform per axis, each axis brought into one chunk in turn.
func FFTN(x *Array, opts ...FFTOption) *Array { return fftn(x, expr.FnFFT, "FFTN", opts) }

// IFFTN returns the n-d inverse discrete Fourier transform (numpy.fft.ifftn).
func IFFTN(x *Array, opts ...FFTOption) *Array { return fftn(x, expr.FnIFFT, "IFFTN", opts) }

// RFFTN returns the n-d transform of real x (numpy.fft.rfftn): Rfft along the last of the
// axes, then Fft along the others.
func RFFTN(x *Array, opts ...FFTOption) *Array { return fftn(x, expr.FnRFFT, "RFFTN", opts) }

// IRFFTN returns the real inverse of Rfftn (numpy.fft.irfftn): Ifft along all but the last
// axis, then Irfft along it.
func IRFFTN(x *Array, opts ...FFTOption) *Array { return fftn(x, expr.FnIRFFT, "IRFFTN", opts) }

func fftOptions(name string, opts []FFTOption) (fftConfig, error) {
	c := fftConfig{norm: "backward"}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch c.norm {
	case "", "backward", "ortho", "forward":
	default:
		return c, fmt.Errorf("%s: norm %q is not \"backward\", \"ortho\" or \"forward\"", name, c.norm)
	}
	for _, n := range c.n {
		if n < 1 {
			return c, fmt.Errorf("%s: invalid number of data points %d (FFTLen must be at least 1)", name, n)
		}
	}
	return c, nil
}

// fftScale returns the factor a transform of length n applies for norm.
func fftScale(fn expr.CallFn, norm string, n int) float64 {
	inverse := fn == expr.FnIFFT || fn == expr.FnIRFFT || fn == expr.FnHFFT // the direction of the transform computed
	if fn == expr.FnHFFT || fn == expr.FnIHFFT {
		// NumPy's hfft is irfft with the forward and backward norms swapped, ihfft likewise.
		switch norm {
		case "forward":
			norm = "backward"
		case "backward", "":
			norm = "forward"
		}
	}
	switch {
	case norm == "ortho":
		return 1 / math.Sqrt(float64(n))
	case (norm == "backward" || norm == "") == inverse:
		return 1 / float64(n)
	}
	return 1
}

func fft1(x *Array, fn expr.CallFn, name string, opts []FFTOption) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	c, err := fftOptions(name, opts)
	if err != nil {
		return errArray(err)
	}
	axis := -1
	if c.hasAxes {
		if len(c.axes) != 1 {
			return errArray(fmt.Errorf("%s: one axis, got FFTAxes%v", name, c.axes))
		}
		axis = c.axes[0]
	}
	n := 0
	switch len(c.n) {
	case 0:
	case 1:
		n = c.n[0]
	default:
		return errArray(fmt.Errorf("%s: one length, got FFTLen%v", name, c.n))
	}
	return wrap(fftAxis(x.n, fn, name, axis, n, c.norm))
}

// fftAxis applies one transform along axis (negative: from the end) of length n (0: the
// default for the input's length).
func fftAxis(a *expr.Node, fn expr.CallFn, name string, axis, n int, norm string) (*expr.Node, error) {
	r := len(a.Shape)
	if r == 0 {
		return nil, fmt.Errorf("%s: a 0-d array has no axis to transform", name)
	}
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return nil, fmt.Errorf("%s: axis %d out of range for shape %s", name, axis, expr.ShapeString(a.Shape))
	}
	m := a.Shape[ax]
	if n == 0 {
		n = m
		if fn == expr.FnIRFFT || fn == expr.FnHFFT {
			n = 2 * (m - 1)
		}
	}
	if n < 1 {
		return nil, fmt.Errorf("%s: invalid number of data points %d along axis %d of shape %s", name, n, ax, expr.ShapeString(a.Shape))
	}
	call := expr.Call{Fn: fn, Axis: ax, N: n, Scale: fftScale(fn, norm, n)}
	if in := call.InLen(); m > in { // crop
		idx := make([]expr.Index, ax+1)
		for d := range idx {
			idx[d] = expr.Index{Step: 1}
		}
		idx[ax] = expr.Index{Step: 1, Stop: in, HasStop: true}
		var err error
		if a, err = expr.NewSlice(a, idx); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(a.Chunks[ax]) != 1 {
		chunks := make([][]int, r)
		copy(chunks, a.Chunks)
		chunks[ax] = []int{a.Shape[ax]}
		var err error
		if a, err = expr.NewRechunk(a, chunks); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	out, err := expr.NewCall(a, call, fftDType(fn, a.DType))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// fftDType is NumPy 2's result type: single precision stays single.
func fftDType(fn expr.CallFn, in expr.DType) expr.DType {
	single := in == expr.Float32 || in == expr.Complex64
	if fn == expr.FnIRFFT || fn == expr.FnHFFT {
		if single {
			return expr.Float32
		}
		return expr.Float64
	}
	if single {
		return expr.Complex64
	}
	return expr.Complex128
}

func fftn(x *Array, fn expr.CallFn, name string, opts []FFTOption) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	c, err := fftOptions(name, opts)
	if err != nil {
		return errArray(err)
	}
	r := len(x.n.Shape)
	axes := c.axes
	if !c.hasAxes {
		k := r
		if len(c.n) > 0 {
			k = len(c.n)
		}
		if k > r {
			return errArray(fmt.Errorf("%s: %d lengths for an array of %d axes", name, k, r))
		}
		for d := r - k; d < r; d++ {
			axes = append(axes, d)
		}
	}
	if len(c.n) > 0 && len(c.n) != len(axes) {
		return errArray(fmt.Errorf("%s: FFTLen%v and axes %v differ in length", name, c.n, axes))
	}
	if len(axes) == 0 {
		return errArray(fmt.Errorf("%s: no axes to transform", name))
	}
	lenOf := func(i int) int {
		if len(c.n) > 0 {
			return c.n[i]
		}
		return 0
	}
	last := len(axes) - 1
	a := x.n
	step := func(i int, f expr.CallFn) {
		if err == nil {
			a, err = fftAxis(a, f, name, axes[i], lenOf(i), c.norm)
		}
	}
	switch fn {
	case expr.FnRFFT: // the real transform first, on the last axis
		step(last, expr.FnRFFT)
		for i := 0; i < last; i++ {
			step(i, expr.FnFFT)
		}
	case expr.FnIRFFT: // the complex inverses first, the real one last
		for i := 0; i < last; i++ {
			step(i, expr.FnIFFT)
		}
		step(last, expr.FnIRFFT)
	default:
		for i := len(axes) - 1; i >= 0; i-- {
			step(i, fn)
		}
	}
	return wrap(a, err)
}

// fftFreq returns the sample frequencies of a transform of length n with sample spacing d
// (numpy.fft.fftfreq): 0, 1, …, n/2-1 (or (n-1)/2), then the negative ones, divided by d*n.
func fftFreq(n int, d float64, opts ...ArrayOption) *Array {
	if n < 1 {
		return errArray(fmt.Errorf("FftFreq: n %d must be positive", n))
	}
	f := make([]float64, n)
	pos := (n-1)/2 + 1
	for i := range f {
		k := i
		if i >= pos {
			k = i - n
		}
		f[i] = float64(k) / (d * float64(n))
	}
	return FromSlice(f, opts...)
}

// rfftFreq returns the sample frequencies of Rfft's terms (numpy.fft.rfftfreq): 0, 1, …, n/2,
// divided by d*n.
func rfftFreq(n int, d float64, opts ...ArrayOption) *Array {
	if n < 1 {
		return errArray(fmt.Errorf("RfftFreq: n %d must be positive", n))
	}
	f := make([]float64, n/2+1)
	for i := range f {
		f[i] = float64(i) / (d * float64(n))
	}
	return FromSlice(f, opts...)
}

// FFTShift moves the zero-frequency term to the center of the given axes (default: all), as
// numpy.fft.fftshift: a roll by n/2 along each.
func FFTShift(x *Array, axes ...int) *Array { return fftShift(x, axes, false) }

// IFFTShift undoes FftShift (numpy.fft.ifftshift): a roll by -(n/2) along each axis.
func IFFTShift(x *Array, axes ...int) *Array { return fftShift(x, axes, true) }

func fftShift(x *Array, axes []int, inverse bool) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	shape := x.Shape()
	if len(axes) == 0 {
		for d := range shape {
			axes = append(axes, d)
		}
	}
	for _, ax := range axes {
		a := ax
		if a < 0 {
			a += len(shape)
		}
		if a < 0 || a >= len(shape) {
			return errArray(fmt.Errorf("FftShift: axis %d out of range for shape %s", ax, expr.ShapeString(shape)))
		}
		shift := shape[a] / 2
		if inverse {
			shift = -shift
		}
		x = Roll(x, shift, a)
	}
	return x
}
