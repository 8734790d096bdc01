package gpuarray

import (
	"math"
	"math/cmplx"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// closeSlices compares got with want: bit for bit where exact, else within tol relative to the
// largest magnitude of want.
func closeSlices(t *testing.T, what string, got, want dtype.Slice, exact bool, tol float64) {
	t.Helper()
	if got.Len() != want.Len() {
		t.Fatalf("%s: %d values, want %d", what, got.Len(), want.Len())
	}
	if want.DType().IsComplex() {
		g, w := dtype.Convert(got, dtype.Complex128).Complex128s(), dtype.Convert(want, dtype.Complex128).Complex128s()
		scale := 0.0
		for _, v := range w {
			scale = math.Max(scale, cmplx.Abs(v))
		}
		for i := range w {
			if d := cmplx.Abs(g[i] - w[i]); d > tol*math.Max(scale, 1) || cmplx.IsNaN(g[i]) != cmplx.IsNaN(w[i]) {
				t.Fatalf("%s: value %d is %v, want %v", what, i, g[i], w[i])
			}
		}
		return
	}
	if exact {
		if gb, wb := got.Bytes(), want.Bytes(); got.DType() != want.DType() || string(gb) != string(wb) {
			g, w := dtype.Convert(got, dtype.Float64).Float64s(), dtype.Convert(want, dtype.Float64).Float64s()
			for i := range w {
				if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
					t.Fatalf("%s: value %d is %v (%v), want %v (%v)", what, i, g[i], got.DType(), w[i], want.DType())
				}
			}
			t.Fatalf("%s: %v values, want %v", what, got.DType(), want.DType())
		}
		return
	}
	g, w := dtype.Convert(got, dtype.Float64).Float64s(), dtype.Convert(want, dtype.Float64).Float64s()
	scale := 0.0
	for _, v := range w {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range w {
		if d := math.Abs(g[i] - w[i]); d > tol*math.Max(scale, 1) || math.IsNaN(g[i]) != math.IsNaN(w[i]) {
			t.Fatalf("%s: value %d is %v, want %v", what, i, g[i], w[i])
		}
	}
}

// hostCopy returns a's values (held on a GPU) as an array in host memory, with a's chunks.
func hostCopy(t *testing.T, a *Array) *Array {
	t.Helper()
	v, err := a.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	d, err := expr.NewData(v.Clone(), a.n.Shape, a.n.Chunks)
	if err != nil {
		t.Fatal(err)
	}
	return &Array{n: d}
}

// TestGPUCallOutputsStayOnDevice: each call stage on an input persisted on the GPU leaves its
// output in device memory (Where is the GPU; Path names no host assembly), with the CPU's
// values (bit for bit for sorts and scans; transforms within cuFFT's rounding), and a chained
// stage after it (abs, then a sum) reads it there and gives the CPU's sum.
func TestGPUCallOutputsStayOnDevice(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(32)
	x := rs.StandardNormal(Shape(600, 500), Chunks(150, 500))
	px := x.Persist(OnGPU())
	if err := px.Err(); err != nil {
		t.Fatal(err)
	}
	ints := rs.Integers(-1000, 1000, Shape(600, 500), Chunks(150, 500), WithDType(Int32))
	pints := ints.Persist(OnGPU())
	if err := pints.Err(); err != nil {
		t.Fatal(err)
	}
	// The CPU's values of the same inputs: the persisted ones (the GPU's normals may differ
	// from the CPU's in the last bit).
	x, ints = hostCopy(t, px), hostCopy(t, pints)
	cases := []struct {
		name  string
		f     func(*Array) *Array
		in    *Array // the input on the host, for the CPU's values
		held  *Array // the same values persisted on the GPU
		exact bool
	}{
		{"sort along 1", func(a *Array) *Array { return Sort(a, 1) }, x, px, true},
		{"sort along 0 (across chunks)", func(a *Array) *Array { return Sort(a, 0) }, x, px, true},
		{"argsort descending", func(a *Array) *Array { return Argsort(a, 1, Descending()) }, x, px, true},
		{"topk 5", func(a *Array) *Array { return TopK(a, 5, 1) }, x, px, true},
		{"sort of float32", func(a *Array) *Array { return Sort(a.AsType(Float32), 1) }, x, px, true},
		{"sort of int32", func(a *Array) *Array { return Sort(a, 0) }, ints, pints, true},
		{"cumsum along 1", func(a *Array) *Array { return CumulativeSum(a, 1, false) }, x, px, true},
		{"cumsum along 0", func(a *Array) *Array { return CumulativeSum(a, 0, false) }, x, px, true},
		{"cumprod of int32 along 1", func(a *Array) *Array { return CumulativeProd(a, 1, false) }, ints, pints, true},
		{"fft along 1", func(a *Array) *Array { return Fft(a, FFTAxis(1)) }, x, px, false},
		{"fft along 0", func(a *Array) *Array { return Fft(a, FFTAxis(0)) }, x, px, false},
		{"ifft (scaled on the device)", func(a *Array) *Array { return Ifft(a, FFTAxis(1)) }, x, px, false},
		{"rfft padded", func(a *Array) *Array { return Rfft(a, FFTAxis(1), FFTLen(512)) }, x, px, false},
		{"irfft", func(a *Array) *Array { return Irfft(a, FFTAxis(1)) }, x, px, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.f(c.in).Compute(Inline())
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.f(c.held).Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			if got.Where() != "gpu 0" {
				t.Fatalf("the output is not on the GPU: where %q, path %s", got.Where(), got.Path())
			}
			if p := got.Path(); strings.Contains(p, "assembled on the host") || strings.Contains(p, "main memory") || strings.Contains(p, "host trip") {
				t.Fatalf("path names a host step: %s", p)
			}
			wv, err := want.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			gv, err := got.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			closeSlices(t, c.name, gv, wv, c.exact, 1e-12)
			// A chained stage reads the kept output in place: abs, then a sum over everything.
			ws, err := c.f(c.in).Abs().Sum().Float64(Inline())
			if err != nil {
				t.Fatal(err)
			}
			chained := c.f(c.held).Abs().Sum()
			gs, err := chained.Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			if p := gs.Path(); strings.Contains(p, "host read") || strings.Contains(p, "host trip") || strings.Contains(p, "host fallback") {
				t.Fatalf("the chained sum's path names a host step: %s", p)
			}
			s, err := gs.Float64()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(s-ws) > 1e-9*math.Max(math.Abs(ws), 1) {
				t.Fatalf("abs then sum: %v on the GPU, %v on the CPU", s, ws)
			}
		})
	}
}

// TestGPUResultsDroppedInLoop computes, in a loop, results of 40% of the GPU pool each (a call
// stage's output and fused ones, in turn) and drops them: each stays on the GPU, because the
// dropped one before it is back in the pool before the next allocation needs it (Pool.Reclaim
// collects until every unreachable array's cleanup has run), on any device size.
func TestGPUResultsDroppedInLoop(t *testing.T) {
	needGPU(t)
	s, err := gpuScheduler([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	dev := s.(*gpuSched).devs[0]
	var limit uint64
	if err := dev.Do(t.Context(), func() error { limit = dev.Pool().Limit(); return nil }); err != nil {
		t.Fatal(err)
	}
	rows := int(0.4 * float64(limit) / 8 / 4096)
	rows -= rows % 8
	x := NewRandomState(40).StandardNormal(Shape(rows, 4096), Chunks(rows/8, 4096))
	for i := range 6 {
		r := x.Add(float64(i))
		if i%2 == 1 {
			r = CumulativeSum(x, 1, false) // a call stage's output, kept where it is computed
		}
		c, err := r.Compute(OnGPU())
		if err != nil {
			t.Fatalf("result %d of %d x 4096 (%.3g GB, 40%% of the pool): %v", i, rows, float64(rows)*4096*8/1e9, err)
		}
		if c.Where() != "gpu 0" {
			t.Fatalf("result %d of %d x 4096 (%.3g GB) is not on the GPU: %s", i, rows, float64(rows)*4096*8/1e9, c.Path())
		}
	}
}

// TestGPUCallSequenceOnPersisted runs call stages one after another on one persisted array, as
// a notebook does, each result brought to the host and released before the next (the order of
// bench ops --calls): every value matches the CPU's, and the persisted input stays intact.
func TestGPUCallSequenceOnPersisted(t *testing.T) {
	needGPU(t)
	x := NewRandomState(42).StandardNormal(Shape(2000, 2000), Chunks(500, 500))
	px := x.Persist(OnGPU())
	if err := px.Err(); err != nil {
		t.Fatal(err)
	}
	defer px.Release()
	x = hostCopy(t, px)
	ops := []struct {
		name  string
		f     func(*Array) *Array
		exact bool
	}{
		{"sum", func(a *Array) *Array { return a.Sum() }, false},
		{"cumsum(axis=1)", func(a *Array) *Array { return CumulativeSum(a, 1, false) }, false},
		{"cumsum(axis=0)", func(a *Array) *Array { return CumulativeSum(a, 0, false) }, false},
		{"sort(axis=1)", func(a *Array) *Array { return Sort(a, 1) }, true},
		{"argsort(axis=1)", func(a *Array) *Array { return Argsort(a, 1) }, true},
		{"sort(axis=1)[:, :10]", func(a *Array) *Array { return Sort(a, 1).Slice(All(), Span(0, 10)) }, true},
		{"fft(axis=1)", func(a *Array) *Array { return Fft(a, FFTAxis(1)) }, false},
		{"sum(abs(fft(axis=1)))", func(a *Array) *Array { return Fft(a, FFTAxis(1)).Abs().Sum() }, false},
		{"rfft(axis=0)", func(a *Array) *Array { return Rfft(a, FFTAxis(0)) }, false},
		{"sum(cumsum(axis=1))", func(a *Array) *Array { return CumulativeSum(a, 1, false).Sum() }, false},
		{"sort(axis=1) again", func(a *Array) *Array { return Sort(a, 1) }, true},
	}
	for _, op := range ops {
		want, err := op.f(x).Compute(Inline())
		if err != nil {
			t.Fatalf("%s on the CPU: %v", op.name, err)
		}
		wv, err := want.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		for rep := range 3 {
			got, err := op.f(px).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s, run %d: %v", op.name, rep, err)
			}
			gv, err := got.n.Values()
			if err != nil {
				t.Fatalf("%s, run %d: %v", op.name, rep, err)
			}
			closeSlices(t, op.name, gv, wv, op.exact, 1e-9)
			got.Release()
		}
	}
}
