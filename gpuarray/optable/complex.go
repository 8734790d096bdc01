package optable

import (
	"math"
	"math/cmplx"
)

// ComplexScale is the magnitude in whose ulp the GPU's complex result of the op named name on
// x (and y) may differ from the CPU's result want by the row's GPUUlpComplex (the GPU test's
// and lib.cu's host test's measure), or +Inf where the two need not agree beyond their class.
// Both run math/cmplx's formulas with libms a few ulp apart, so an error is a few ulp of the
// largest term the formula forms, not of the result where the formula cancels:
//   - sin, cos: cosh(Im x), the factor the real sine and cosine are multiplied by (the result
//     is smaller near their zeros); sinh, cosh: cosh(Re x);
//   - tan, tanh: (sin(2 Re x), sinh(2 Im x)) / d with d = cos(2 Re x) + cosh(2 Im x) (the
//     parts swapped for tanh): the numerators' magnitude (at least 1, an ulp of a sine near its
//     zero being one of 1) plus |want| times d's terms, over |d|; +Inf at a pole (d 1e-12 of
//     its terms or less: one side's zero is the other's tiny number);
//   - pow: |want| times 1 + |y| (|log |x|| + pi), the growth of an ulp of log x in y log x;
//     +Inf where |x|**Re y or exp(-Im y arg x) over- or underflows, as there a part's sign, or
//     0 * Inf, comes from the angle's last bits;
//   - the others: the larger magnitude of want's parts.
func ComplexScale(name string, x, y, want complex128) float64 {
	norm := max(math.Abs(real(want)), math.Abs(imag(want)))
	switch name {
	case "sin", "cos":
		return max(norm, math.Cosh(imag(x)))
	case "sinh", "cosh":
		return max(norm, math.Cosh(real(x)))
	case "tan", "tanh":
		a, b := real(x), imag(x)
		if name == "tanh" {
			a, b = b, a
		}
		terms := math.Abs(math.Cos(2*a)) + math.Cosh(2*b)
		d := math.Abs(math.Cos(2*a) + math.Cosh(2*b))
		if d <= 1e-12*terms {
			return math.Inf(1)
		}
		return (max(1, math.Abs(math.Sinh(2*b))) + norm*terms) / d
	case "pow":
		m, arg := cmplx.Abs(x), cmplx.Phase(x)
		if p, e := math.Pow(m, real(y)), math.Abs(imag(y)*arg); p == 0 || math.IsInf(p, 0) || p < 1e-300 || p > 1e300 || e > 690 {
			return math.Inf(1)
		}
		return norm * (1 + cmplx.Abs(y)*(math.Abs(math.Log(m))+math.Pi))
	}
	return norm
}

// ComplexApart is how far got is from want, the op's results on x (and y), in ulp of
// ComplexScale (of float32 for complex64 results): 0 where they are the same (NaN matching NaN, zeros of one sign), +Inf where a
// part is non-finite on one side only or differs there, or zeros differ in sign, where the
// scale is finite. atan's real part (atanh's imaginary one) of +Pi/2 on one side and -Pi/2 on
// the other count as the same: math/cmplx reduces atan2's result by Pi, and an ulp of it
// decides the branch.
func ComplexApart(name string, x, y, want, got complex128, float32 bool) float64 {
	scale := ComplexScale(name, x, y, want)
	if math.IsInf(scale, 1) {
		return 0
	}
	pw, pg := []float64{real(want), imag(want)}, []float64{real(got), imag(got)}
	flip := map[string]int{"atan": 0, "atanh": 1}
	worst := 0.0
	for k := range 2 {
		a, b := pw[k], pg[k]
		if i, ok := flip[name]; ok && i == k && math.Abs(math.Abs(a)-math.Pi/2) < 1e-15 && math.Abs(a+b) < 1e-15 {
			b = a
		}
		switch {
		case a != a && b != b, math.Float64bits(a) == math.Float64bits(b):
			continue
		case a != a || b != b || math.IsInf(a, 0) || math.IsInf(b, 0), a == 0 && b == 0:
			return math.Inf(1)
		}
		if scale == 0 || math.IsInf(scale, 0) || scale != scale {
			return math.Inf(1)
		}
		ulp := math.Nextafter(scale, math.Inf(1)) - scale
		if float32 {
			s32 := float32Of(scale)
			ulp = float64(math.Nextafter32(s32, float32Of(math.Inf(1))) - s32)
		}
		worst = max(worst, math.Abs(a-b)/ulp)
	}
	return worst
}

func float32Of(f float64) float32 { return float32(f) }
