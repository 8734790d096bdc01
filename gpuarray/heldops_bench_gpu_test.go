package gpuarray

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestGPUHeldOpsBench (GPUNOTES_GPU_HELDOPS=1, on the GPU machine) times the rows of
// bench/RESULTS.md for persisted arrays read across chunks and as a call's further operand:
// the product of a persisted float32 x (20000 x 20000 in chunks of 5000, each task's rows
// spanning four chunks) by a persisted float32 b (20000 x 1000 in four row chunks), a sort
// of a persisted float64 20000 x 20000 along its chunked rows, and a solve of a persisted
// 8000 x 8000 matrix for persisted right-hand sides in four chunks. One JSON line each, best
// of 3 after a warm-up, with the Path's host steps.
func TestGPUHeldOpsBench(t *testing.T) {
	if os.Getenv("GPUNOTES_GPU_HELDOPS") != "1" {
		t.Skip("set GPUNOTES_GPU_HELDOPS=1 to time reads of persisted arrays across chunks on the GPU machine")
	}
	needGPU(t)
	time3 := func(op string, f func() *Array) {
		best := math.Inf(1)
		var path string
		var sum float64
		for rep := range 4 {
			t0 := time.Now()
			c, err := f().Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			v, err := c.ToSlice()
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			if rep > 0 {
				best = min(best, time.Since(t0).Seconds())
			}
			path, sum = c.Path(), 0
			for _, x := range v {
				sum += x
			}
			c.Release()
		}
		var host []string
		for _, s := range strings.Split(path, "; ") {
			if strings.HasPrefix(s, "host") {
				host = append(host, s)
			}
		}
		line, _ := json.Marshal(map[string]any{"op": op, "seconds": best, "checksum": sum, "host_steps": host})
		fmt.Println(string(line))
	}
	persist := func(a *Array) *Array {
		p := a.Persist(OnGPU())
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rs := NewRandomState(5)
	x := persist(rs.StandardNormal(Shape(20000, 20000), Chunks(5000, 5000), WithDType(Float32)))
	b := persist(rs.StandardNormal(Shape(20000, 1000), Chunks(5000, 1000), WithDType(Float32)))
	time3("matmul, persisted float32 x (20000^2, chunks 5000^2) by persisted b (20000 x 1000, 4 row chunks)", func() *Array { return MatMul(x, b) })
	x.Release()
	b.Release()
	x64 := persist(rs.StandardNormal(Shape(20000, 20000), Chunks(5000, 5000)))
	time3("sort along axis 0 of a persisted float64 20000^2 (chunks 5000^2)", func() *Array { return Sort(x64, 0) })
	x64.Release()
	m0 := rs.StandardNormal(Shape(8000, 8000), Chunks(8000, 8000))
	m := persist(m0.Add(Eye(8000, 8000, 0, Chunks(8000, 8000)).Mul(200)))
	rhs := persist(rs.StandardNormal(Shape(8000, 1000), Chunks(2000, 1000)))
	time3("solve, persisted 8000^2 for persisted right-hand sides (8000 x 1000, 4 row chunks)", func() *Array { return Solve(m, rhs) })
	m.Release()
	rhs.Release()
}
