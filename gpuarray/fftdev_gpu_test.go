package gpuarray

import (
	"bytes"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGPUTransformsReadFusedValuesOnDevice checks cuFFT's device runner for every transform:
// fused values (float64, float32, complex128, complex64; lines whole, padded, cropped,
// contiguous and strided; the n-d functions) are read where the fused kernel left them (padded,
// widened, conjugated on the device by cuda.PrepareLines), and give the bits of the same
// transform of those values uploaded from host memory (the same cuFFT plan on the same words);
// Path names no host step; all match the CPU to rounding. Chunks persisted on the GPU, complex
// ones included, are read in place too.
func TestGPUTransformsReadFusedValuesOnDevice(t *testing.T) {
	needGPU(t)
	rs := rand.New(rand.NewPCG(41, 2))
	const rows, cols = 24, 300
	re := make([]float64, rows*cols)
	zs := make([]complex128, rows*cols)
	for i := range re {
		re[i] = rs.NormFloat64()
		zs[i] = complex(rs.NormFloat64(), rs.NormFloat64())
	}
	x := FromSlice(re, Shape(rows, cols), Chunks(8, 100))
	z := FromSliceComplex128(zs, Shape(rows, cols), Chunks(8, 100))
	type op struct {
		what string
		f    func(*Array) *Array
	}
	var ops []op
	for _, f := range []struct {
		name string
		fn   func(*Array, ...FFTOption) *Array
	}{{"Fft", Fft}, {"Ifft", Ifft}, {"Rfft", Rfft}, {"Irfft", Irfft}, {"Hfft", Hfft}, {"Ihfft", Ihfft}} {
		for _, o := range []struct {
			what string
			opts []FFTOption
		}{
			{"", nil},
			{"n 420", []FFTOption{FFTLen(420)}},
			{"n 301", []FFTOption{FFTLen(301)}},
			{"n 200", []FFTOption{FFTLen(200)}},
			{"axis 0", []FFTOption{FFTAxis(0)}},
			{"axis 0, n 31, ortho", []FFTOption{FFTAxis(0), FFTLen(31), FFTNorm("ortho")}},
		} {
			fn, opts := f.fn, o.opts
			ops = append(ops, op{fmt.Sprintf("%s(%s)", f.name, o.what), func(a *Array) *Array { return fn(a, opts...) }})
		}
	}
	ops = append(ops,
		op{"Fftn", func(a *Array) *Array { return Fftn(a) }},
		op{"Ifftn(s 30, 320)", func(a *Array) *Array { return Ifftn(a, FFTLen(30, 320)) }},
		op{"Rfftn", func(a *Array) *Array { return Rfftn(a) }},
		op{"Irfftn(s 20, 500)", func(a *Array) *Array { return Irfftn(a, FFTLen(20, 500)) }},
	)
	for _, dt := range []DType{Float64, Float32, Complex128, Complex64} {
		base := x
		if dt.IsComplex() {
			base = z
		}
		fused := base.AsType(dt).Mul(2)
		host, err := fused.Compute(Threads(0)) // the same values, as host data
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ops {
			what := fmt.Sprintf("%s of 2x %v", c.what, dt)
			got, err := c.f(fused).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if p := got.Path(); strings.Contains(p, "host") {
				t.Errorf("%s: Path %q names a host step", what, p)
			}
			up, err := c.f(host).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s of host data: %v", what, err)
			}
			cpu, err := c.f(host).Compute(Threads(0))
			if err != nil {
				t.Fatalf("%s on the CPU: %v", what, err)
			}
			transformBits(t, what, got, up, cpu)
		}
	}
	// Chunks persisted on the GPU (whole lines in a chunk), read in place by every transform,
	// complex ones too.
	for _, a := range []*Array{x.Rechunk(8, cols), z.Rechunk(8, cols), z.AsType(Complex64).Rechunk(8, cols)} {
		p := a.Persist(OnGPU())
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		hostA, err := a.Compute(Threads(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []op{
			{"Fft", func(a *Array) *Array { return Fft(a) }},
			{"Ifft(n 400)", func(a *Array) *Array { return Ifft(a, FFTLen(400)) }},
			{"Irfft", func(a *Array) *Array { return Irfft(a) }},
			{"Hfft(n 401)", func(a *Array) *Array { return Hfft(a, FFTLen(401)) }},
			{"Rfft", func(a *Array) *Array { return Rfft(a) }},
		} {
			what := fmt.Sprintf("%s of a persisted %v array", c.what, a.DType())
			got, err := c.f(p).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if path := got.Path(); strings.Contains(path, "host") {
				t.Errorf("%s: Path %q names a host step", what, path)
			}
			up, err := c.f(hostA).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s of host data: %v", what, err)
			}
			cpu, err := c.f(hostA).Compute(Threads(0))
			if err != nil {
				t.Fatalf("%s on the CPU: %v", what, err)
			}
			transformBits(t, what, got, up, cpu)
		}
		p.Release()
	}
}

// transformBits checks that got (fused values read on the device) has the bytes of up (the same
// values uploaded from host memory) and is within rounding of cpu.
func transformBits(t *testing.T, what string, got, up, cpu *Array) {
	t.Helper()
	g, err := got.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	u, err := up.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	if g.DType() != u.DType() || !bytes.Equal(g.Bytes(), u.Bytes()) {
		t.Errorf("%s: read on the device (%v, %d values) differs from the upload's bits (%v, %d values)", what, g.DType(), g.Len(), u.DType(), u.Len())
		return
	}
	gv, err := got.ToSliceComplex128()
	if err != nil {
		t.Fatal(err)
	}
	cv, err := cpu.ToSliceComplex128()
	if err != nil {
		t.Fatal(err)
	}
	if len(gv) != len(cv) {
		t.Fatalf("%s: %d values on the GPU, %d on the CPU", what, len(gv), len(cv))
	}
	var norm float64
	for _, v := range cv {
		norm = math.Max(norm, cmplx.Abs(v))
	}
	for i := range cv {
		if cmplx.Abs(gv[i]-cv[i]) > 1e-5*norm {
			t.Fatalf("%s[%d]: GPU %v, CPU %v", what, i, gv[i], cv[i])
		}
	}
}
