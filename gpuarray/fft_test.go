package gpuarray

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// fftCases returns random cases of every transform function: random shapes, chunkings, axes,
// lengths (cropping and padding) and norms.
func fftCases(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 7))
	norms := []string{"backward", "ortho", "forward"}
	var cs []check
	for i := 0; i < n; i++ {
		shape := npShape(rs, 1+rs.IntN(3), 1, 9)
		x, in := randArray(rs, "x", shape)
		axis := rs.IntN(len(shape)) - len(shape)*rs.IntN(2) // sometimes negative
		norm := norms[rs.IntN(3)]
		m := shape[(axis+len(shape))%len(shape)]
		length := 0
		if rs.IntN(3) == 0 {
			length = 1 + rs.IntN(2*m+2)
		}
		npN := "None"
		opts := []FFTOption{FFTAxis(axis), FFTNorm(norm)}
		if length > 0 {
			npN = fmt.Sprint(length)
			opts = append(opts, FFTLen(length))
		}
		args := fmt.Sprintf("n=%s, axis=%d, norm=%q", npN, axis, norm)
		for _, f := range []struct {
			name string
			fn   func(*Array, ...FFTOption) *Array
			np   string
		}{{"Fft", Fft, "fft"}, {"Ifft", Ifft, "ifft"}, {"Rfft", Rfft, "rfft"}, {"Irfft", Irfft, "irfft"}, {"Hfft", Hfft, "hfft"}, {"Ihfft", Ihfft, "ihfft"}} {
			if (f.name == "Irfft" || f.name == "Hfft") && length == 0 && m < 2 {
				continue // NumPy: invalid number of data points 0
			}
			cs = append(cs, check{
				what:   fmt.Sprintf("%s(shape %v, chunks %v, %s)", f.name, shape, x.Chunks(), args),
				got:    f.fn(x, opts...),
				code:   fmt.Sprintf("np.fft.%s(x, %s)", f.np, args),
				inputs: []input{in},
			})
		}
		if len(shape) >= 2 {
			axes := []int{0, len(shape) - 1}
			cs = append(cs,
				check{what: fmt.Sprintf("Fftn(shape %v, axes %v)", shape, axes), got: Fftn(x, FFTAxes(axes...), FFTNorm(norm)), code: fmt.Sprintf("np.fft.fftn(x, axes=%s, norm=%q)", tuple(axes), norm), inputs: []input{in}},
				check{what: fmt.Sprintf("Ifftn(shape %v)", shape), got: Ifftn(x), code: "np.fft.ifftn(x)", inputs: []input{in}},
				check{what: fmt.Sprintf("Rfftn(shape %v, axes %v)", shape, axes), got: Rfftn(x, FFTAxes(axes...)), code: fmt.Sprintf("np.fft.rfftn(x, axes=%s)", tuple(axes)), inputs: []input{in}},
			)
			if shape[len(shape)-1] >= 2 {
				cs = append(cs, check{what: fmt.Sprintf("Irfftn(shape %v)", shape), got: Irfftn(x, FFTNorm(norm)), code: fmt.Sprintf("np.fft.irfftn(x, norm=%q)", norm), inputs: []input{in}})
			}
		}
	}
	return cs
}

// complexValues returns an array's values as complex numbers.
func complexValues(t *testing.T, a *Array, opts ...ComputeOption) []complex128 {
	t.Helper()
	c, err := a.Compute(opts...)
	if err != nil {
		t.Fatalf("compute: %v", err)
	}
	v, err := c.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	return dtype.Convert(v, dtype.Complex128).Complex128s()
}

// checkFFT compares every case with NumPy to 1e-12 of the result's largest magnitude (FFTs are
// not bit-exact across implementations: the rounding of the sums differs).
func checkFFT(t *testing.T, cs []check, opts ...ComputeOption) {
	t.Helper()
	checkClose(t, cs, 1e-12, opts...)
}

// checkClose compares every case (real or complex) with NumPy to tol times the result's
// largest magnitude, for results that depend on the order of floating-point operations.
func checkClose(t *testing.T, cs []check, tol float64, opts ...ComputeOption) {
	t.Helper()
	cases := make([]npCase, len(cs))
	for i, c := range cs {
		cases[i] = npCase{Code: "[np.real(r), np.imag(r)] if isinstance(r := np.asarray(" + c.code + "), np.ndarray) else r", Inputs: map[string]npArray{}}
		for _, in := range c.inputs {
			cases[i].Inputs[in.name] = in.np()
		}
	}
	res := numpy(t, cases)
	for i, c := range cs {
		r := res[i]
		if r.Err != "" {
			if c.got.Err() == nil {
				t.Errorf("%s: numpy refuses (%s), we do not", c.what, r.Err)
			}
			continue
		}
		if err := c.got.Err(); err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if len(r.List) != 2 {
			t.Fatalf("%s: numpy answered %+v", c.what, r)
		}
		if fmt.Sprint(c.got.Shape()) != fmt.Sprint(r.List[0].Shape) {
			t.Errorf("%s: shape %v, numpy %v", c.what, c.got.Shape(), r.List[0].Shape)
			continue
		}
		re, im := r.List[0].values(t), r.List[1].values(t)
		got := complexValues(t, c.got, opts...)
		scale := 1.0
		for j := range re {
			scale = max(scale, math.Hypot(re[j], im[j]))
		}
		for j := range re {
			if d := math.Hypot(real(got[j])-re[j], imag(got[j])-im[j]); !(d <= tol*scale) {
				t.Errorf("%s: element %d is %v, numpy %v (%s)", c.what, j, got[j], complex(re[j], im[j]), c.code)
				break
			}
		}
	}
}

func TestFFTMatchesNumPy(t *testing.T) {
	checkFFT(t, fftCases(1, 12), Inline())
	checkFFT(t, fftCases(2, 12)) // the threaded scheduler
}

func TestFFTDTypesAndChunks(t *testing.T) {
	x := Arange(0, 24, 1, Chunks(5)).Reshape(4, 6).Rechunk(2, 3)
	y := Fft(x, FFTAxis(0))
	if y.DType() != Complex128 {
		t.Errorf("Fft of float64: dtype %v, want complex128", y.DType())
	}
	if got := fmt.Sprint(y.Chunks()); got != "[[4] [3 3]]" {
		t.Errorf("Fft along axis 0 keeps axis 1's chunks and makes axis 0 one chunk: %s", got)
	}
	if d := Rfft(x.AsType(Float32)).DType(); d != Complex64 {
		t.Errorf("Rfft of float32: dtype %v, want complex64 (NumPy 2)", d)
	}
	if d := Irfft(x).DType(); d != Float64 {
		t.Errorf("Irfft: dtype %v, want float64", d)
	}
	for _, bad := range []*Array{Fft(x, FFTAxis(2)), Fft(x, FFTLen(0)), Fft(x, FFTNorm("none")), Fftn(x, FFTLen(3, 3, 3)), Fft(Full(1))} {
		if bad.Err() == nil {
			t.Errorf("a bad transform has no error: shape %v", bad.Shape())
		}
	}
}

func TestFFTFreq(t *testing.T) {
	for _, n := range []int{1, 2, 7, 8} {
		checkFFT(t, []check{
			{what: fmt.Sprintf("FftFreq(%d)", n), got: FftFreq(n, 0.1), code: fmt.Sprintf("np.fft.fftfreq(%d, 0.1)", n)},
			{what: fmt.Sprintf("RfftFreq(%d)", n), got: RfftFreq(n, 0.1), code: fmt.Sprintf("np.fft.rfftfreq(%d, 0.1)", n)},
		})
	}
}

// TestGPUFFTMatchesNumPy runs the transforms' tasks on a GPU (cuFFT; the fused values on the
// device) and checks them against NumPy, and that no task fell back to the CPU.
func TestGPUFFTMatchesNumPy(t *testing.T) {
	needGPU(t)
	cs := fftCases(3, 8)
	for _, c := range cs {
		if c.got.Err() != nil {
			continue
		}
		// One-axis transforms of data plan as one stage: it must run on the GPU.
		if st, err := plan.Lower(0, c.got.n, map[*expr.Node]dtype.Slice{}, plan.Options{}); err == nil {
			if err := cuda.Runs(st.Kernel); err != nil {
				t.Fatalf("%s: would run on the CPU: %v", c.what, err)
			}
		}
	}
	checkFFT(t, cs, OnGPU())
}

// TestGPURfftReadsFusedValuesInPlace checks cuFFT's device runner: a forward real transform
// of generated values (Rfft, Ihfft; last axis and strided lines; float32; a norm) reads them
// where the fused kernel left them and gives the bits of the same transform of those values
// uploaded from the host (where the host data's transform reads them plain); a padded line and
// a complex transform of real values (read on the device too since cuda.PrepareLines) give
// those bits as well. All match the CPU to rounding.
func TestGPURfftReadsFusedValuesInPlace(t *testing.T) {
	needGPU(t)
	x := NewRandomState(31).StandardNormal(Shape(48, 1000), Chunks(16, 250))
	xv, err := x.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	data := FromSlice(xv, Shape(48, 1000), Chunks(16, 250))
	cases := []struct {
		name string
		f    func(a *Array) *Array
	}{
		{"Rfft(x)", func(a *Array) *Array { return Rfft(a) }},
		{"Rfft(x, axis 0, ortho)", func(a *Array) *Array { return Rfft(a, FFTAxis(0), FFTNorm("ortho")) }},
		{"Ihfft(2x)", func(a *Array) *Array { return Ihfft(a.Mul(2)) }},
		{"Rfft(float32 x)", func(a *Array) *Array { return Rfft(a.AsType(Float32)) }},
		{"Rfft(x, n 1200)", func(a *Array) *Array { return Rfft(a, FFTLen(1200)) }},
		{"Fft(x + 1)", func(a *Array) *Array { return Fft(a.Add(1)) }},
	}
	for _, c := range cases {
		got, err := c.f(x).ToSliceComplex128(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		host, err := c.f(data).ToSliceComplex128(OnGPU())
		if err != nil {
			t.Fatalf("%s of host data: %v", c.name, err)
		}
		cpu, err := c.f(data).ToSliceComplex128(Threads(0))
		if err != nil {
			t.Fatalf("%s on the CPU: %v", c.name, err)
		}
		if len(got) != len(cpu) || len(host) != len(cpu) {
			t.Fatalf("%s: %d, %d and %d values", c.name, len(got), len(host), len(cpu))
		}
		var norm float64
		for _, v := range cpu {
			norm = math.Max(norm, cmplx.Abs(v))
		}
		for i := range cpu {
			if math.Float64bits(real(got[i])) != math.Float64bits(real(host[i])) || math.Float64bits(imag(got[i])) != math.Float64bits(imag(host[i])) {
				t.Fatalf("%s[%d]: generated on the GPU %v, uploaded %v", c.name, i, got[i], host[i])
			}
			if cmplx.Abs(got[i]-cpu[i]) > 1e-5*norm {
				t.Fatalf("%s[%d]: GPU %v, CPU %v", c.name, i, got[i], cpu[i])
			}
		}
	}
}
