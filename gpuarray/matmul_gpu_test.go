package gpuarray

import (
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// TestGPUMatMulLargerThanGPUMemory: a product whose b is larger than the GPU's memory pool
// still runs on the GPU, b's column panels one after another (each panel product with its
// operands generated on the device, the whole product declined), and matches the CPU on the
// rows it checks. It runs itself again in a process whose pool is
// 0.2% of the GPU's memory (160 MB on an H100, 280 MB on an H200; b is 384 MB).
func TestGPUMatMulLargerThanGPUMemory(t *testing.T) {
	needGPU(t)
	if os.Getenv("GPUNOTES_GPU_MEMORY_FRACTION") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGPUMatMulLargerThanGPUMemory$", "-test.v")
		cmd.Env = append(os.Environ(), "GPUNOTES_GPU_MEMORY_FRACTION=0.002")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestGPUMatMulLargerThanGPUMemory") {
			t.Fatalf("the child with a small pool: %v", err)
		}
		return
	}
	dev, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	var limit uint64
	_ = dev.Do(t.Context(), func() error { limit = dev.Pool().Limit(); return nil })
	if limit >= 8000*6000*8 {
		t.Fatalf("the pool holds %d bytes, not less than b's 384 MB", limit)
	}
	t.Logf("pool limit %d bytes", limit)
	rs := NewRandomState(31)
	a := rs.StandardNormal(Shape(1000, 8000), Chunks(250, 8000))
	b := rs.StandardNormal(Shape(8000, 6000), Chunks(8000, 500))
	p := MatMul(a, b)
	c, err := p.Compute(OnGPU())
	if err != nil {
		t.Fatalf("a product whose b (384 MB) exceeds the pool: %v", err)
	}
	t.Logf("path: %s; where %s", c.Path(), c.Where())
	if !strings.Contains(c.Path(), "cuBLAS") {
		t.Errorf("path %q does not say cuBLAS", c.Path())
	}
	got, err := c.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	rows := 10
	want, err := MatMul(a.Slice(Span(0, rows), All()), b).ToSlice(Threads(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= 1e-9*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("element %d: GPU %v, CPU %v", i, got[i], want[i])
		}
	}
}
