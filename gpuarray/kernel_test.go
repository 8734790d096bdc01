package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// kexpr writes a random expression over the names twice: in Elementwise's syntax and in
// NumPy's. Values stay bounded and conditions compare inputs only (a comparison of computed
// values could flip between two correct libms).
func kexpr(rs *rand.Rand, names []string, depth int) (ours, np string) {
	if depth == 0 || rs.IntN(4) == 0 {
		if rs.IntN(4) == 0 {
			c := []string{"0.5", "2", "3", "-1.25", "pi"}[rs.IntN(5)]
			if c == "pi" {
				return c, "np.pi"
			}
			return c, c
		}
		n := names[rs.IntN(len(names))]
		return n, n
	}
	a, an := kexpr(rs, names, depth-1)
	switch rs.IntN(4) {
	case 0: // a function of one operand
		f := [][2]string{{"sin(%s)", "np.sin(%s)"}, {"cos(%s)", "np.cos(%s)"}, {"tanh(%s)", "np.tanh(%s)"},
			{"atan(%s)", "np.arctan(%s)"}, {"abs(%s)", "np.abs(%s)"}, {"-(%s)", "-(%s)"},
			{"sqrt(abs(%s))", "np.sqrt(np.abs(%s))"}, {"log1p(abs(%s))", "np.log1p(np.abs(%s))"},
			{"exp(tanh(%s))", "np.exp(np.tanh(%s))"}, {"floor(%s)", "np.floor(%s)"}}[rs.IntN(10)]
		return fmt.Sprintf(f[0], a), fmt.Sprintf(f[1], an)
	case 1: // a conditional on inputs
		x, y := names[rs.IntN(len(names))], names[rs.IntN(len(names))]
		op := []string{">", "<=", "==", "!="}[rs.IntN(4)]
		b, bn := kexpr(rs, names, depth-1)
		return fmt.Sprintf("where(%s %s %s, %s, %s)", x, op, y, a, b), fmt.Sprintf("np.where(%s %s %s, %s, %s)", x, op, y, an, bn)
	}
	b, bn := kexpr(rs, names, depth-1)
	f := [][2]string{{"(%s + %s)", "(%s + %s)"}, {"(%s - %s)", "(%s - %s)"}, {"(%s * %s)", "(%s * %s)"},
		{"hypot(%s, %s)", "np.hypot(%s, %s)"}, {"atan2(%s, %s)", "np.arctan2(%s, %s)"},
		{"maximum(%s, %s)", "np.maximum(%s, %s)"}, {"minimum(%s, %s)", "np.minimum(%s, %s)"}}[rs.IntN(7)]
	return fmt.Sprintf(f[0], a, b), fmt.Sprintf(f[1], an, bn)
}

// compareClose computes got and compares it with NumPy's answer to code: the same shape, and
// values within tol of NumPy's relative to max(1, |value|) (NaN equal to NaN, infinities
// equal).
func compareClose(t *testing.T, cs []check, tol float64, opts ...ComputeOption) {
	t.Helper()
	cases := make([]npCase, len(cs))
	for i, c := range cs {
		cases[i] = npCase{Code: c.code, Inputs: map[string]npArray{}}
		for _, in := range c.inputs {
			cases[i].Inputs[in.name] = in.np()
		}
	}
	res := numpy(t, cases)
	for i, c := range cs {
		r := res[i]
		if r.Err != "" {
			t.Errorf("%s: numpy: %s (%s)", c.what, r.Err, c.code)
			continue
		}
		if err := c.got.Err(); err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if fmt.Sprint(c.got.Shape()) != fmt.Sprint(r.Shape) {
			t.Errorf("%s: shape %v, numpy %v (%s)", c.what, c.got.Shape(), r.Shape, c.code)
			continue
		}
		got, err := c.got.ToSlice(opts...)
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		want := r.values(t)
		for j := range want {
			g, w := got[j], want[j]
			if g == w || (g != g && w != w) || math.Abs(g-w) <= tol*max(1, math.Abs(w)) {
				continue
			}
			t.Errorf("%s: element %d is %v, numpy %v (%s)", c.what, j, g, w, c.code)
			break
		}
	}
}

// kernelCases returns random expressions over x (2-d), y (broadcast along rows) and z (the
// shape of x), on random chunkings.
func kernelCases(t *testing.T, seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 17))
	var cs []check
	for i := range n {
		shape := npShape(rs, 2, 1, 9)
		x, xin := randArray(rs, "x", shape)
		y, yin := randArray(rs, "y", shape[1:])
		z, zin := randArray(rs, "z", shape)
		ours, np := kexpr(rs, []string{"x", "y", "z"}, 1+rs.IntN(4))
		k, err := Elementwise("x, y, z", ours)
		if err != nil {
			t.Fatalf("Elementwise(%q): %v", ours, err)
		}
		cs = append(cs, check{what: fmt.Sprintf("case %d: %s", i, ours), got: k.Apply(x, y, z), code: np, inputs: []input{xin, yin, zin}})
	}
	return cs
}

func TestElementwiseMatchesNumPy(t *testing.T) {
	compareClose(t, kernelCases(t, 1, 120), 1e-12)
}

func TestElementwiseThreads(t *testing.T) {
	compareClose(t, kernelCases(t, 2, 30), 1e-12, Threads(2))
}

// Operators that are exact in both libraries give NumPy's bits.
func TestElementwiseExact(t *testing.T) {
	rs := rand.New(rand.NewPCG(3, 3))
	x, xin := randArray(rs, "x", []int{7, 5})
	y, yin := randArray(rs, "y", []int{5})
	cases := []struct{ inputs, ours, np string }{
		{"x, y", "where(x > y, x - y, floor(x / 2)) + x % 3", "np.where(x > y, x - y, np.floor(x / 2)) + x % 3"},
		{"x, y", "maximum(x, 0) * 2 - minimum(y, -1) / 4", "np.maximum(x, 0) * 2 - np.minimum(y, -1) / 4"},
		{"x, y", "(x < 0) && !(y >= 1) || isnan(x)", "np.logical_or(np.logical_and(x < 0, np.logical_not(y >= 1)), np.isnan(x))"},
		{"x, y", "clip(x, -3, y) * square(y)", "np.clip(x, -3, y) * np.square(y)"},
		{"x, y", "copysign(trunc(x), y) + sign(y - x)", "np.copysign(np.trunc(x), y) + np.sign(y - x)"},
		{"y, x", "remainder(y, 3) + floor_divide(x, 2)", "np.remainder(y, 3) + np.floor_divide(x, 2)"},
		{"x, y", "-x + +y", "-x + +y"},
		{"x, y", "2 * 3 + x", "2 * 3 + x"},
	}
	var cs []check
	for _, c := range cases {
		k, err := Elementwise(c.inputs, c.ours)
		if err != nil {
			t.Fatalf("Elementwise(%q): %v", c.ours, err)
		}
		args := []any{x, y}
		if c.inputs == "y, x" {
			args = []any{y, x}
		}
		cs = append(cs, check{what: c.ours, got: k.Apply(args...), code: c.np, inputs: []input{xin, yin}})
	}
	runChecks(t, cs)
}

// Numbers and integer arrays follow the operations' dtype rules (weak scalars, NEP 50).
func TestElementwiseDTypes(t *testing.T) {
	k, err := Elementwise("i, s", "i * 2 + s")
	if err != nil {
		t.Fatal(err)
	}
	a := FromSliceInt32([]int32{1, 2, 3})
	got := k.Apply(a, 1)
	if got.Err() != nil || got.DType() != Int32 {
		t.Fatalf("int32 * 2 + 1: dtype %v, err %v; want int32", got.DType(), got.Err())
	}
	v, err := got.ToSliceInt32()
	if err != nil || fmt.Sprint(v) != "[3 5 7]" {
		t.Errorf("int32 * 2 + 1 = %v (%v), want [3 5 7]", v, err)
	}
	f := k.Apply(a, 0.5)
	if f.Err() != nil || f.DType() != Float64 {
		t.Errorf("int32 * 2 + 0.5: dtype %v, err %v; want float64", f.DType(), f.Err())
	}
	s := k.Apply(2, 3)
	if s.Err() != nil || len(s.Shape()) != 0 {
		t.Fatalf("two numbers: shape %v, err %v; want a 0-d array", s.Shape(), s.Err())
	}
	if v, err := s.ToSlice(); err != nil || fmt.Sprint(v) != "[7]" {
		t.Errorf("2 * 2 + 3 = %v (%v)", v, err)
	}
	f32 := FromSliceFloat32([]float32{1, 4, 9})
	k2, err := Elementwise("x", "sqrt(x) + pi")
	if err != nil {
		t.Fatal(err)
	}
	if r := k2.Apply(f32); r.Err() != nil || r.DType() != Float32 {
		t.Errorf("sqrt(float32) + pi: dtype %v, err %v; want float32", r.DType(), r.Err())
	}
}

func TestElementwiseErrors(t *testing.T) {
	bad := []struct{ inputs, src, want string }{
		{"x", "x +", "column 4: unexpected end of expression: expected operand"},
		{"x", "sqrt(x", "column 7: unexpected end of expression: missing ',' in argument list"},
		{"x", "sqrtt(x)", "column 1: unknown function sqrtt"},
		{"x", "x * w", "column 5: unknown name w (inputs: x"},
		{"x", "sqrt(x, x)", "sqrt takes 1 arguments, got 2"},
		{"x", "atan2(x)", "atan2 takes 2 arguments, got 1"},
		{"x", "x[0]", "column 1: indexing not supported"},
		{"x", "x &^ 1", "column 3: operator &^ not supported"},
		{"x", "\"a\" + x", "column 1: literal \"a\": want a real number"},
		{"x", "sqrt + x", "function sqrt used as a value"},
		{"x", "math.Sqrt(x)", "want a function name before ("},
		{"x, x", "x", "input \"x\" is named twice"},
		{"x, 2y", "x", "input 2 (\"2y\") is not a name"},
		{"pi", "pi", "hides the constant"},
		{"exp", "exp", "hides the function"},
		{"x", "99999999999999999999 * x", "integer 99999999999999999999 out of range"},
	}
	for _, b := range bad {
		k, err := Elementwise(b.inputs, b.src)
		if err == nil {
			t.Errorf("Elementwise(%q, %q) = %v, want an error", b.inputs, b.src, k)
			continue
		}
		if !strings.Contains(err.Error(), b.want) {
			t.Errorf("Elementwise(%q, %q): %v; want %q in it", b.inputs, b.src, err, b.want)
		}
	}
	k, err := Elementwise("x, y", "x + y")
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Apply(FromSlice([]float64{1})).Err(); err == nil || !strings.Contains(err.Error(), "1 arguments for 2 inputs (x, y)") {
		t.Errorf("one argument for two inputs: %v", err)
	}
	if err := k.Apply(FromSlice([]float64{1}), "s").Err(); err == nil || !strings.Contains(err.Error(), "input y of type string") {
		t.Errorf("a string argument: %v", err)
	}
	if err := k.Apply(FromSlice([]float64{1, 2}), FromSlice([]float64{1, 2, 3})).Err(); err == nil || !strings.Contains(err.Error(), "broadcast") {
		t.Errorf("shapes that do not broadcast: %v", err)
	}
	kb, err := Elementwise("x", "x & 1")
	if err != nil {
		t.Fatal(err)
	}
	if err := kb.Apply(FromSlice([]float64{1.5})).Err(); err == nil || !strings.Contains(err.Error(), "column 1") {
		t.Errorf("bitwise and of floats: %v, want an error at column 1", err)
	}
}

func TestKernelFunctions(t *testing.T) {
	names := strings.Join(KernelFunctions(), " ")
	for _, want := range []string{"sqrt", "exp", "log1p", "atan2", "where", "clip", "hypot", "isnan", "logical_not", "maximum", "pow"} {
		if !strings.Contains(" "+names+" ", " "+want+" ") {
			t.Errorf("KernelFunctions lacks %s: %s", want, names)
		}
	}
}

// On a GPU the kernels fuse into the generated PTX: NumPy's values within the libm tolerance.
func TestGPUElementwiseMatchesNumPy(t *testing.T) {
	needGPU(t)
	compareClose(t, kernelCases(t, 4, 60), 1e-12, OnGPU())
}

func TestKernelShows(t *testing.T) {
	k, err := Elementwise("x, y", "where(x < y, x, y)")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := k.String(), "elementwise(x, y) = where(x < y, x, y)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if h := k.HTML(); !strings.Contains(h, "<code>where(x &lt; y, x, y)</code>") || !strings.Contains(h, "(x, y)") {
		t.Errorf("HTML = %q", h)
	}
	if got := fmt.Sprint(k.Inputs()); got != "[x y]" {
		t.Errorf("Inputs = %s", got)
	}
}

// Typed inputs, as CuPy declares them: arrays are converted with AsType's rules, numbers
// become 0-d arrays of the dtype (strong, not weak).
func TestElementwiseTypedInputs(t *testing.T) {
	rs := rand.New(rand.NewPCG(8, 8))
	x, xin := randArray(rs, "x", []int{6, 4})
	k, err := Elementwise("float32 x, int32 n, y", "x * n + y")
	if err != nil {
		t.Fatal(err)
	}
	if got := k.String(); got != "elementwise(float32 x, int32 n, y) = x * n + y" {
		t.Errorf("String = %q", got)
	}
	a := k.Apply(x, 3, 2)
	if a.Err() != nil || a.DType() != Float64 { // float32 with int32 is float64 (NumPy 2)
		t.Fatalf("dtype %v, err %v; want float64", a.DType(), a.Err())
	}
	k32, err := Elementwise("float32 x, y", "x * y")
	if err != nil {
		t.Fatal(err)
	}
	b := k32.Apply(x, 0.5)
	if b.Err() != nil || b.DType() != Float32 { // an untyped number stays weak
		t.Fatalf("dtype %v, err %v; want float32", b.DType(), b.Err())
	}
	runChecks(t, []check{
		{what: "typed float32 x, int32 n", got: a, code: "x.astype(np.float32) * np.int32(3) + 2", inputs: []input{xin}},
		{what: "typed, weak float y", got: b, code: "x.astype(np.float32) * 0.5", inputs: []input{xin}},
	})
	if _, err := Elementwise("float16 x", "x"); err == nil || !strings.Contains(err.Error(), `input 1 ("float16 x")`) {
		t.Errorf("an unknown dtype: %v", err)
	}
	if _, err := Elementwise("float64 x y", "x"); err == nil || !strings.Contains(err.Error(), "is not a name") {
		t.Errorf("three words: %v", err)
	}
}
