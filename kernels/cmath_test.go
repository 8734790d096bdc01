package kernels

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
)

// cmathHostPrelude lets the marked parts of lib.cu compile as host C++: the device's
// round-to-nearest intrinsics are the host's operations (compiled without contraction) and its
// libm is the host's.
const cmathHostPrelude = `#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
using namespace std;
typedef unsigned long long u64;
#define __device__
#define __forceinline__ inline
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return sqrt(a); }
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double d) { long long x; memcpy(&x, &d, 8); return x; }
static inline u64 __umul64hi(u64 a, u64 b) { return (u64)(((unsigned __int128)a * b) >> 64); }
static inline int __clzll(long long x) { return __builtin_clzll((u64)x); }
`

// cmathHostMain reads lines "NAME A B [C D]" (float64 bits in hex) and writes "E F".
const cmathHostMain = `
typedef void (*unary)(double, double, double*, double*);
static const struct { const char* name; unary f; } ops[] = {
  {"exp", gpn_cexp}, {"log", gpn_clog}, {"log2", gpn_clog2}, {"log10", gpn_clog10}, {"sqrt", gpn_csqrt},
  {"sin", gpn_csin}, {"cos", gpn_ccos}, {"tan", gpn_ctan}, {"sinh", gpn_csinh}, {"cosh", gpn_ccosh},
  {"tanh", gpn_ctanh}, {"asin", gpn_casin}, {"acos", gpn_cacos}, {"atan", gpn_catan}, {"asinh", gpn_casinh},
  {"acosh", gpn_cacosh}, {"atanh", gpn_catanh}};
int main() {
  char name[32];
  u64 a, b, c, d;
  while (scanf("%31s %llx %llx", name, &a, &b) == 3) {
    double e = 0, f = 0;
    if (strcmp(name, "pow") == 0) {
      if (scanf("%llx %llx", &c, &d) != 2) return 2;
      gpn_cpow(__longlong_as_double(a), __longlong_as_double(b), __longlong_as_double(c), __longlong_as_double(d), &e, &f);
    } else {
      unary fn = 0;
      for (auto& o : ops) if (strcmp(o.name, name) == 0) fn = o.f;
      if (!fn) return 3;
      fn(__longlong_as_double(a), __longlong_as_double(b), &e, &f);
    }
    printf("%llx %llx\n", (u64)__double_as_longlong(e), (u64)__double_as_longlong(f));
  }
  return 0;
}
`

// cmathOps are the complex functions of lib.cu with the CPU executor's definition of each
// (gpuarray/optable's Complex column) and the bound of the host test: how far, in ulp of the
// larger part's magnitude, the port's result may be from Go's when the libm under it is
// glibc's (the GPU test states its own bounds against CUDA's).
var cmathOps = []struct {
	name string
	ulp  float64
	f    func(x, y complex128) complex128
}{
	{"exp", 4, func(x, _ complex128) complex128 { return cmplx.Exp(x) }},
	{"log", 2, func(x, _ complex128) complex128 { return cpu.LogComplex(x) }},
	{"log2", 2, func(x, _ complex128) complex128 { return cpu.LogComplex(x) / math.Ln2 }},
	{"log10", 2, func(x, _ complex128) complex128 { return cpu.Log10Complex(x) }},
	{"sqrt", 0, func(x, _ complex128) complex128 { return cmplx.Sqrt(x) }},
	{"sin", 4, func(x, _ complex128) complex128 { return cmplx.Sin(x) }},
	{"cos", 4, func(x, _ complex128) complex128 { return cmplx.Cos(x) }},
	{"tan", 4, func(x, _ complex128) complex128 { return cmplx.Tan(x) }},
	{"sinh", 4, func(x, _ complex128) complex128 { return cmplx.Sinh(x) }},
	{"cosh", 4, func(x, _ complex128) complex128 { return cmplx.Cosh(x) }},
	{"tanh", 4, func(x, _ complex128) complex128 { return cmplx.Tanh(x) }},
	{"asin", 2, func(x, _ complex128) complex128 { return cpu.AsinComplex(x) }},
	{"acos", 2, func(x, _ complex128) complex128 { return cpu.AcosComplex(x) }},
	{"atan", 2, func(x, _ complex128) complex128 { return cmplx.Atan(x) }},
	{"asinh", 2, func(x, _ complex128) complex128 { return cpu.AsinhComplex(x) }},
	{"acosh", 2, func(x, _ complex128) complex128 { return cpu.AcoshComplex(x) }},
	{"atanh", 2, func(x, _ complex128) complex128 { return cmplx.Atanh(x) }},
	{"pow", 8, func(x, y complex128) complex128 { return cpu.PowComplex(x, y) }},
}

// CmathValues are complex operands where complex functions go wrong: every pair of the parts
// zeros of both signs, ±1, ±Inf, NaN, subnormals, huge and tiny values, multiples of pi/2 and
// values past 2^30 (tan's reduction), then random ones of ordinary and wide magnitudes.
func cmathValues(r *rand.Rand) []complex128 {
	parts := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, -3, 1e-310, -5e-324, 1e-200, 1e300, -1e300,
		math.Inf(1), math.Inf(-1), math.NaN(), math.Pi / 2, -math.Pi, 1e10, 3e9, 9.3e18, 1.5e300, 7.5e-9, 1 + 1e-12}
	var v []complex128
	for _, a := range parts {
		for _, b := range parts {
			v = append(v, complex(a, b))
		}
	}
	for range 2000 {
		v = append(v, complex(r.NormFloat64()*10, r.NormFloat64()*10))
	}
	for range 1000 {
		w := func() float64 { return math.Copysign(math.Exp(r.Float64()*80-40), r.Float64()-0.5) }
		v = append(v, complex(w(), w()))
	}
	return v
}

// TestComplexMathMatchesGo compiles lib.cu's complex functions (the GPU bodies of the op
// table's complex exp, log, sqrt, trigonometric, hyperbolic and inverse functions and pow)
// for the host with g++ and runs them on cmathValues against Go's math/cmplx, the CPU
// executor's: the special cases exactly, the rest within each op's bound. The device runs the
// same source with CUDA's libm (gpuarray's TestGPUComplexMath).
func TestComplexMathMatchesGo(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("g++ not found: %v", err)
		}
		t.Skipf("g++ not found: %v", err)
	}
	lib, err := os.ReadFile("lib.cu")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString(cmathHostPrelude)
	for rest := string(lib); ; {
		_, after, ok := strings.Cut(rest, "// cmath-host: begin")
		if !ok {
			break
		}
		_, after, _ = strings.Cut(after, "\n") // the rest of the mark's line
		part, after2, ok := strings.Cut(after, "// cmath-host: end")
		if !ok {
			t.Fatal("lib.cu: a cmath-host: begin without an end")
		}
		src.WriteString(strings.ReplaceAll(part, `extern "C" `, ""))
		rest = after2
	}
	src.WriteString(cmathHostMain)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cmath.cc"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cmath")
	if out, err := exec.Command(cxx, "-O2", "-std=c++17", "-ffp-contract=off", "-o", bin, filepath.Join(dir, "cmath.cc")).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}

	r := rand.New(rand.NewPCG(20, 1))
	xs := cmathValues(r)
	type job struct {
		op   int
		x, y complex128
	}
	var jobs []job
	var in bytes.Buffer
	hex := func(f float64) string { return fmt.Sprintf("%x", math.Float64bits(f)) }
	for k, o := range cmathOps {
		for i, x := range xs {
			j := job{op: k, x: x}
			line := o.name + " " + hex(real(x)) + " " + hex(imag(x))
			if o.name == "pow" {
				j.y = xs[(i*7919+13)%len(xs)]
				line += " " + hex(real(j.y)) + " " + hex(imag(j.y))
			}
			jobs = append(jobs, j)
			in.WriteString(line + "\n")
		}
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the host build: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	worst := make([]float64, len(cmathOps))
	fails := make([]int, len(cmathOps))
	n := 0
	for sc.Scan() {
		if n >= len(jobs) {
			t.Fatal("more results than operands")
		}
		var e, f uint64
		if _, err := fmt.Sscanf(sc.Text(), "%x %x", &e, &f); err != nil {
			t.Fatalf("result %d: %v", n, err)
		}
		j := jobs[n]
		n++
		o := cmathOps[j.op]
		want := o.f(j.x, j.y)
		got := complex(math.Float64frombits(e), math.Float64frombits(f))
		d := optable.ComplexApart(o.name, j.x, j.y, want, got, false)
		worst[j.op] = max(worst[j.op], d)
		if d > o.ulp {
			if fails[j.op]++; fails[j.op] <= 30 {
				t.Errorf("%s%v: Go gives %v, lib.cu %v (%.3g ulp, %g allowed)", o.name, []complex128{j.x, j.y}[:1+b2i(o.name == "pow")], want, got, d, o.ulp)
			}
		}
	}
	if n != len(jobs) {
		t.Fatalf("%d results for %d operands", n, len(jobs))
	}
	for k, o := range cmathOps {
		t.Logf("%s: %d operands, at most %.3g ulp from Go's (%g allowed), %d beyond", o.name, len(xs), worst[k], o.ulp, fails[k])
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
