package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
)

// complexMathValues is a grid of complex operands: every pair of parts among zeros of both
// signs, ±1, ±Inf, NaN, subnormals, huge and tiny values, multiples of pi/2 and values past
// 2^30, then random ones of ordinary and of wide magnitudes.
func complexMathValues(r *rand.Rand) []complex128 {
	parts := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, -3, 1e-310, -5e-324, 1e-200, 1e300, -1e300,
		math.Inf(1), math.Inf(-1), math.NaN(), math.Pi / 2, -math.Pi, 1e10, 3e9, 9.3e18, 1.5e300, 7.5e-9, 1 + 1e-12}
	var v []complex128
	for _, a := range parts {
		for _, b := range parts {
			v = append(v, complex(a, b))
		}
	}
	for range 3000 {
		v = append(v, complex(r.NormFloat64()*10, r.NormFloat64()*10))
	}
	for range 1000 {
		w := func() float64 { return math.Copysign(math.Exp(r.Float64()*80-40), r.Float64()-0.5) }
		v = append(v, complex(w(), w()))
	}
	return v
}

// complexMathOps are the ops with a complex GPU body from lib.cu's complex functions: the
// table's first ops (exp, log, sqrt, sin, cos, tanh, pow) and its rows, each with its row.
func complexMathOps() (ops []expr.Op, rows []optable.Op) {
	for i, o := range optable.Core {
		if strings.Contains(o.PTXComplex, "call gpn_c") && o.Name != "divide" {
			ops, rows = append(ops, expr.Op(i)), append(rows, o)
		}
	}
	for _, o := range optable.Ops {
		if strings.Contains(o.PTXComplex, "call gpn_c") && o.Name != "reciprocal" {
			ops, rows = append(ops, tableOp(o)), append(rows, o)
		}
	}
	return ops, rows
}

// TestGPUComplexMath runs the complex exp, log, log2, log10, sqrt, sin, cos, tan, sinh, cosh,
// tanh, asin, acos, atan, asinh, acosh, atanh and pow on complexMathValues (pow's exponents
// the same values in another order) on the GPU backend, complex64 and complex128, and
// requires the fused kernel (no host step) and the CPU executor's results within each row's
// bound: GPUUlpComplex ulp of optable.ComplexScale (sqrt, with none, bit-equal). The bounds:
// sqrt 0 (the same operations in the same order); log, log2, log10 4; the others 8 (CUDA's
// libm and Go's math each within a few ulp of the correctly rounded result).
func TestGPUComplexMath(t *testing.T) {
	needGPU(t)
	ops, rows := complexMathOps()
	if len(ops) != 18 {
		t.Fatalf("%d ops with a complex library body, want 18", len(ops))
	}
	r := rand.New(rand.NewPCG(20, 7))
	xs := complexMathValues(r)
	ys := make([]complex128, len(xs))
	for i := range xs {
		ys[i] = xs[(i*7919+13)%len(xs)]
	}
	for _, dt := range gpuComplexTypes {
		x := FromSliceComplex128(xs, Chunks(700), WithDType(dt))
		y := FromSliceComplex128(ys, Chunks(700), WithDType(dt))
		for k, op := range ops {
			o := rows[k]
			var a *Array
			if o.Arity == 2 {
				a = binaryOf(op, x, y)
			} else {
				a = unaryOf(op, x)
			}
			sameComplexOnGPU(t, fmt.Sprintf("%s of %v", o.Name, dt), o, x, y, a)
		}
	}
}

// sameComplexOnGPU computes a, the row o's op on x (and y), on the CPU and on the GPU and
// fails unless the GPU ran it in the fused kernel with the CPU's values within the row's
// bound (ComplexApart), naming the worst element.
func sameComplexOnGPU(t *testing.T, what string, o optable.Op, x, y, a *Array) {
	t.Helper()
	if o.GPUUlpComplex == 0 {
		sameOnGPU(t, what, a, o.GPUUlp)
		return
	}
	cpu, err := a.Compute()
	if err != nil {
		t.Errorf("%s on the CPU: %v", what, err)
		return
	}
	gpu, err := a.Compute(OnGPU())
	if err != nil {
		t.Errorf("%s on the GPU: %v", what, err)
		return
	}
	if strings.Contains(gpu.Path(), "host") {
		t.Errorf("%s: part of it ran on the host: %s", what, gpu.Path())
	}
	vals := func(b *Array) []complex128 {
		s, err := b.n.Values()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out := make([]complex128, s.Len())
		switch s.DType() {
		case Complex128:
			copy(out, s.Complex128s())
		case Complex64:
			for i, c := range s.Complex64s() {
				out[i] = complex128(c)
			}
		default:
			t.Fatalf("%s: a %v result", what, s.DType())
		}
		return out
	}
	xc, err := x.Compute()
	if err != nil {
		t.Fatal(err)
	}
	yc, err := y.Compute()
	if err != nil {
		t.Fatal(err)
	}
	xv, yv, want, got := vals(xc), vals(yc), vals(cpu), vals(gpu)
	f32 := a.DType() == Complex64
	worst, at := 0.0, 0
	for i := range want {
		if d := optable.ComplexApart(o.Name, xv[i], yv[i], want[i], got[i], f32); d > worst {
			worst, at = d, i
		}
	}
	if worst > float64(o.GPUUlpComplex) {
		t.Errorf("%s: of %v (and %v) the CPU gives %v, the GPU %v (%.3g ulp of optable.ComplexScale apart, %d allowed)", what, xv[at], yv[at], want[at], got[at], worst, o.GPUUlpComplex)
	} else {
		t.Logf("%s: at most %.3g ulp from the CPU (%d allowed)", what, worst, o.GPUUlpComplex)
	}
}
