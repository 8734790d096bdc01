package gpuarray

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestGPUOpsProfile (GPUNOTES_GPU_PROFILE=1, on the GPU machine) takes the slow rows of
// `bench ops` apart, to see where their time goes: is `x + x.T` slow for the transposed
// index or for the second normal it generates, and does a persisted transposed read cost
// what its strides predict? One JSON line per expression, best of 3 after a warm-up, at
// N = GPUNOTES_GPU_PROFILE_N (default 40000) in chunks of N/4.
func TestGPUOpsProfile(t *testing.T) {
	if os.Getenv("GPUNOTES_GPU_PROFILE") != "1" {
		t.Skip("set GPUNOTES_GPU_PROFILE=1 to profile on the GPU machine")
	}
	needGPU(t)
	n := 40000
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_GPU_PROFILE_N")); err == nil && v > 0 {
		n = v
	}
	c := n / 4
	gen := func(seed int64) *Array {
		return NewRandomState(seed).StandardNormal(Shape(n, n), Chunks(c, c))
	}
	// how computes an expression: a scalar (Float64), an array kept on the GPU (Compute) or
	// brought to the host (ToSlice).
	time3 := func(name, how string, build func() *Array) {
		best := math.Inf(1)
		var v float64
		for rep := 0; rep < 4; rep++ {
			t0 := time.Now()
			var err error
			switch how {
			case "scalar":
				v, err = build().Float64(OnGPU())
			case "kept":
				var c *Array
				if c, err = build().Compute(OnGPU()); err == nil && c.Where() != "gpu 0" {
					t.Fatalf("%s: where %q", name, c.Where())
				}
			case "host":
				_, err = build().ToSlice(OnGPU())
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if rep > 0 {
				best = min(best, time.Since(t0).Seconds())
			}
		}
		line, _ := json.Marshal(map[string]any{"profile": name, "how": how, "n": n, "chunk": c, "ms": best * 1e3, "value": v})
		t.Log(string(line))
	}
	run := func(name string, build func() *Array) { time3(name, "scalar", build) }
	run("sum(x)", func() *Array { return gen(42).Sum() })
	run("sum(x.T)", func() *Array { return gen(42).T().Sum() })
	run("sum(x + y), y independent", func() *Array { return gen(42).Add(gen(43)).Sum() })
	run("sum(x + x.T)", func() *Array { x := gen(42); return x.Add(x.T()).Sum() })
	run("sum(x * x + x)", func() *Array { x := gen(42); return x.Mul(x).Add(x).Sum() })
	run("sum(exp(x))", func() *Array { return gen(42).Exp().Sum() })
	run("sum(sin(x))", func() *Array { return gen(42).Sin().Sum() })
	run("sum(exp(x) + sin(x))", func() *Array { x := gen(42); return x.Exp().Add(x.Sin()).Sum() })
	run("sum(uniform)", func() *Array { return NewRandomState(42).Uniform(0, 1, Shape(n, n), Chunks(c, c)).Sum() })

	if os.Getenv("GPUNOTES_GPU_PROFILE_ONLY") == "regen" {
		return
	}
	p := gen(42).Persist(OnGPU())
	q := gen(43).Persist(OnGPU())
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	defer q.Release()
	run("persisted sum(p)", func() *Array { return p.Sum() })
	run("persisted sum(p.T)", func() *Array { return p.T().Sum() })
	run("persisted sum(p + q)", func() *Array { return p.Add(q).Sum() })
	run("persisted sum(p + p.T)", func() *Array { return p.Add(p.T()).Sum() })
	for _, how := range []string{"kept", "host"} {
		time3("mean(x, 0)", how, func() *Array { return gen(42).Mean(0) })
		time3("persisted mean(p, 0)", how, func() *Array { return p.Mean(0) })
		time3("persisted std(p, 1)", how, func() *Array { return p.Std(1) })
	}
}
