package dataframe

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// needGPU skips without a GPU, except on the GPU machine (GPUNOTES_GPU_TESTS=1), where a
// missing GPU is a failure.
func needGPU(t *testing.T) {
	t.Helper()
	if err := gpuarray.GPUError(); err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
}

// TestGPUGroupByMatchesCPU runs GroupBy on a GPU (a frame persisted there, and one in host
// memory copied up) and compares it with the CPU's hash aggregation: keys, sizes, counts,
// integer sums, minima and maxima bit for bit; float columns within 1e-9 relative. The bound:
// the atomics add a group's n values in any order, within n·2^-52·Σ|x| of a sequential sum;
// vf is normal with mean 300 and σ 100, so Σ|x| ≈ |sum| and n ≤ 2^18 rows give at most 6e-11
// relative. Var and Std (from sum and sum of squares, hashagg.DensePlan.Partial) lose about
// n·2^-52·(mean²+σ²)/σ² relative to M2, at most 6e-10 here.
func TestGPUGroupByMatchesCPU(t *testing.T) {
	needGPU(t)
	host := groupFrame(1<<18+5, 6, 11)
	held := host.Persist(gpuarray.OnGPU())
	if err := held.Err(); err != nil {
		t.Fatal(err)
	}
	keySets := [][]string{{"kc"}, {"ki"}, {"kb"}, {"kt"}, {"kw"}, {"kc", "ki"}, {"ki", "kb", "kc"}, {"kw", "kc"}}
	for _, keys := range keySets {
		for fi, f := range []*Frame{held, host} {
			what := fmt.Sprintf("keys %v, frame %d", keys, fi)
			g := f.GroupBy(keys...).Sorted().Agg(allDenseAggs()...)
			want, err := g.Compute()
			if fi == 1 { // the host frame: the CPU's hash aggregation
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			} else {
				want, err = host.GroupBy(keys...).Sorted().Agg(allDenseAggs()...).Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			got, err := g.Compute(gpuarray.OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			p := got.Path()
			if !strings.Contains(p, "dense-code aggregation on the GPU") || strings.Contains(p, "aggregation on the host") {
				t.Fatalf("%s: Path %q", what, p)
			}
			if fi == 1 && !strings.Contains(p, "copied from the host first") {
				t.Fatalf("%s: Path %q does not say the host chunks were copied", what, p)
			}
			sameFrames(t, what, got, want, 1e-9)
		}
	}
	// A frame held on GPU 0, computed with no options: the work goes where the chunks are.
	got, err := held.GroupBy("kc", "ki").Sorted().Agg(allDenseAggs()...).Compute()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Path(), "dense-code aggregation on the GPU") {
		t.Fatalf("held frame, no options: Path %q", got.Path())
	}
	want, err := host.GroupBy("kc", "ki").Sorted().Agg(allDenseAggs()...).Compute()
	if err != nil {
		t.Fatal(err)
	}
	sameFrames(t, "held frame, no options", got, want, 1e-9)

	// Corr from device sums, the n largest from rows sorted on the device, and keys numbered
	// by sorting (codes past 2^24: the rows gathered on the device) equal the host's.
	big := Col("vi").Div(100).AsType(Int64)
	for _, c := range []struct {
		name, path string
		g, h       *Frame
		tol        float64
	}{
		{"corr", "corr from per-group sums", held.GroupBy("kc").Sorted().Agg(Corr("vf", "vi")), host.GroupBy("kc").Sorted().Agg(Corr("vf", "vi")), 1e-9},
		{"nlargest", "sorted by (code, value) on the GPU", held.GroupBy("kc", "kb").Sorted().NLargest(2, "vf"), host.GroupBy("kc", "kb").Sorted().NLargest(2, "vf"), 0},
		{"nsmallest", "sorted by (code, value) on the GPU", held.GroupBy("ki").Sorted().NSmallest(3, "vi"), host.GroupBy("ki").Sorted().NSmallest(3, "vi"), 0},
		{"sorted keys", "gathers on the device from held rows", held.Assign("big", big).GroupBy("big", "kc").Sorted().Agg(Sum("vi"), Size(), Median("vf")),
			host.Assign("big", big).GroupBy("big", "kc").Sorted().Agg(Sum("vi"), Size(), Median("vf")), 0},
	} {
		got, err := c.g.Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.Contains(got.Path(), c.path) || strings.Contains(got.Path(), "aggregation on the host") || strings.Contains(got.Path(), "per group on the host") {
			t.Fatalf("%s: Path %q", c.name, got.Path())
		}
		want, err := c.h.Compute()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sameFrames(t, c.name, got, want, c.tol)
	}
	// A filter before the groupby, SplitOut after.
	fl := held.Filter(Col("vf").Gt(0)).GroupBy("kw", "kb").SplitOut(2).Agg(Sum("vi"), Min("vf"), Size())
	gs, err := fl.Compute(gpuarray.OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := host.Filter(Col("vf").Gt(0)).GroupBy("kw", "kb").SplitOut(2).Agg(Sum("vi"), Min("vf"), Size()).Compute()
	if err != nil {
		t.Fatal(err)
	}
	sortBy := func(f *Frame) *Frame {
		s, err := f.SortValues([]string{"kw", "kb"}).Compute()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if !strings.Contains(gs.Path(), "dense-code") {
		t.Fatalf("filter, split out: Path %q", gs.Path())
	}
	sameFrames(t, "filter, split out", sortBy(gs), sortBy(cs), 1e-9)
}

// TestGPUGroupByResultOnDevice checks a GPU groupby whose result stays on the device (the
// tables kept there, groups selected and keys decoded by device kernels): its columns are held
// on the GPU, and they equal the same kernels' tables finished on the host, row for row
// (integers and nulls bit for bit, floats within the atomics' 1e-9 of TestGPUGroupByMatchesCPU:
// two runs add in different orders), for dense codes and for groups numbered by sorting; an
// expression of the result (db-benchmark's q7) too.
func TestGPUGroupByResultOnDevice(t *testing.T) {
	needGPU(t)
	defer func() { deviceResults = true }()
	host := groupFrame(1<<18+5, 6, 12).Assign("big", Col("vi").Div(100).AsType(Int64))
	held := host.Persist(gpuarray.OnGPU())
	if err := held.Err(); err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{{"kc"}, {"ki"}, {"kw", "kc"}, {"kt", "kb"}, {"big", "kc"}} {
		what := fmt.Sprintf("keys %v", keys)
		got, err := held.GroupBy(keys...).Agg(deviceResultAggs()...).Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !strings.Contains(got.Path(), "the result kept on the GPU") {
			t.Fatalf("%s: Path %q", what, got.Path())
		}
		for _, c := range got.done.cols {
			if w := c.arr.Where(); !strings.HasPrefix(w, "gpu ") {
				t.Fatalf("%s: column %q held on %q", what, c.name, w)
			}
		}
		// The same kernels' tables finished on the host (TestGPUGroupByMatchesCPU checks
		// that result against the CPU's): the same rows in the same order.
		deviceResults = false
		want, err := held.GroupBy(keys...).Agg(deviceResultAggs()...).Compute(gpuarray.OnGPU())
		deviceResults = true
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sameFrames(t, what, got, want, 1e-9)
		q := func(x *Frame) *Frame {
			return x.Assign("r", Col("vi_max").Sub(Col("vi_min"))).Select(append(slices.Clone(keys), "r")...)
		}
		r, err := q(got).Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		rw, err := q(want).Compute()
		if err != nil {
			t.Fatal(err)
		}
		sameFrames(t, what+", max - min", r, rw, 0)
	}
	// The n largest and smallest of a float column, picked on the device: equal to the same
	// picks finished on the host (rows in the same order: groups by code, largest first).
	for _, g := range []*Frame{held.GroupBy("kc", "kb").NLargest(2, "vf"), held.GroupBy("kw").NSmallest(3, "vf")} {
		deviceResults = true
		got, err := g.Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got.Path(), "top of each group from rows sorted by (code, value) on the GPU") {
			t.Fatalf("top: Path %q", got.Path())
		}
		deviceResults = false
		want, err := g.Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		sameFrames(t, "top", got, want, 0)
	}
}
