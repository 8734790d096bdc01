// Package optable is the one table of gpuarray's generated elementwise operations: per op its
// Array API name, arity, dtype rule, the CPU implementation (Go expressions per lane), the PTX
// body of the fused GPU kernel, the NumPy function the property tests compare with, and the
// doc line. `go generate ./gpuarray/optable` writes from it the expr.Op constants and rules,
// the CPU executor's cases, the PTX generator's cases, gpuarray's functions and methods, and
// the README's coverage rows; the NumPy property test reads the table itself. A new op is one
// row. The first ops (Core, Neg through Ge) are rows too, with special code where NumPy's
// rules for them are special (see Core).
//
// It imports nothing of the project.
package optable

//go:generate go run ./gen

// Rule says which dtypes an op takes and which it gives.
type Rule uint8

const (
	// Same: numeric operands (promoted to one dtype), result of that dtype.
	Same Rule = iota
	// Float: integer and bool operands are cast to a float dtype first (as exp is); result of
	// the operands' float dtype.
	Float
	// Test: numeric operands, bool result (isnan).
	Test
	// Logical: operands cast to bool, bool result.
	Logical
	// Bits: integer or bool operands, result of their dtype.
	Bits
	// Shift: integer operands, result of their dtype.
	Shift
	// Part: the real dtype of a complex operand (real, imag); real operands keep theirs.
	Part
)

// Op is one row of the table.
type Op struct {
	Name   string // the Array API name ("floor_divide")
	Go     string // gpuarray's name ("FloorDivide")
	Arity  int
	Rule   Rule
	Method bool   // also an Array method (where NumPy has one)
	NumPy  string // the NumPy function the tests compare with
	Exact  bool   // bit equality with NumPy expected (else a few ulp)
	// ComplexUlp: complex results within a few ulp of NumPy's even when Exact (NumPy
	// divides complex numbers in another order).
	ComplexUlp bool
	Doc        string // the doc line, after the name
	// Float is a Go expression of x (and y), float64s, for the float64 lane; for Test and
	// Logical ops a bool expression.
	Float string
	// Int is a Go expression of x (and y), int64s holding the values (unsigned ones as their
	// bits), for the integer lane; u reports an unsigned dtype and bits its width. Empty: the
	// op is not defined for integers (Float ops never reach this lane).
	Int string
	// Complex is a Go expression of complex128 x (and y); empty: not for complex values.
	Complex string
	// PTX is the fused GPU kernel's body for float64 registers (float values, and bools as 0
	// or 1): {o} the result, {x} {y} the operands, {p} {p2} predicates, {t} {s} f64 and {r}
	// {q} b64 temporaries; a line "call NAME {o}, {x}, ..." calls a device library function
	// of kernels/lib.cu; empty: the op runs on the host executor on GPU backends (Host says why).
	PTX string
	// PTXInt is the body for integer values, in b64 registers wrapped to their dtype's width
	// (the kernel wraps the result): {x} {y} {o} as in PTX ({o} an f64 0 or 1 for a bool
	// result), {u} "u" or "s" by the operands' signedness, {U} 1 or 0, {bits} their width.
	PTXInt string
	// PTXComplex is the body for complex values, as pairs of f64 registers: {xr} {xi} {yr}
	// {yi} the operands' parts, {or} {oi} the result's ({o} for a real or bool result).
	PTXComplex string
	// GPUUlp is how far the GPU body may be from the CPU executor's result, in ulp of the
	// result's dtype, on the GPU test's data (0: bit-equal). CUDA's libm is within 1 or 2 ulp
	// of the correctly rounded result; the larger bounds are Go's math losing accuracy (tan of
	// large arguments; log2 near 1 and acos near ±1, measured before cpu.Log2 and cpu.Acos
	// stopped using math.Log2 and math.Acos), where the GPU is the closer of the two.
	GPUUlp int
	// GPUUlpComplex is how far the GPU body's complex results may be from the CPU's, in ulp
	// of ComplexScale (see ComplexApart); 0: as GPUUlp, part by part.
	GPUUlpComplex int
	// Host says why a kind of operand that the CPU computes (Float, Int, Complex) has no GPU
	// body; a test fails where one lacks both.
	Host string

	// The fields below are the Core rows' only.

	// Const is the expr.Op constant's name after "Op" where it is not Go ("Max" for Maximum).
	Const string
	// Short is the op's name in messages (expr.Op's String: "neg", "add").
	Short string
	// PTXBool is the float lane's body when the result is bool (NumPy's bool arithmetic: add
	// is or); empty: PTX.
	PTXBool string
	// Special says which of the row's lanes keep hand-written code besides the generated
	// case, where, and why.
	Special string
}

// Core are the first ops, whose constants come first (OpNeg is 0). They are rows as the
// others are: the generator writes their constants and names, their Array methods (methods
// only, as before the table), Kernel's names for them, their CPU lanes (Float, Int, Complex)
// and their fused-kernel bodies (PTX, PTXBool, PTXInt, PTXComplex). Their dtype rules (true
// division's float result, bool arithmetic, comparisons of any dtype) stay in gpuarray/expr's
// build.go, as Rule cannot say them; Special says per row which lane keeps hand-written code,
// and why.
var Core = []Op{
	{Name: "negative", Go: "Neg", Short: "neg", Arity: 1, NumPy: "negative", Doc: "returns -a.", Float: "-x", PTX: "neg.f64 {o}, {x}", Int: "-x", Complex: "-x", PTXInt: "neg.s64 {o}, {x}", PTXComplex: "neg.f64 {or}, {xr}\nneg.f64 {oi}, {xi}", Special: "the CPU's float lane runs a dedicated loop (cpu/exec.go: a call per element through the function value cost 20% of a pass); the generated case serves Scalar"},
	{Name: "abs", Go: "Abs", Short: "abs", Arity: 1, Rule: Part, NumPy: "absolute", Doc: "returns |a|.", Float: "math.Abs(x)", PTX: "abs.f64 {o}, {x}", Int: "absInt(x, u)", Complex: "cmplx.Abs(x)", PTXComplex: "call gpn_hypot {o}, {xr}, {xi}", Special: "the CPU's float lane runs a dedicated loop (cpu/exec.go: a call per element through the function value cost 20% of a pass); the generated case serves Scalar; the GPU's integer lane (cuda/ptxlanes.go unary): abs of unsigned values is a move, of signed ones abs.s64, which {u} cannot pick between"},
	{Name: "exp", Go: "Exp", Short: "exp", Arity: 1, NumPy: "exp", Doc: "returns e**a.", Float: "math.Exp(x)", PTX: "call gpn_exp {o}, {x}", Complex: "cmplx.Exp(x)", GPUUlpComplex: 8, PTXComplex: "call gpn_cexp_re {or}, {xr}, {xi}\ncall gpn_cexp_im {oi}, {xr}, {xi}"},
	{Name: "log", Go: "Log", Short: "log", Arity: 1, NumPy: "log", Doc: "returns the natural logarithm of a.", Float: "Log(x)", PTX: "call gpn_log {o}, {x}", Complex: "LogComplex(x)", GPUUlpComplex: 4, PTXComplex: "call gpn_clog_re {or}, {xr}, {xi}\ncall gpn_clog_im {oi}, {xr}, {xi}"},
	{Name: "sqrt", Go: "Sqrt", Short: "sqrt", Arity: 1, NumPy: "sqrt", Doc: "returns the square root of a.", Float: "math.Sqrt(x)", PTX: "sqrt.rn.f64 {o}, {x}", Complex: "cmplx.Sqrt(x)", Special: "the CPU's float lane runs a dedicated loop (cpu/exec.go: a call per element through the function value cost 20% of a pass); the generated case serves Scalar", PTXComplex: "call gpn_csqrt_re {or}, {xr}, {xi}\ncall gpn_csqrt_im {oi}, {xr}, {xi}"},
	{Name: "sin", Go: "Sin", Short: "sin", Arity: 1, NumPy: "sin", Doc: "returns the sine of a.", Float: "math.Sin(x)", PTX: "call gpn_sin {o}, {x}", Complex: "cmplx.Sin(x)", GPUUlpComplex: 8, PTXComplex: "call gpn_csin_re {or}, {xr}, {xi}\ncall gpn_csin_im {oi}, {xr}, {xi}"},
	{Name: "cos", Go: "Cos", Short: "cos", Arity: 1, NumPy: "cos", Doc: "returns the cosine of a.", Float: "math.Cos(x)", PTX: "call gpn_cos {o}, {x}", Complex: "cmplx.Cos(x)", GPUUlpComplex: 8, PTXComplex: "call gpn_ccos_re {or}, {xr}, {xi}\ncall gpn_ccos_im {oi}, {xr}, {xi}"},
	{Name: "tanh", Go: "Tanh", Short: "tanh", Arity: 1, NumPy: "tanh", Doc: "returns the hyperbolic tangent of a.", Float: "math.Tanh(x)", PTX: "call gpn_tanh {o}, {x}", Complex: "cmplx.Tanh(x)", GPUUlpComplex: 8, PTXComplex: "call gpn_ctanh_re {or}, {xr}, {xi}\ncall gpn_ctanh_im {oi}, {xr}, {xi}"},
	{Name: "add", Go: "Add", Short: "add", Arity: 2, NumPy: "add", Doc: "returns a + v (v is an array or a number; shapes broadcast as in NumPy).", Float: "x + y", PTX: "add.rn.f64 {o}, {x}, {y}", PTXBool: "max.f64 {o}, {x}, {y}", Int: "addInt(x, y, bits)", Complex: "x + y", PTXInt: "add.s64 {o}, {x}, {y}", PTXComplex: "add.rn.f64 {or}, {xr}, {yr}\nadd.rn.f64 {oi}, {xi}, {yi}", Special: "the CPU's float lane runs dedicated vector loops (cpu/ops.go vvFunc and vsFunc, division in assembly): the commonest ops' fast path; the generated case serves the other shapes and Scalar"},
	{Name: "subtract", Go: "Sub", Short: "sub", Arity: 2, NumPy: "subtract", Doc: "returns a - v.", Float: "x - y", PTX: "sub.rn.f64 {o}, {x}, {y}",
		PTXBool: "setp.neu.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", Int: "x - y", Complex: "x - y", PTXInt: "sub.s64 {o}, {x}, {y}", PTXComplex: "sub.rn.f64 {or}, {xr}, {yr}\nsub.rn.f64 {oi}, {xi}, {yi}", Special: "the CPU's float lane runs dedicated vector loops (cpu/ops.go vvFunc and vsFunc, division in assembly): the commonest ops' fast path; the generated case serves the other shapes and Scalar"}, // bool: as the CPU's wrap of x - y to a bool
	{Name: "multiply", Go: "Mul", Short: "mul", Arity: 2, NumPy: "multiply", Doc: "returns a * v.", Float: "x * y", PTX: "mul.rn.f64 {o}, {x}, {y}", Int: "x * y", Complex: "x * y", PTXInt: "mul.lo.s64 {o}, {x}, {y}", PTXComplex: "mul.rn.f64 {t}, {xr}, {yr}\nmul.rn.f64 {s}, {xi}, {yi}\nsub.rn.f64 {or}, {t}, {s}\nmul.rn.f64 {t}, {xr}, {yi}\nmul.rn.f64 {s}, {xi}, {yr}\nadd.rn.f64 {oi}, {t}, {s}", Special: "the CPU's float lane runs dedicated vector loops (cpu/ops.go vvFunc and vsFunc, division in assembly): the commonest ops' fast path; the generated case serves the other shapes and Scalar"},
	{Name: "divide", Go: "Div", Short: "div", Arity: 2, NumPy: "divide", Doc: "returns a / v.", Float: "x / y", PTX: "div.rn.f64 {o}, {x}, {y}", Complex: "x / y", PTXComplex: "call gpn_cdiv_re {or}, {xr}, {xi}, {yr}, {yi}\ncall gpn_cdiv_im {oi}, {xr}, {xi}, {yr}, {yi}", Special: "the CPU's float lane runs dedicated vector loops (cpu/ops.go vvFunc and vsFunc, division in assembly): the commonest ops' fast path; the generated case serves the other shapes and Scalar"},
	{Name: "pow", Go: "Pow", Short: "pow", Arity: 2, NumPy: "power", Doc: "returns a raised to the power v.", Float: "math.Pow(x, y)", PTX: "call gpn_pow {o}, {x}, {y}",
		PTXBool: "sub.rn.f64 {t}, 0d3FF0000000000000, {y}\nmax.f64 {o}, {x}, {t}", Int: "powInt(x, y, u, bits)", Complex: "PowComplex(x, y)", PTXInt: "call gpn_power_int {o}, {x}, {y}, {U}", GPUUlpComplex: 8, PTXComplex: "call gpn_cpow_re {or}, {xr}, {xi}, {yr}, {yi}\ncall gpn_cpow_im {oi}, {xr}, {xi}, {yr}, {yi}"},
	// NaN propagates, as in NumPy (PTX min and max would drop it).
	{Name: "maximum", Go: "Maximum", Const: "Max", Short: "maximum", Arity: 2, NumPy: "maximum", Doc: "returns the elementwise maximum of a and v (NaN propagates).", Float: "maximum(x, y)",
		PTX: "max.f64 {o}, {x}, {y}\nsetp.nan.f64 {p}, {x}, {y}\n@{p} add.f64 {o}, {x}, {y}", Int: "maxInt(x, y, u)", PTXInt: "max.{u}64 {o}, {x}, {y}"},
	{Name: "minimum", Go: "Minimum", Const: "Min", Short: "minimum", Arity: 2, NumPy: "minimum", Doc: "returns the elementwise minimum of a and v (NaN propagates).", Float: "minimum(x, y)",
		PTX: "min.f64 {o}, {x}, {y}\nsetp.nan.f64 {p}, {x}, {y}\n@{p} add.f64 {o}, {x}, {y}", Int: "minInt(x, y, u)", PTXInt: "min.{u}64 {o}, {x}, {y}"},
	{Name: "equal", Go: "Eq", Short: "eq", Arity: 2, NumPy: "equal", Doc: "returns a bool array, true where a == v.", Float: "b2f(x == y)",
		PTX: "setp.eq.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "setp.eq.b64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", Special: "the CPU's integer and complex lanes (cpu/lanes.go compare, float ones in floatCompare's dedicated loops) and the GPU's complex lane (cuda/ptxlanes.go compare): complex numbers order lexicographically and are unordered where math/cmplx.IsNaN holds, one predicate sequence for the six comparisons; the generated float case serves Scalar"},
	{Name: "not_equal", Go: "Ne", Short: "ne", Arity: 2, NumPy: "not_equal", Doc: "returns a bool array, true where a != v.", Float: "b2f(x != y)",
		PTX: "setp.neu.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "setp.ne.b64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", Special: "the CPU's integer and complex lanes (cpu/lanes.go compare, float ones in floatCompare's dedicated loops) and the GPU's complex lane (cuda/ptxlanes.go compare): complex numbers order lexicographically and are unordered where math/cmplx.IsNaN holds, one predicate sequence for the six comparisons; the generated float case serves Scalar"},
	{Name: "less", Go: "Lt", Short: "lt", Arity: 2, NumPy: "less", Doc: "returns a bool array, true where a < v.", Float: "b2f(x < y)",
		PTX: "setp.lt.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "setp.lt.{u}64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", Special: "the CPU's integer and complex lanes (cpu/lanes.go compare, float ones in floatCompare's dedicated loops) and the GPU's complex lane (cuda/ptxlanes.go compare): complex numbers order lexicographically and are unordered where math/cmplx.IsNaN holds, one predicate sequence for the six comparisons; the generated float case serves Scalar"},
	{Name: "less_equal", Go: "Le", Short: "le", Arity: 2, NumPy: "less_equal", Doc: "returns a bool array, true where a <= v.", Float: "b2f(x <= y)",
		PTX: "setp.le.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "setp.le.{u}64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", Special: "the CPU's integer and complex lanes (cpu/lanes.go compare, float ones in floatCompare's dedicated loops) and the GPU's complex lane (cuda/ptxlanes.go compare): complex numbers order lexicographically and are unordered where math/cmplx.IsNaN holds, one predicate sequence for the six comparisons; the generated float case serves Scalar"},
	{Name: "greater", Go: "Gt", Short: "gt", Arity: 2, NumPy: "greater", Doc: "returns a bool array, true where a > v.", Float: "b2f(x > y)",
		PTX: "setp.gt.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "setp.gt.{u}64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", Special: "the CPU's integer and complex lanes (cpu/lanes.go compare, float ones in floatCompare's dedicated loops) and the GPU's complex lane (cuda/ptxlanes.go compare): complex numbers order lexicographically and are unordered where math/cmplx.IsNaN holds, one predicate sequence for the six comparisons; the generated float case serves Scalar"},
	{Name: "greater_equal", Go: "Ge", Short: "ge", Arity: 2, NumPy: "greater_equal", Doc: "returns a bool array, true where a >= v.", Float: "b2f(x >= y)",
		PTX: "setp.ge.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "setp.ge.{u}64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", Special: "the CPU's integer and complex lanes (cpu/lanes.go compare, float ones in floatCompare's dedicated loops) and the GPU's complex lane (cuda/ptxlanes.go compare): complex numbers order lexicographically and are unordered where math/cmplx.IsNaN holds, one predicate sequence for the six comparisons; the generated float case serves Scalar"},
}

// Ops is the table.
var Ops = []Op{
	{Name: "acos", Go: "Acos", Arity: 1, Rule: Float, NumPy: "arccos", Doc: "returns the inverse cosine of x, in radians.", Float: "Acos(x)", Complex: "AcosComplex(x)", PTX: "call gpn_acos {o}, {x}", GPUUlp: 16, GPUUlpComplex: 8, PTXComplex: "call gpn_cacos_re {or}, {xr}, {xi}\ncall gpn_cacos_im {oi}, {xr}, {xi}"},
	{Name: "acosh", Go: "Acosh", Arity: 1, Rule: Float, NumPy: "arccosh", Doc: "returns the inverse hyperbolic cosine of x.", Float: "math.Acosh(x)", Complex: "AcoshComplex(x)", PTX: "call gpn_acosh {o}, {x}", GPUUlp: 2, GPUUlpComplex: 8, PTXComplex: "call gpn_cacosh_re {or}, {xr}, {xi}\ncall gpn_cacosh_im {oi}, {xr}, {xi}"},
	{Name: "asin", Go: "Asin", Arity: 1, Rule: Float, NumPy: "arcsin", Doc: "returns the inverse sine of x, in radians.", Float: "math.Asin(x)", Complex: "AsinComplex(x)", PTX: "call gpn_asin {o}, {x}", GPUUlp: 4, GPUUlpComplex: 8, PTXComplex: "call gpn_casin_re {or}, {xr}, {xi}\ncall gpn_casin_im {oi}, {xr}, {xi}"},
	{Name: "asinh", Go: "Asinh", Arity: 1, Rule: Float, NumPy: "arcsinh", Doc: "returns the inverse hyperbolic sine of x.", Float: "math.Asinh(x)", Complex: "AsinhComplex(x)", PTX: "call gpn_asinh {o}, {x}", GPUUlp: 4, GPUUlpComplex: 8, PTXComplex: "call gpn_casinh_re {or}, {xr}, {xi}\ncall gpn_casinh_im {oi}, {xr}, {xi}"},
	{Name: "atan", Go: "Atan", Arity: 1, Rule: Float, NumPy: "arctan", Doc: "returns the inverse tangent of x, in radians.", Float: "math.Atan(x)", Complex: "cmplx.Atan(x)", PTX: "call gpn_atan {o}, {x}", GPUUlp: 2, GPUUlpComplex: 8, PTXComplex: "call gpn_catan_re {or}, {xr}, {xi}\ncall gpn_catan_im {oi}, {xr}, {xi}"},
	{Name: "atanh", Go: "Atanh", Arity: 1, Rule: Float, NumPy: "arctanh", Doc: "returns the inverse hyperbolic tangent of x.", Float: "math.Atanh(x)", Complex: "cmplx.Atanh(x)", PTX: "call gpn_atanh {o}, {x}", GPUUlp: 4, GPUUlpComplex: 8, PTXComplex: "call gpn_catanh_re {or}, {xr}, {xi}\ncall gpn_catanh_im {oi}, {xr}, {xi}"},
	{Name: "atan2", Go: "Atan2", Arity: 2, Rule: Float, NumPy: "arctan2", Doc: "returns the arc tangent of x1/x2, in radians, with the quadrant from the signs of both.", Float: "math.Atan2(x, y)", PTX: "call gpn_atan2 {o}, {x}, {y}", GPUUlp: 2},
	{Name: "sinh", Go: "Sinh", Arity: 1, Rule: Float, NumPy: "sinh", Doc: "returns the hyperbolic sine of x.", Float: "math.Sinh(x)", Complex: "cmplx.Sinh(x)", PTX: "call gpn_sinh {o}, {x}", GPUUlp: 4, GPUUlpComplex: 8, PTXComplex: "call gpn_csinh_re {or}, {xr}, {xi}\ncall gpn_csinh_im {oi}, {xr}, {xi}"},
	{Name: "cosh", Go: "Cosh", Arity: 1, Rule: Float, NumPy: "cosh", Doc: "returns the hyperbolic cosine of x.", Float: "math.Cosh(x)", Complex: "cmplx.Cosh(x)", PTX: "call gpn_cosh {o}, {x}", GPUUlp: 2, GPUUlpComplex: 8, PTXComplex: "call gpn_ccosh_re {or}, {xr}, {xi}\ncall gpn_ccosh_im {oi}, {xr}, {xi}"},
	{Name: "tan", Go: "Tan", Arity: 1, Rule: Float, NumPy: "tan", Doc: "returns the tangent of x (radians).", Float: "math.Tan(x)", Complex: "cmplx.Tan(x)", PTX: "call gpn_tan {o}, {x}", GPUUlp: 1024, GPUUlpComplex: 8, PTXComplex: "call gpn_ctan_re {or}, {xr}, {xi}\ncall gpn_ctan_im {oi}, {xr}, {xi}"},
	{Name: "expm1", Go: "Expm1", Arity: 1, Rule: Float, NumPy: "expm1", Doc: "returns e**x - 1, accurate for small x.", Float: "math.Expm1(x)", PTX: "call gpn_expm1 {o}, {x}", GPUUlp: 2},
	{Name: "log1p", Go: "Log1p", Arity: 1, Rule: Float, NumPy: "log1p", Doc: "returns log(1 + x), accurate for small x.", Float: "math.Log1p(x)", PTX: "call gpn_log1p {o}, {x}", GPUUlp: 2},
	{Name: "log2", Go: "Log2", Arity: 1, Rule: Float, NumPy: "log2", Doc: "returns the base-2 logarithm of x.", Float: "Log2(x)", Complex: "LogComplex(x) / math.Ln2", PTX: "call gpn_log2 {o}, {x}", GPUUlp: 128, GPUUlpComplex: 4, PTXComplex: "call gpn_clog2_re {or}, {xr}, {xi}\ncall gpn_clog2_im {oi}, {xr}, {xi}"},
	{Name: "log10", Go: "Log10", Arity: 1, Rule: Float, NumPy: "log10", Doc: "returns the base-10 logarithm of x.", Float: "Log(x) / math.Ln10", Complex: "Log10Complex(x)", PTX: "call gpn_log10 {o}, {x}", GPUUlp: 4, GPUUlpComplex: 4, PTXComplex: "call gpn_clog10_re {or}, {xr}, {xi}\ncall gpn_clog10_im {oi}, {xr}, {xi}"},
	{Name: "logaddexp", Go: "Logaddexp", Arity: 2, Rule: Float, NumPy: "logaddexp", Doc: "returns log(exp(x1) + exp(x2)) without overflow.", Float: "Logaddexp(x, y)", PTX: "call gpn_logaddexp {o}, {x}, {y}", GPUUlp: 16},
	{Name: "hypot", Go: "Hypot", Arity: 2, Rule: Float, NumPy: "hypot", Doc: "returns sqrt(x1**2 + x2**2) without overflow.", Float: "math.Hypot(x, y)", PTX: "call gpn_hypot {o}, {x}, {y}"},
	{Name: "copysign", Go: "Copysign", Arity: 2, Rule: Float, NumPy: "copysign", Exact: true, Doc: "returns x1 with the sign of x2.", Float: "math.Copysign(x, y)",
		PTX: "mov.b64 {r}, {x}\nmov.b64 {q}, {y}\nand.b64 {r}, {r}, 0x7FFFFFFFFFFFFFFF\nand.b64 {q}, {q}, 0x8000000000000000\nor.b64 {r}, {r}, {q}\nmov.b64 {o}, {r}"},
	{Name: "nextafter", Go: "Nextafter", Arity: 2, Rule: Float, NumPy: "nextafter", Exact: true, Doc: "returns the next representable value after x1 toward x2 (in x1's dtype).", Float: "math.Nextafter(x, y)", PTX: "call gpn_nextafter {o}, {x}, {y}"},
	{Name: "floor", Go: "Floor", Arity: 1, Rule: Same, Method: false, NumPy: "floor", Exact: true, Doc: "returns the largest integer not greater than x (integers unchanged).", Float: "math.Floor(x)", Int: "x", PTX: "cvt.rmi.f64.f64 {o}, {x}", PTXInt: "mov.b64 {o}, {x}"},
	{Name: "ceil", Go: "Ceil", Arity: 1, Rule: Same, NumPy: "ceil", Exact: true, Doc: "returns the smallest integer not less than x (integers unchanged).", Float: "math.Ceil(x)", Int: "x", PTX: "cvt.rpi.f64.f64 {o}, {x}", PTXInt: "mov.b64 {o}, {x}"},
	{Name: "trunc", Go: "Trunc", Arity: 1, Rule: Same, NumPy: "trunc", Exact: true, Doc: "returns x rounded toward zero (integers unchanged).", Float: "math.Trunc(x)", Int: "x", PTX: "cvt.rzi.f64.f64 {o}, {x}", PTXInt: "mov.b64 {o}, {x}"},
	{Name: "round", Go: "Round", Arity: 1, Rule: Same, Method: true, NumPy: "round", Exact: true, Doc: "returns x rounded to the nearest integer, halves to even, as NumPy's round (integers unchanged).", Float: "math.RoundToEven(x)", Int: "x", Complex: "complex(math.RoundToEven(real(x)), math.RoundToEven(imag(x)))", PTX: "cvt.rni.f64.f64 {o}, {x}", PTXInt: "mov.b64 {o}, {x}", PTXComplex: "cvt.rni.f64.f64 {or}, {xr}\ncvt.rni.f64.f64 {oi}, {xi}"},
	{Name: "sign", Go: "Sign", Arity: 1, Rule: Same, NumPy: "sign", Exact: true, ComplexUlp: true, Doc: "returns -1, 0 or 1 by the sign of x (NaN for NaN; x/|x| for complex x).", Float: "Sign(x)", Int: "SignInt(x, u)", Complex: "SignComplex(x)",
		PTX: "setp.gt.f64 {p}, {x}, 0d0000000000000000\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}\nsetp.lt.f64 {p}, {x}, 0d0000000000000000\n@{p} mov.f64 {o}, 0dBFF0000000000000\nsetp.nan.f64 {p}, {x}, {x}\n@{p} mov.f64 {o}, {x}", PTXInt: "setp.ne.b64 {p}, {x}, 0\nselp.b64 {o}, 1, 0, {p}\nsetp.lt.{u}64 {p}, {x}, 0\n@{p} mov.b64 {o}, -1", PTXComplex: "call gpn_hypot {t}, {xr}, {xi}\ndiv.rn.f64 {or}, {xr}, {t}\ndiv.rn.f64 {oi}, {xi}, {t}\nsetp.eq.f64 {p}, {xr}, 0d0000000000000000\nsetp.eq.and.f64 {p}, {xi}, 0d0000000000000000, {p}\n@{p} mov.f64 {or}, 0d0000000000000000\n@{p} mov.f64 {oi}, 0d0000000000000000"},
	{Name: "signbit", Go: "Signbit", Arity: 1, Rule: Test, NumPy: "signbit", Exact: true, Doc: "reports whether the sign bit of x is set (true for -0 and negative NaNs).", Float: "math.Signbit(x)", Int: "!u && x < 0",
		PTX: "mov.b64 {r}, {x}\nsetp.lt.s64 {p}, {r}, 0\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "setp.lt.{u}64 {p}, {x}, 0\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "square", Go: "Square", Arity: 1, Rule: Same, NumPy: "square", Exact: true, Doc: "returns x*x (integers wrap).", Float: "x * x", Int: "x * x", Complex: "x * x", PTX: "mul.rn.f64 {o}, {x}, {x}", PTXInt: "mul.lo.s64 {o}, {x}, {x}", PTXComplex: "mul.rn.f64 {t}, {xr}, {xr}\nmul.rn.f64 {s}, {xi}, {xi}\nsub.rn.f64 {or}, {t}, {s}\nmul.rn.f64 {t}, {xr}, {xi}\nmul.rn.f64 {s}, {xi}, {xr}\nadd.rn.f64 {oi}, {t}, {s}"},
	{Name: "reciprocal", Go: "Reciprocal", Arity: 1, Rule: Float, NumPy: "reciprocal", Exact: true, ComplexUlp: true, Doc: "returns 1/x.", Float: "1 / x", Complex: "ReciprocalComplex(x)", PTX: "rcp.rn.f64 {o}, {x}", PTXComplex: "call gpn_crecip_re {or}, {xr}, {xi}\ncall gpn_crecip_im {oi}, {xr}, {xi}"},
	{Name: "remainder", Go: "Remainder", Arity: 2, Rule: Same, NumPy: "remainder", Exact: true, Doc: "returns x1 - floor(x1/x2)*x2, with the sign of x2, as Python's % (0 for an integer x2 of 0).", Float: "Remainder(x, y)", Int: "RemainderInt(x, y, u)", PTX: "call gpn_remainder {o}, {x}, {y}", PTXInt: "call gpn_remainder_int {o}, {x}, {y}, {U}"},
	{Name: "floor_divide", Go: "FloorDivide", Arity: 2, Rule: Same, NumPy: "floor_divide", Exact: true, Doc: "returns floor(x1/x2), as Python's // (0 for an integer x2 of 0).", Float: "FloorDivide(x, y)", Int: "FloorDivideInt(x, y, u, bits)", PTX: "call gpn_floor_divide {o}, {x}, {y}", PTXInt: "call gpn_floor_divide_int {o}, {x}, {y}, {U}"},
	{Name: "isnan", Go: "IsNaN", Arity: 1, Rule: Test, NumPy: "isnan", Exact: true, Doc: "reports whether x is NaN.", Float: "x != x", Int: "false", Complex: "cmplx.IsNaN(x)",
		PTX: "setp.nan.f64 {p}, {x}, {x}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "mov.f64 {o}, 0d0000000000000000", PTXComplex: "setp.nan.f64 {p}, {xr}, {xi}\nabs.f64 {t}, {xr}\nabs.f64 {s}, {xi}\nmax.f64 {t}, {t}, {s}\nsetp.neu.f64 {p2}, {t}, 0d7FF0000000000000\nand.pred {p}, {p}, {p2}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "isinf", Go: "IsInf", Arity: 1, Rule: Test, NumPy: "isinf", Exact: true, Doc: "reports whether x is +Inf or -Inf.", Float: "math.IsInf(x, 0)", Int: "false", Complex: "cmplx.IsInf(x)",
		PTX: "abs.f64 {t}, {x}\nsetp.eq.f64 {p}, {t}, 0d7FF0000000000000\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "mov.f64 {o}, 0d0000000000000000", PTXComplex: "abs.f64 {t}, {xr}\nabs.f64 {s}, {xi}\nmax.f64 {t}, {t}, {s}\nsetp.eq.f64 {p}, {t}, 0d7FF0000000000000\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "isfinite", Go: "IsFinite", Arity: 1, Rule: Test, NumPy: "isfinite", Exact: true, Doc: "reports whether x is neither infinite nor NaN.", Float: "!math.IsInf(x, 0) && x == x", Int: "true", Complex: "!cmplx.IsInf(x) && !cmplx.IsNaN(x)",
		PTX: "abs.f64 {t}, {x}\nsetp.lt.f64 {p}, {t}, 0d7FF0000000000000\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "mov.f64 {o}, 0d3FF0000000000000", PTXComplex: "abs.f64 {t}, {xr}\nabs.f64 {s}, {xi}\nsetp.lt.f64 {p}, {t}, 0d7FF0000000000000\nsetp.lt.and.f64 {p}, {s}, 0d7FF0000000000000, {p}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "logical_and", Go: "LogicalAnd", Arity: 2, Rule: Logical, NumPy: "logical_and", Exact: true, Doc: "returns x1 and x2 (as bools).", Int: "x != 0 && y != 0",
		PTX: "setp.neu.f64 {p}, {x}, 0d0000000000000000\nsetp.neu.and.f64 {p}, {y}, 0d0000000000000000, {p}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "logical_or", Go: "LogicalOr", Arity: 2, Rule: Logical, NumPy: "logical_or", Exact: true, Doc: "returns x1 or x2 (as bools).", Int: "x != 0 || y != 0",
		PTX: "setp.neu.f64 {p}, {x}, 0d0000000000000000\nsetp.neu.or.f64 {p}, {y}, 0d0000000000000000, {p}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "logical_xor", Go: "LogicalXor", Arity: 2, Rule: Logical, NumPy: "logical_xor", Exact: true, Doc: "returns x1 xor x2 (as bools).", Int: "(x != 0) != (y != 0)",
		PTX: "setp.neu.f64 {p}, {x}, 0d0000000000000000\nsetp.neu.xor.f64 {p}, {y}, 0d0000000000000000, {p}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "logical_not", Go: "LogicalNot", Arity: 1, Rule: Logical, NumPy: "logical_not", Exact: true, Doc: "returns not x (as a bool).", Int: "x == 0",
		PTX: "setp.eq.f64 {p}, {x}, 0d0000000000000000\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}"},
	{Name: "bitwise_and", Go: "BitwiseAnd", Arity: 2, Rule: Bits, NumPy: "bitwise_and", Exact: true, Doc: "returns the bits set in both x1 and x2.", Int: "x & y", PTX: "mul.rn.f64 {o}, {x}, {y}", PTXInt: "and.b64 {o}, {x}, {y}"},
	{Name: "bitwise_or", Go: "BitwiseOr", Arity: 2, Rule: Bits, NumPy: "bitwise_or", Exact: true, Doc: "returns the bits set in x1 or x2.", Int: "x | y", PTX: "max.f64 {o}, {x}, {y}", PTXInt: "or.b64 {o}, {x}, {y}"},
	{Name: "bitwise_xor", Go: "BitwiseXor", Arity: 2, Rule: Bits, NumPy: "bitwise_xor", Exact: true, Doc: "returns the bits set in exactly one of x1 and x2.", Int: "x ^ y", PTX: "setp.neu.f64 {p}, {x}, {y}\nselp.f64 {o}, 0d3FF0000000000000, 0d0000000000000000, {p}", PTXInt: "xor.b64 {o}, {x}, {y}"},
	{Name: "bitwise_invert", Go: "BitwiseInvert", Arity: 1, Rule: Bits, NumPy: "invert", Exact: true, Doc: "returns x with every bit flipped (not x for bools).", Int: "Invert(x, bits)", PTX: "sub.rn.f64 {o}, 0d3FF0000000000000, {x}", PTXInt: "not.b64 {o}, {x}"},
	{Name: "bitwise_left_shift", Go: "BitwiseLeftShift", Arity: 2, Rule: Shift, NumPy: "left_shift", Exact: true, Doc: "returns x1 shifted left by x2 bits (0 when x2 is negative or at least the width).", Int: "LeftShift(x, y, u, bits)", PTXInt: "min.u64 {r}, {y}, 64\ncvt.u32.u64 {w}, {r}\nshl.b64 {o}, {x}, {w}"},
	{Name: "bitwise_right_shift", Go: "BitwiseRightShift", Arity: 2, Rule: Shift, NumPy: "right_shift", Exact: true, Doc: "returns x1 shifted right by x2 bits, arithmetic for signed types (0 or -1 when x2 is negative or at least the width).", Int: "RightShift(x, y, u, bits)", PTXInt: "min.u64 {r}, {y}, 64\ncvt.u32.u64 {w}, {r}\nshr.{u}64 {o}, {x}, {w}"},
	{Name: "real", Go: "Real", Arity: 1, Rule: Part, NumPy: "real", Exact: true, Doc: "returns the real part of x (x itself when real).", Float: "x", Int: "x", Complex: "real(x)", PTX: "mov.f64 {o}, {x}", PTXInt: "mov.b64 {o}, {x}", PTXComplex: "mov.f64 {o}, {xr}"},
	{Name: "imag", Go: "Imag", Arity: 1, Rule: Part, NumPy: "imag", Exact: true, Doc: "returns the imaginary part of x (zeros when real).", Float: "0", Int: "0", Complex: "imag(x)", PTX: "mov.f64 {o}, 0d0000000000000000", PTXInt: "mov.b64 {o}, 0", PTXComplex: "mov.f64 {o}, {xi}"},
	{Name: "conj", Go: "Conj", Arity: 1, Rule: Same, Method: true, NumPy: "conj", Exact: true, Doc: "returns the complex conjugate of x (x itself when real).", Float: "x", Int: "x", Complex: "cmplx.Conj(x)", PTX: "mov.f64 {o}, {x}", PTXInt: "mov.b64 {o}, {x}", PTXComplex: "mov.f64 {or}, {xr}\nneg.f64 {oi}, {xi}"},
}
