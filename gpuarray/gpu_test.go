package gpuarray

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
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
		got, err := x.ToSlice(OnGPU())
		if err != nil {
			t.Fatalf("trial %d: %v: %v", trial, x, err)
		}
		matchReference(t, trial, x, got, false)
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
