package gpuarray

import (
	"math"
	"os"
	"strings"
	"testing"
)

// TestGPUNormalReductionsMatchCPU checks the kernels that draw normals, whose slow draws are
// deferred (issue 20), against the CPU: full and axis reductions of expressions of a normal
// x, a masked mean and variance (a complex sum: the selection's sum and count), and full reductions of f(x, x.T) over the whole square x, which are mirrored unless
// GPUNOTES_PTX_MIRROR=0. N is odd and the chunks do not divide it. Normals agree with the CPU
// within 2 ulp (the slow path's exp and log): argmin/argmax exactly, the rest within 1e-10
// (relative; per term for sums). The deferred draws are folded in element order, and the
// mirrored reductions of x persisted read it in the regenerated ones' order, so every
// reduction has the bits of the same reduction of x persisted on the GPU (with the mirror off,
// those of x.T are left out: their stored reads walk tiles; GPUNOTES_PTX_DEFER_AXES=0 and
// GPUNOTES_PTX_DEFER=0 turn deferral off: the same).
func TestGPUNormalReductionsMatchCPU(t *testing.T) {
	needGPU(t)
	t.Logf("GPUNOTES_PTX_DEFER=%q GPUNOTES_PTX_DEFER_AXES=%q GPUNOTES_PTX_MIRROR=%q",
		os.Getenv("GPUNOTES_PTX_DEFER"), os.Getenv("GPUNOTES_PTX_DEFER_AXES"), os.Getenv("GPUNOTES_PTX_MIRROR"))
	const n = 301
	x := NewRandomState(20).StandardNormal(Shape(n, n), Chunks(64, 100))
	build := func(x *Array) map[string]*Array {
		return map[string]*Array{
			"sum(exp(x))":                 x.Exp().Sum(),
			"std(x * x + x)":              x.Mul(x).Add(x).Std(),
			"max(x)":                      x.Max(),
			"argmin(x)":                   x.ArgMin(),
			"sum(x, 0)":                   x.Sum(0),
			"mean(sin(x), 1)":             x.Sin().Mean(1),
			"std(x, 0)":                   x.Std(0),
			"min(x, 1)":                   x.Min(1),
			"argmax(x, 0)":                x.ArgMax(0),
			"sum(x + x.T)":                x.Add(x.T()).Sum(),
			"mean(exp(x - x.T))":          x.Sub(x.T()).Exp().Mean(),
			"std(where(x > x.T, x, x.T))": Where(x.Gt(x.T()), x, x.T()).Std(),
			"max(x * x.T - x)":            x.Mul(x.T()).Sub(x).Max(),
			"min(x.T / (1 + x * x))":      x.T().Div(x.Mul(x).Add(1)).Min(),
			"mean(x[x > 1])":              x.Mask(x.Gt(1)).Mean(),
			"var(x[x > 1])":               x.Mask(x.Gt(1)).Var(),
		}
	}
	cases := build(x)
	xp := x.Persist(OnGPU())
	if err := xp.Err(); err != nil {
		t.Fatal(err)
	}
	persisted := build(xp)
	for name, a := range cases {
		if os.Getenv("GPUNOTES_PTX_MIRROR") != "0" || !strings.Contains(name, "x.T") {
			gpu, err := a.ToSlice(OnGPU())
			if err != nil {
				t.Fatalf("%s on the GPU: %v", name, err)
			}
			held, err := persisted[name].ToSlice(OnGPU())
			if err != nil {
				t.Fatalf("%s of x persisted on the GPU: %v", name, err)
			}
			for i := range gpu {
				if math.Float64bits(gpu[i]) != math.Float64bits(held[i]) {
					t.Errorf("%s[%d]: %v regenerated, %v persisted on the GPU (bits differ)", name, i, gpu[i], held[i])
					break
				}
			}
		}
	}
	for name, a := range cases {
		gpu, err := a.ToSlice(OnGPU())
		if err != nil {
			t.Fatalf("%s on the GPU: %v", name, err)
		}
		cpu, err := a.ToSlice(Threads(0))
		if err != nil {
			t.Fatalf("%s on the CPU: %v", name, err)
		}
		if len(gpu) != len(cpu) {
			t.Fatalf("%s: %d values on the GPU, %d on the CPU", name, len(gpu), len(cpu))
		}
		// Full sums gather n*n terms of a few units, axis sums n: their rounding (in another
		// order on each side) stays far under 1e-10 per term, and one element missing or
		// counted twice moves them by a unit. Means and moments are of order one.
		terms := float64(n * n)
		if len(cpu) > 1 {
			terms = n
		}
		for i := range cpu {
			g, c := gpu[i], cpu[i]
			var ok bool
			switch name[:3] {
			case "arg":
				ok = g == c
			case "sum":
				ok = math.Abs(g-c) <= 1e-10*terms
			default:
				ok = math.Abs(g-c) <= 1e-10*math.Max(1e-2, math.Abs(c))
			}
			if !ok {
				t.Errorf("%s[%d]: GPU %v, CPU %v", name, i, g, c)
				break
			}
		}
	}
}
