package cpu

import (
	"math"
	"math/cmplx"
)

// The scalar functions the op table's CPU expressions call (gpuarray/optable), with NumPy's
// results at special values.

// smallest normal float64; below it Go's math.Log on amd64 is wrong (golang/go#56600).
const minNormal = 2.2250738585072014e-308

// Log is the natural logarithm, correct for subnormal x too.
func Log(x float64) float64 {
	if x > 0 && x < minNormal {
		return math.Log(x*(1<<54)) - 54*math.Ln2
	}
	return math.Log(x)
}

// Log2 is the base-2 logarithm: exact for powers of two (subnormal ones included), else
// Log(x)/ln 2, within 2 ulp. Go's math.Log2 adds the exponent to the log of the fraction,
// which cancels near 1 (math.Log2(1.00001) is 50206 ulp off).
func Log2(x float64) float64 {
	if frac, exp := math.Frexp(x); frac == 0.5 {
		return float64(exp - 1)
	}
	return Log(x) * (1 / math.Ln2)
}

// Acos is the inverse cosine within a few ulp over [-1, 1]: Go's math.Acos is Pi/2 - Asin(x),
// which cancels near 1 (math.Acos(0.999999) is 36074 ulp off); past 1/2 in magnitude the
// half-angle form 2*asin(sqrt((1-|x|)/2)) has no cancellation (1-|x| is exact there).
func Acos(x float64) float64 {
	switch {
	case x > 0.5:
		return 2 * math.Asin(math.Sqrt((1-x)/2))
	case x < -0.5:
		return math.Pi - 2*math.Asin(math.Sqrt((1+x)/2))
	}
	return math.Acos(x)
}

// Logaddexp is log(exp(x) + exp(y)) as NumPy computes it.
func Logaddexp(x, y float64) float64 {
	if x == y {
		return x + math.Ln2 // infinities of one sign too
	}
	d := x - y
	switch {
	case d > 0:
		return x + math.Log1p(math.Exp(-d))
	case d <= 0:
		return y + math.Log1p(math.Exp(d))
	}
	return d // NaN
}

// Sign is -1, 0 or 1 by x's sign; NaN for NaN.
func Sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	case x == 0:
		return 0
	}
	return x
}

// SignInt is Sign of an integer lane value (u: unsigned).
func SignInt(x int64, u bool) int64 {
	switch {
	case x == 0:
		return 0
	case u || x > 0:
		return 1
	}
	return -1
}

// SignComplex is x/|x| (0 for 0), the Array API's sign of a complex number.
func SignComplex(x complex128) complex128 {
	if x == 0 {
		return 0
	}
	a := cmplx.Abs(x)
	return complex(real(x)/a, imag(x)/a) // by parts, as NumPy divides
}

// ReciprocalComplex is 1/x by NumPy's algorithm (Smith's, so 1/(a+0i) has imaginary part -0).
func ReciprocalComplex(x complex128) complex128 {
	br, bi := real(x), imag(x)
	switch {
	case math.Abs(br) >= math.Abs(bi):
		if br == 0 && bi == 0 {
			return complex(1/math.Abs(br), 1/math.Abs(bi))
		}
		rat := bi / br
		scl := 1.0 / (br + bi*rat)
		return complex(scl, -rat*scl)
	case bi == bi:
		rat := br / bi
		scl := 1.0 / (bi + br*rat)
		return complex(rat*scl, -scl)
	}
	return complex(math.NaN(), math.NaN())
}

// divmod is NumPy's npy_divmod: the floored quotient and the remainder with y's sign.
func divmod(x, y float64) (div, mod float64) {
	mod = math.Mod(x, y)
	if y == 0 {
		return x / y, mod
	}
	div = (x - mod) / y
	if mod != 0 {
		if (y < 0) != (mod < 0) {
			mod += y
			div -= 1
		}
	} else {
		mod = math.Copysign(0, y)
	}
	if div != 0 {
		f := math.Floor(div)
		if div-f > 0.5 {
			f++
		}
		div = f
	} else {
		div = math.Copysign(0, x/y)
	}
	return div, mod
}

// Remainder is NumPy's remainder of floats (Python's %).
func Remainder(x, y float64) float64 {
	_, m := divmod(x, y)
	return m
}

// FloorDivide is NumPy's floor_divide of floats (Python's //).
func FloorDivide(x, y float64) float64 {
	d, _ := divmod(x, y)
	return d
}

// RemainderInt is Python's % of integers; 0 when y is 0 (NumPy warns).
func RemainderInt(x, y int64, u bool) int64 {
	if y == 0 {
		return 0
	}
	if u {
		return int64(uint64(x) % uint64(y))
	}
	if y == -1 {
		return 0
	}
	r := x % y
	if r != 0 && (r < 0) != (y < 0) {
		r += y
	}
	return r
}

// FloorDivideInt is Python's // of integers; 0 when y is 0, and the minimum value divided by
// -1 wraps to itself, as NumPy gives them.
func FloorDivideInt(x, y int64, u bool, bits int) int64 {
	if y == 0 {
		return 0
	}
	if u {
		return int64(uint64(x) / uint64(y))
	}
	if y == -1 {
		return -x // wraps for the minimum value (after the lane's wrap to the width)
	}
	q := x / y
	if x%y != 0 && (x < 0) != (y < 0) {
		q--
	}
	return q
}

// LeftShift is x << y in a bits-wide integer; 0 when y is negative or at least bits.
func LeftShift(x, y int64, u bool, bits int) int64 {
	if (!u && y < 0) || uint64(y) >= uint64(bits) {
		return 0
	}
	return x << uint(y)
}

// RightShift is x >> y in a bits-wide integer, arithmetic when signed; when y is negative or
// at least bits, 0 (or -1 for a negative signed x).
func RightShift(x, y int64, u bool, bits int) int64 {
	if (!u && y < 0) || uint64(y) >= uint64(bits) {
		if !u && x < 0 {
			return -1
		}
		return 0
	}
	if u {
		return int64(uint64(x) >> uint(y))
	}
	return x >> uint(y)
}

// Invert flips every bit of x; a bool (bits 1) becomes its negation.
func Invert(x int64, bits int) int64 {
	if bits == 1 {
		return x ^ 1
	}
	return ^x
}

// Atan2 is math.Atan2 with y's sign, which it loses where y/x underflows to a zero of the
// other sign (math.Atan2(-5e-324, -3) is +Pi).
func Atan2(y, x float64) float64 {
	r := math.Atan2(y, x)
	if y == y {
		r = math.Copysign(r, y)
	}
	return r
}

// LogComplex is the principal logarithm log|x| + i arg x, as math/cmplx.Log, but with Log for
// log|x| (cmplx.Log(1e-310i) has real part -709.09, not -713.80, on amd64) and Atan2 for
// arg x (cmplx.Log(-3-5e-324i) has imaginary part +Pi).
func LogComplex(x complex128) complex128 {
	return complex(Log(cmplx.Abs(x)), Atan2(imag(x), real(x)))
}

// Log10Complex is LogComplex(x) / ln 10, as math/cmplx.Log10 scales cmplx.Log.
func Log10Complex(x complex128) complex128 {
	z := LogComplex(x)
	return complex(math.Log10E*real(z), math.Log10E*imag(z))
}

// cmplxSpecial reports whether math/cmplx's inverse functions treat x by a case of their own
// (a part infinite or NaN, or x on the real or imaginary axis within [-1, 1]) rather than by
// their logarithm formula.
func cmplxSpecial(x complex128) bool {
	re, im := real(x), imag(x)
	return im == 0 && math.Abs(re) <= 1 || re == 0 && math.Abs(im) <= 1 || math.IsInf(re, 0) || math.IsInf(im, 0) || re != re || im != im
}

// AsinComplex is math/cmplx.Asin with LogComplex in its formula -i log(ix + sqrt(1 - x*x)).
func AsinComplex(x complex128) complex128 {
	if cmplxSpecial(x) {
		return cmplx.Asin(x)
	}
	xx := x * x
	w := LogComplex(complex(-imag(x), real(x)) + cmplx.Sqrt(complex(1-real(xx), -imag(xx))))
	return complex(imag(w), -real(w))
}

// AcosComplex is Pi/2 - AsinComplex(x), as math/cmplx.Acos.
func AcosComplex(x complex128) complex128 {
	w := AsinComplex(x)
	return complex(math.Pi/2-real(w), -imag(w))
}

// AsinhComplex is math/cmplx.Asinh with LogComplex in its formula log(x + sqrt(1 + x*x)).
func AsinhComplex(x complex128) complex128 {
	if cmplxSpecial(x) {
		return cmplx.Asinh(x)
	}
	xx := x * x
	return LogComplex(x + cmplx.Sqrt(complex(1+real(xx), imag(xx))))
}

// AcoshComplex is math/cmplx.Acosh on AcosComplex.
func AcoshComplex(x complex128) complex128 {
	if x == 0 {
		return cmplx.Acosh(x)
	}
	w := AcosComplex(x)
	if imag(w) <= 0 {
		return complex(-imag(w), real(w))
	}
	return complex(imag(w), -real(w))
}

// pow is math.Pow(x, y) for x >= 0, subnormal x too: math.Pow takes math.Log of x's
// fraction, wrong for subnormals on amd64 (math.Pow(1e-310, 1e-13) is 1.077e-12 off); x is
// scaled into the normal range by 2^54 and the power of 2^-54 multiplied back (where that
// over- or underflows, so does the result).
func pow(x, y float64) float64 {
	if x > 0 && x < minNormal {
		return math.Pow(x*(1<<54), y) * math.Pow(1.0/(1<<54), y)
	}
	return math.Pow(x, y)
}

// PowComplex is math/cmplx.Pow with pow, Log and Atan2 for the modulus and logarithm of x,
// and NaN where cmplx.Pow panics (x zero, y's real part NaN and its imaginary part infinite).
func PowComplex(x, y complex128) complex128 {
	if x == 0 {
		if math.IsNaN(real(y)) && math.IsInf(imag(y), 0) {
			return cmplx.NaN()
		}
		return cmplx.Pow(x, y)
	}
	modulus := cmplx.Abs(x)
	r := pow(modulus, real(y))
	arg := Atan2(imag(x), real(x))
	theta := real(y) * arg
	if imag(y) != 0 {
		r *= math.Exp(-imag(y) * arg)
		theta += imag(y) * Log(modulus)
	}
	s, c := math.Sincos(theta)
	return complex(r*c, r*s)
}
