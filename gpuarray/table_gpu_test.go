package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
)

var (
	gpuIntTypes     = []DType{Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64}
	gpuComplexTypes = []DType{Complex64, Complex128}
	allDTypes       = []DType{Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float32, Float64, Complex64, Complex128}
)

// gpuTestArray is n values of dt in chunks of 700, with the values where results go wrong:
// NaN, ±Inf, -0, subnormals and halves for floats (and as parts of complex numbers), the
// extremes of each integer width and small values for integers, and values beyond 2^31 and
// 2^63 for the float to integer casts.
func gpuTestArray(r *rand.Rand, dt DType, n int) *Array {
	floats := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 5e-324, -1e-310, 0.5, -0.5, 1.5, 2.5, -2.5, 1, -1,
		2147483647.5, -2147483648.5, 4294967296.5, 9.3e18, -9.3e18, 1.8e19, 3e19, 65535.5, -129}
	f := func() float64 {
		if r.IntN(3) == 0 {
			return floats[r.IntN(len(floats))]
		}
		return r.NormFloat64() * 10
	}
	opts := []ArrayOption{Chunks(700), WithDType(dt)}
	switch {
	case dt.IsFloat():
		v := make([]float64, n)
		for i := range v {
			v[i] = f()
		}
		return FromSlice(v, opts...)
	case dt.IsComplex():
		v := make([]complex128, n)
		for i := range v {
			v[i] = complex(f(), f())
		}
		return FromSliceComplex128(v, opts...)
	}
	ints := []int64{0, 1, -1, 2, -2, 7, 63, 64, 127, -128, 255, 32767, -32768, 65535, math.MaxInt32, math.MinInt32, math.MaxUint32, math.MaxInt64, math.MinInt64}
	v := make([]int64, n)
	for i := range v {
		switch r.IntN(3) {
		case 0:
			v[i] = ints[r.IntN(len(ints))]
		case 1:
			v[i] = int64(r.IntN(21)) - 10
		default:
			v[i] = int64(r.Uint64())
		}
	}
	return FromSliceInt64(v, opts...) // wraps into dt
}

// sameOnGPU computes y on the CPU and on the GPU and fails unless the GPU ran it in the fused
// kernel (no host step) with the CPU's dtype and values: bit-equal for ulp 0, else within ulp
// units in the last place of the dtype (NaN matching NaN).
func sameOnGPU(t *testing.T, what string, y *Array, ulp int) {
	t.Helper()
	if err := y.Err(); err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	cpu, err := y.Compute()
	if err != nil {
		t.Errorf("%s on the CPU: %v", what, err)
		return
	}
	gpu, err := y.Compute(OnGPU())
	if err != nil {
		t.Errorf("%s on the GPU: %v", what, err)
		return
	}
	if strings.Contains(gpu.Path(), "host") {
		t.Errorf("%s: part of it ran on the host: %s", what, gpu.Path())
	}
	a, _ := cpu.n.Values()
	b, _ := gpu.n.Values()
	if a.DType() != b.DType() || a.Len() != b.Len() {
		t.Errorf("%s: %v x %d on the CPU, %v x %d on the GPU", what, a.DType(), a.Len(), b.DType(), b.Len())
		return
	}
	if dtype.Equal(a, b) {
		return
	}
	worst, at := 0, 0
	for i := range a.Len() {
		if d := ulpApart(a, b, i); d > worst {
			worst, at = d, i
		}
	}
	if worst > ulp {
		t.Errorf("%s: element %d is %v on the CPU, %v on the GPU (%d ulp apart, %d allowed)", what, at, a.Elem(at), b.Elem(at), worst, ulp)
	} else {
		t.Logf("%s: at most %d ulp from the CPU (%d allowed)", what, worst, ulp)
	}
}

// ulpApart returns how many units in the last place of their dtype values i of a and b are
// apart (0 for equal bits or two NaNs, MaxInt for integers or bools that differ).
func ulpApart(a, b dtype.Slice, i int) int {
	parts := func(s dtype.Slice) []float64 {
		switch s.DType() {
		case Complex128:
			c := s.Complex128s()[i]
			return []float64{real(c), imag(c)}
		case Complex64:
			c := s.Complex64s()[i]
			return []float64{float64(real(c)), float64(imag(c))}
		case Float64:
			return []float64{s.Float64s()[i]}
		case Float32:
			return []float64{float64(s.Float32s()[i])}
		}
		return nil
	}
	pa, pb := parts(a), parts(b)
	if pa == nil {
		if fmt.Sprint(a.Elem(i)) == fmt.Sprint(b.Elem(i)) {
			return 0
		}
		return math.MaxInt
	}
	f32 := a.DType() == Float32 || a.DType() == Complex64
	worst := 0
	for k := range pa {
		x, y := pa[k], pb[k]
		if x != x && y != y || math.Float64bits(x) == math.Float64bits(y) {
			continue
		}
		if x != x || y != y || math.Signbit(x) != math.Signbit(y) && x != y {
			return math.MaxInt
		}
		var d int64
		if f32 {
			d = int64(math.Float32bits(float32(math.Abs(x)))) - int64(math.Float32bits(float32(math.Abs(y))))
		} else {
			d = int64(math.Float64bits(math.Abs(x))) - int64(math.Float64bits(math.Abs(y)))
		}
		worst = max(worst, int(min(max(d, -d), math.MaxInt32)))
	}
	return worst
}

// tableGPUDTypes returns the dtypes whose operands reach each GPU body of o: floats (bools for
// the logical and bitwise ops), the integers, the complex types.
func tableGPUDTypes(o optable.Op) []DType {
	var dts []DType
	if o.PTX != "" {
		switch o.Rule {
		case optable.Logical, optable.Bits:
			dts = append(dts, Bool)
		default:
			dts = append(dts, Float64, Float32)
		}
	}
	if o.PTXInt != "" || o.Rule == optable.Float {
		dts = append(dts, gpuIntTypes...) // the Float rule casts them to a float first
	}
	if o.PTXComplex != "" {
		dts = append(dts, gpuComplexTypes...)
	}
	return dts
}

// TestGPUTableOps runs every op of the table on the GPU backend for every dtype one of its GPU
// bodies computes, with the special values of gpuTestArray, and requires the fused kernel (no
// host step) and the CPU executor's results: bit-equal, or within the row's GPUUlp (complex
// results within its GPUUlpComplex, see sameComplexOnGPU).
func TestGPUTableOps(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(3, 4))
	rc := rand.New(rand.NewPCG(3, 5)) // the complex math's own, leaving the others' data as it was
	for _, o := range optable.Ops {
		for _, dt := range tableGPUDTypes(o) {
			src := r
			if dt.IsComplex() && o.GPUUlpComplex > 0 {
				src = rc
			}
			var xs []*Array
			for range o.Arity {
				xs = append(xs, gpuTestArray(src, dt, 3000))
			}
			if dt.IsComplex() && o.GPUUlpComplex > 0 {
				sameComplexOnGPU(t, fmt.Sprintf("%s of %v", o.Name, dt), o, xs[0], xs[len(xs)-1], tableCall(o, xs...))
				continue
			}
			sameOnGPU(t, fmt.Sprintf("%s of %v", o.Name, dt), tableCall(o, xs...), o.GPUUlp)
		}
	}
}

// TestGPUIntegerAndComplexArithmetic: the arithmetic, comparisons, selections and the
// reading of constants on every integer and complex dtype run in the fused kernel with the
// CPU's bits (integer wrap-around, NumPy's power of integers, Go's complex division).
func TestGPUIntegerAndComplexArithmetic(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(5, 6))
	bin := map[string]func(a *Array, b any) *Array{
		"add": (*Array).Add, "sub": (*Array).Sub, "mul": (*Array).Mul, "maximum": (*Array).Maximum, "minimum": (*Array).Minimum,
		"eq": (*Array).Eq, "ne": (*Array).Ne, "lt": (*Array).Lt, "le": (*Array).Le, "gt": (*Array).Gt, "ge": (*Array).Ge, "pow": (*Array).Pow,
	}
	for _, dt := range append(append([]DType{Bool}, gpuIntTypes...), gpuComplexTypes...) {
		x, y := gpuTestArray(r, dt, 3000), gpuTestArray(r, dt, 3000)
		if dt == Bool {
			x, y = x.AsType(Bool), y.AsType(Bool)
		}
		for name, f := range bin {
			if (dt.IsComplex() && (name == "maximum" || name == "minimum" || name == "pow")) || (dt == Bool && name == "sub") {
				continue
			}
			sameOnGPU(t, fmt.Sprintf("%v %s", dt, name), f(x, y), 0)
			if dt != Bool {
				sameOnGPU(t, fmt.Sprintf("%v %s 3", dt, name), f(x, 3), 0)
			}
		}
		if dt != Bool {
			sameOnGPU(t, fmt.Sprintf("%v neg", dt), x.Neg(), 0)
			sameOnGPU(t, fmt.Sprintf("%v abs", dt), x.Abs(), 0)
		}
		if dt.IsComplex() {
			sameOnGPU(t, fmt.Sprintf("%v div", dt), x.Div(y), 0)
		}
		sameOnGPU(t, fmt.Sprintf("%v where", dt), Where(x.Gt(y), x, y), 0)
		if dt.IsInteger() { // the fused values reach the device sort through host memory
			sameOnGPU(t, fmt.Sprintf("%v sort of x*3", dt), x.Mul(3).Sort(0), 0)
		}
		sameOnGPU(t, fmt.Sprintf("%v chain", dt), Where(x.Mul(y).Add(x).Add(y.Mul(x)).Ne(x), x.Mul(y), y.Add(x)).Eq(x).AsType(dt), 0)
	}
}

// TestGPUCasts: AsType between every pair of the thirteen dtypes runs on the device with
// NumPy's x86-64 rules as the CPU executor applies them (wrap-around, truncation toward zero,
// NaN and out-of-range floats as cvttsd2si gives them, one rounding from 64-bit integers to
// float32, nonzero and NaN as true).
func TestGPUCasts(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, from := range allDTypes {
		x := gpuTestArray(r, from, 3000)
		if from == Bool {
			x = gpuTestArray(r, Int8, 3000).AsType(Bool)
		}
		for _, to := range allDTypes {
			sameOnGPU(t, fmt.Sprintf("%v to %v", from, to), x.AsType(to), 0)
		}
	}
}

// TestGPUPersistIntegerAndComplex: integer and complex arrays persisted on the GPU, or left
// there by a compute, hold the kernel's words (float32 ones 4-byte floats, with NaNs,
// infinities, -0 and subnormals) and give back the CPU's values, also when a later kernel
// reads them there.
func TestGPUPersistIntegerAndComplex(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(9, 10))
	for _, dt := range []DType{Int32, Uint8, Int64, Uint64, Complex64, Complex128, Float32} {
		x := gpuTestArray(r, dt, 2100)
		y := x.Mul(x).Add(1)
		p := y.Persist(OnGPU())
		if err := p.Err(); err != nil {
			t.Fatalf("%v: %v", dt, err)
		}
		want, err := y.Compute()
		if err != nil {
			t.Fatal(err)
		}
		a, _ := want.n.Values()
		b, err := p.n.Values()
		if err != nil || !dtype.Equal(a, b) {
			t.Errorf("%v: persisted values differ from the CPU's (%v)", dt, err)
		}
		sameOnGPU(t, fmt.Sprintf("%v persisted, then x - 3", dt), p.Sub(3), 0)
		// A GPU compute's result stays there, in the same words.
		g, err := y.Compute(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		if _, held := g.n.Buf.(*gpuChunks); !held {
			t.Errorf("%v: the result of a GPU compute is not on the GPU: %s", dt, g.Path())
		}
		if c, err := g.n.Values(); err != nil || !dtype.Equal(a, c) {
			t.Errorf("%v: a GPU compute's result differs from the CPU's (%v)", dt, err)
		}
	}
}

// TestGPUTakeIntegerAndComplex: takes of integer arrays are gathered on the device in the
// kernel's words; complex ones on the host, and the Path says so.
func TestGPUTakeIntegerAndComplex(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(11, 12))
	idx := FromSliceInt64([]int64{2, 0, 2999, 5, 5, 1234})
	for _, dt := range []DType{Int8, Uint32, Int64, Uint64} {
		sameOnGPU(t, fmt.Sprintf("take of %v", dt), gpuTestArray(r, dt, 3000).Take(idx, 0).Mul(3), 0)
	}
	y := gpuTestArray(r, Complex128, 3000).Take(idx, 0).Mul(3)
	cpu, err := y.Compute()
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := y.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cpu.n.Values()
	b, _ := gpu.n.Values()
	if !dtype.Equal(a, b) || !strings.Contains(gpu.Path(), "host gather") {
		t.Errorf("take of complex128: equal %v, path %s", dtype.Equal(a, b), gpu.Path())
	}
}

// TestGPUMaskCount: counting a comparison (an int64 sum of bools) and a masked mean run in
// the fused kernel and give the CPU's numbers.
func TestGPUMaskCount(t *testing.T) {
	needGPU(t)
	x := NewRandomState(5).Normal(0, 1, Shape(3000, 2000), Chunks(1000, 1000))
	for _, y := range []*Array{x.Gt(1).Sum(), x.Gt(1).Sum(0), Where(x.Gt(1), x, 0).Sum().Div(x.Gt(1).Sum())} {
		cpu, err := y.Compute()
		if err != nil {
			t.Fatal(err)
		}
		gpu, err := y.Compute(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(gpu.Path(), "sum over") {
			t.Errorf("%v: the sum ran on the host: %s", y, gpu.Path())
		}
		a, _ := cpu.ToSlice()
		b, _ := gpu.ToSlice()
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-12*math.Abs(a[i]) {
				t.Fatalf("%v: element %d: CPU %v, GPU %v", y, i, a[i], b[i])
			}
		}
		if y.DType() != cpu.DType() || gpu.DType() != cpu.DType() {
			t.Errorf("dtypes %v, %v, %v", y.DType(), cpu.DType(), gpu.DType())
		}
	}
}
