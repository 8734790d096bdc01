package gpuarray

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGPUSearchsortedOnTheDevice: searches into sorted arrays held on the GPU (a Sort result
// kept there: float64 with NaNs at the end, int64 beyond 2^53, uint64 past 2^63, bools) for
// values that are a fused
// expression run in the fused kernel, read the sorted array in place, leave their int64
// result on the device, name no host step, and equal the CPU's positions bit for bit, both
// sides; so do searches into a sorted array computed in the same graph, and integer sorts of
// computed integers (read on the device in their own dtype).
func TestGPUSearchsortedOnTheDevice(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(21)
	// NaNs in the sorted array: where the draw is above 2.5.
	raw := rs.Normal(0, 1, Shape(200_000), Chunks(70_000))
	withNaN := Where(raw.Gt(2.5), Full(math.NaN(), Shape(200_000)), raw.Round())
	ints := rs.Integers(-1<<60, 1<<60, Shape(50_000), Chunks(20_000), WithDType(Int64))
	for _, c := range []struct {
		what   string
		sorted *Array
		values *Array
	}{
		{"float64 with ties and NaNs", Sort(withNaN, 0), rs.Normal(0, 1.5, Shape(300, 1000), Chunks(100, 400)).Mul(2).Round().Div(2)},
		{"int64 beyond 2^53", Sort(ints, 0), rs.Integers(-1<<60, 1<<60, Shape(700, 300), Chunks(256, 300), WithDType(Int64)).Sub(ints.Slice(At(5)))},
		// Compared exactly as uint64 (values past 2^63: the sorted ints wrapped), and int64
		// values into bools.
		{"uint64 past 2^63", Sort(ints.AsType(Uint64), 0), ints.Slice(SpanStep(0, 20000, 7)).AsType(Uint64).Add(FromSliceInt64([]int64{1}).AsType(Uint64))},
		{"int64 into bools", Sort(ints.Gt(0), 0), rs.Integers(-1, 3, Shape(500, 40), Chunks(200, 40), WithDType(Int64))},
	} {
		held, err := c.sorted.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if !strings.Contains(held.Path(), "result kept on gpu") {
			t.Fatalf("%s: the sorted array is not held on the GPU: %s", c.what, held.Path())
		}
		host, err := held.Compute(Inline())
		if err != nil {
			t.Fatal(err)
		}
		for _, side := range []string{"left", "right"} {
			what := fmt.Sprintf("%s, %s", c.what, side)
			want, err := Searchsorted(host, c.values, side).Compute(Inline())
			if err != nil {
				t.Fatalf("%s on the CPU: %v", what, err)
			}
			for _, variant := range []struct {
				name string
				x1   *Array
			}{{"held", held}, {"computed in the graph", c.sorted}} {
				got, err := Searchsorted(variant.x1, c.values, side).Compute(OnGPU())
				if err != nil {
					t.Fatalf("%s (%s) on the GPU: %v", what, variant.name, err)
				}
				if p := got.Path(); strings.Contains(p, "host") || !strings.Contains(p, "result kept on gpu") {
					t.Errorf("%s (%s): Path %q", what, variant.name, p)
				}
				gv, err := got.n.Values()
				if err != nil {
					t.Fatal(err)
				}
				wv, err := want.n.Values()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gv.Bytes(), wv.Bytes()) {
					t.Errorf("%s (%s): the GPU's positions differ from the CPU's", what, variant.name)
				}
			}
		}
	}
}

// TestGPUSearchBench times, with GPUNOTES_SEARCH_BENCH=1, Searchsorted of N float64 normals
// (GPUNOTES_SEARCH_N, default 1e8, chunks of 1e7) into a sorted array of M normals held on the
// GPU (GPUNOTES_SEARCH_M, default 1e6), the values generated in the search's kernel (regen) and
// held on the GPU (resident), the positions left on the device; and the sort of N int64 values
// drawn on the device, brought to the host. Peers: bench/cupy_search.py. Best of 3 after a
// warm-up; one JSON line per row.
func TestGPUSearchBench(t *testing.T) {
	if os.Getenv("GPUNOTES_SEARCH_BENCH") != "1" {
		t.Skip("GPUNOTES_SEARCH_BENCH=1 runs it")
	}
	needGPU(t)
	env := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
			return v
		}
		return def
	}
	n, m := env("GPUNOTES_SEARCH_N", 100_000_000), env("GPUNOTES_SEARCH_M", 1_000_000)
	x1, err := Sort(NewRandomState(1).Normal(0, 1, Shape(m)), 0).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	values := func() *Array { return NewRandomState(2).Normal(0, 1, Shape(n), Chunks(10_000_000)) }
	resident, err := values().Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		op, peer string
		make     func() *Array
		toHost   bool
	}{
		{"searchsorted", "gpunotes-regen", func() *Array { return Searchsorted(x1, values(), "left") }, false},
		{"searchsorted", "gpunotes-resident", func() *Array { return Searchsorted(x1, resident, "left") }, false},
		{"sort int64", "gpunotes-regen", func() *Array {
			return Sort(NewRandomState(3).Integers(-1<<40, 1<<40, Shape(n), Chunks(10_000_000), WithDType(Int64)), 0)
		}, true},
	}
	for _, r := range rows {
		best := math.Inf(1)
		var path string
		var mid float64
		for i := 0; i < 4; i++ {
			t0 := time.Now()
			c, err := r.make().Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", r.op, err)
			}
			if r.toHost {
				if _, err := c.n.Values(); err != nil {
					t.Fatal(err)
				}
			}
			if s := time.Since(t0).Seconds(); i > 0 && s < best {
				best = s
			}
			path = c.Path()
			if i == 3 {
				v, err := c.Slice(At(n / 2)).Float64()
				if err != nil {
					t.Fatal(err)
				}
				mid = v
			}
		}
		b, _ := json.Marshal(map[string]any{"peer": r.peer, "op": r.op, "n": n, "m": m, "seconds": best, "value": mid, "path": path})
		fmt.Println(string(b))
	}
}
