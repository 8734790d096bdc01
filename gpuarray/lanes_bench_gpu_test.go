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

// TestGPULaneBench (GPUNOTES_GPU_LANES=1, on the GPU machine) times the rows of
// bench/RESULTS.md for integer reductions and scans, against bench/cupy_scan.py: an int64 sum
// of 1e9 uniform integers in [-1000, 1000), generated in the fused kernel and read from a
// persisted GPU array; a cumulative sum of 1e8 float64 normals (and of int64 integers),
// brought to the host. One JSON line each, best of 3 after a warm-up.
func TestGPULaneBench(t *testing.T) {
	if os.Getenv("GPUNOTES_GPU_LANES") != "1" {
		t.Skip("set GPUNOTES_GPU_LANES=1 to time the integer reductions and scans on the GPU machine")
	}
	needGPU(t)
	time3 := func(op, variant string, n int, f func() (string, error)) {
		best := math.Inf(1)
		var v string
		for rep := 0; rep < 4; rep++ {
			t0 := time.Now()
			var err error
			if v, err = f(); err != nil {
				t.Fatalf("%s %s: %v", op, variant, err)
			}
			if rep > 0 {
				best = min(best, time.Since(t0).Seconds())
			}
		}
		line, _ := json.Marshal(map[string]any{"op": op, "variant": variant, "n": n, "seconds": best, "value": v})
		fmt.Println(string(line))
	}
	const nsum, chunk = 1_000_000_000, 100_000_000
	x := NewRandomState(1).Integers(-1000, 1000, Shape(nsum), Chunks(chunk), WithDType(Int64))
	sum := func(a *Array) func() (string, error) {
		return func() (string, error) {
			c, err := a.Sum().Compute(OnGPU())
			if err != nil {
				return "", err
			}
			if p := c.Path(); strings.Contains(p, "host fallback") {
				return "", fmt.Errorf("host step: %s", p)
			}
			v, err := c.ToSliceInt64()
			return fmt.Sprint(v), err
		}
	}
	time3("int64 sum", "fused (generated)", nsum, sum(x))
	xp := x.Persist(OnGPU())
	if err := xp.Err(); err != nil {
		t.Fatal(err)
	}
	time3("int64 sum", "persisted on the GPU", nsum, sum(xp))
	xp.Release()

	const ncum, cchunk = 100_000_000, 10_000_000
	cum := func(a *Array) func() (string, error) {
		return func() (string, error) {
			c, err := CumulativeSum(a, 0, false).Compute(OnGPU())
			if err != nil {
				return "", err
			}
			if p := c.Path(); strings.Contains(p, "host fallback") {
				return "", fmt.Errorf("host step: %s", p)
			}
			v, err := c.ToSlice()
			if err != nil {
				return "", err
			}
			return fmt.Sprint(v[len(v)-1]), nil
		}
	}
	y := NewRandomState(2).StandardNormal(Shape(ncum), Chunks(cchunk))
	time3("float64 cumsum", "fused (generated), result on the host", ncum, cum(y))
	yp := y.Persist(OnGPU())
	time3("float64 cumsum", "persisted on the GPU, result on the host", ncum, cum(yp))
	yp.Release()
	z := NewRandomState(3).Integers(-1000, 1000, Shape(ncum), Chunks(cchunk), WithDType(Int64))
	time3("int64 cumsum", "fused (generated), result on the host", ncum, cum(z))

	// What of the unique functions and an integer median still runs on the host (Path).
	u := NewRandomState(4).Integers(0, 1000, Shape(1_000_000), Chunks(250_000), WithDType(Int32))
	vals, idx, inv, counts := UniqueAll(u)
	for name, a := range map[string]*Array{"unique values": vals, "unique indices": idx, "unique inverse": inv, "unique counts": counts,
		"median int32": Median(u.Reshape(1000, 1000), 0), "cumsum int32": CumulativeSum(u, 0, false)} {
		c, err := a.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		line, _ := json.Marshal(map[string]any{"op": name, "path": c.Path()})
		fmt.Println(string(line))
	}
}
