package gpuarray

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// needGPU skips without a GPU, except on the GPU machine (GPUNOTES_GPU_TESTS=1), where a
// missing GPU is a failure.
func needGPU(t *testing.T) {
	t.Helper()
	if err := GPUError(); err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
}

func TestNoGPUIsAClearError(t *testing.T) {
	if GPUError() == nil {
		t.Skip("this machine has a GPU")
	}
	if len(GPUs()) != 0 {
		t.Fatal("GPUs() must be empty without a driver")
	}
	_, err := NewRandomState(1).Normal(0, 1, Shape(10), Chunks(5)).Sum().Float64(OnGPU())
	if err == nil {
		t.Fatal("a GPU compute without a GPU must fail")
	}
	t.Log(err)
}

// TestGPUPropertyAgainstReference runs random fused graphs on the GPU backend against the
// naive reference, as TestPropertyAgainstReference does for the CPU.
func TestGPUPropertyAgainstReference(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(9, 13))
	for trial := 0; trial < 300; trial++ {
		rs := NewRandomState(int64(trial))
		x := randExpr(r, rs)
		if r.IntN(2) == 0 {
			x = randReduce(r, x)
		}
		if err := x.Err(); err != nil {
			t.Fatalf("trial %d: building: %v", trial, err)
		}
		c, err := x.Compute(OnGPU())
		if err != nil {
			t.Fatalf("trial %d: %v: %v", trial, x, err)
		}
		if strings.Contains(c.Path(), "host") {
			t.Fatalf("trial %d: %v: part of it ran on the host: %s", trial, x, c.Path())
		}
		got, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		matchReference(t, trial, x, got, false)
	}
}

// TestGPUAxisReductionsMatchCPU: reductions over random axes of arrays large enough that the
// GPU splits each kept element's reduction into several slices, on exactly representable
// data (integers, FromSlice data in tenths, ranges) through exact ops. Min, max, argmin and
// argmax match the CPU bit for bit, and so do sums and means of the integer-valued arrays;
// other sums and var/std stay within 2*n*eps*sum|x| of the CPU (n elements reduced per
// result) and 1e-12 relative.
func TestGPUAxisReductionsMatchCPU(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(3, 5))
	reds := []string{"sum", "mean", "var", "std", "min", "max", "argmin", "argmax"}
	for trial := 0; trial < 60; trial++ {
		rs := NewRandomState(int64(trial))
		shape := [][]int{{2000, 40}, {40, 3000}, {30, 50, 70}, {257, 3, 600}}[trial%4]
		chunks := make([]int, len(shape))
		for i, n := range shape {
			chunks[i] = max(1, n/(1+r.IntN(3)))
		}
		dt := Float64
		if trial%5 == 4 {
			dt = Float32
		}
		opts := []ArrayOption{Shape(shape...), Chunks(chunks...), WithDType(dt)}
		var x *Array
		integer := true
		switch trial % 3 {
		case 0:
			x = rs.Integers(-50, 50, opts...)
		case 1:
			data := make([]float64, expr.Size(shape))
			for i := range data {
				data[i] = float64(r.IntN(2001)-1000) / 10
			}
			x, integer = FromSlice(data, opts...), false
		default:
			m := shape[len(shape)-1]
			x = Arange(float64(-m/2), float64(m-m/2), 1, WithDType(dt), Chunks(max(1, m/3))).Add(rs.Integers(0, 3, opts...))
		}
		switch r.IntN(4) {
		case 0:
			x = x.Mul(2).Sub(x.Abs())
		case 1:
			x = Where(x.Gt(0), x, x.Neg().Add(1))
		case 2:
			x = x.T()
		}
		if r.IntN(3) == 0 {
			x = x.Slice(Every(-1), SpanStep(1, x.Shape()[1], 2))
		}
		nd := x.NDim()
		axes := []int{r.IntN(nd)}
		red := reds[r.IntN(len(reds))]
		if nd > 2 && r.IntN(2) == 0 && red != "argmin" && red != "argmax" {
			axes = append(axes, (axes[0]+1+r.IntN(nd-1))%nd)
			slices.Sort(axes)
		}
		y := map[string]func(...int) *Array{"sum": x.Sum, "mean": x.Mean, "var": x.Var, "std": x.Std,
			"min": x.Min, "max": x.Max, "argmin": x.ArgMin, "argmax": x.ArgMax}[red](axes...)
		gc, err := y.Compute(OnGPU())
		if err != nil {
			t.Fatalf("trial %d: %s over %v of %v: %v", trial, red, axes, x, err)
		}
		if strings.Contains(gc.Path(), "host") {
			t.Fatalf("trial %d: host fallback: %s", trial, gc.Path())
		}
		g, _ := gc.ToSlice()
		c, err := y.ToSlice(Threads(2))
		if err != nil {
			t.Fatal(err)
		}
		abs, err := x.Abs().Sum(axes...).ToSlice(Threads(2))
		if err != nil {
			t.Fatal(err)
		}
		n := float64(x.Size() / y.Size())
		exact := red == "min" || red == "max" || red == "argmin" || red == "argmax" || (integer && (red == "sum" || red == "mean"))
		for i := range c {
			if exact {
				if math.Float64bits(g[i]) != math.Float64bits(c[i]) {
					t.Fatalf("trial %d: %s over %v of %v (%v): element %d GPU %v CPU %v", trial, red, axes, x, dt, i, g[i], c[i])
				}
				continue
			}
			bound := 2 * n * 0x1p-52 * abs[i]
			if red == "mean" {
				bound /= n
			}
			if dt == Float32 {
				bound = max(bound, 0x1p-23*math.Abs(c[i]))
			}
			if red == "var" || red == "std" {
				bound = 1e-12 * (1 + math.Abs(c[i]))
				if dt == Float32 {
					bound = 0x1p-22 * (1 + math.Abs(c[i]))
				}
			}
			if math.Abs(g[i]-c[i]) > bound {
				t.Fatalf("trial %d: %s over %v of %v (%v): element %d GPU %v CPU %v, bound %v", trial, red, axes, x, dt, i, g[i], c[i], bound)
			}
		}
	}
}

func TestGPUSeedMatchesCPU(t *testing.T) {
	needGPU(t)
	x := NewRandomState(42).Normal(10, 1, Shape(3000, 3000), Chunks(700, 700))
	y := x.Add(1).Slice(Every(2), Every(2)).Sum()
	g, err := y.Float64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	c, err := y.Float64(Threads(0))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(g-c) > 1e-12*math.Abs(c) {
		t.Fatalf("GPU %v CPU %v", g, c)
	}
	if len(GPUs()) > 1 {
		m, err := y.Float64(OnGPUs())
		if err != nil {
			t.Fatal(err)
		}
		if m != g {
			t.Fatalf("all GPUs %v, one GPU %v: chunk partials must not depend on the device", m, g)
		}
	}
	if _, err := y.Float64(OnGPU(len(GPUs()) + 3)); err == nil {
		t.Fatal("an out-of-range device must be an error")
	}
}

func TestSetBackend(t *testing.T) {
	defer SetDefaults()
	x := NewRandomState(4).Uniform(0, 1, Shape(100), Chunks(30))
	if GPUError() != nil {
		if err := SetBackend(GPU); err == nil {
			t.Fatal("SetBackend(GPU) without a GPU must fail")
		}
	} else if err := SetBackend(GPU); err != nil {
		t.Fatal(err)
	}
	a, err := x.Sum().Float64() // the default (GPU where there is one, else still the CPU)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetBackend(CPU); err != nil {
		t.Fatal(err)
	}
	b, err := x.Sum().Float64(Inline())
	if err != nil {
		t.Fatal(err)
	}
	if !near(a, b, 1e-12) {
		t.Fatalf("default backend %v, inline %v", a, b)
	}
	SetDefaults(WithProgress(func(done, total int) {}), MemoryLimit(64))
	if _, err := NewRandomState(1).Normal(0, 1, Shape(100, 100), Chunks(100, 100)).ToSlice(); err == nil {
		t.Fatal("a default memory limit of 64 bytes must refuse a 80 kB task")
	}
	if err := SetBackend(Backend(7)); err == nil {
		t.Fatal("unknown backend accepted")
	}
}
