package cluster_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

var _ gpuarray.Scheduler = (*cluster.Client)(nil)

func TestArrayComputeOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	build := func() *gpuarray.Array {
		rs := gpuarray.NewRandomState(42)
		x := rs.Normal(10, 1, gpuarray.Shape(1200, 1000), gpuarray.Chunks(250, 300))
		return x.Add(1).Slice(gpuarray.Every(2), gpuarray.Every(2)).Sum()
	}
	local, err := build().Float64(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64
	remote, err := build().Float64(gpuarray.On(c), gpuarray.WithProgress(func(done, total int) { seen.Store(int64(done)) }))
	if err != nil {
		t.Fatal(err)
	}
	if remote != local {
		t.Fatalf("cluster sum %v != local sum %v", remote, local)
	}
	if seen.Load() == 0 {
		t.Fatal("no progress reported")
	}
	var done int64
	for _, w := range c.WorkerInfo() {
		done += int64(w.InMemory)
	}
	if done != 0 {
		t.Fatalf("%d chunk results left on workers after Compute", done)
	}
	t.Logf("sum %v over %d workers", remote, len(c.WorkerInfo()))
}

// TestFFTOnClusterEqualsLocal: library-call stages (Fourier transforms) run on the workers and
// give the bits the inline run gives (the same CPU code on the same chunks).
func TestFFTOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	build := func() *gpuarray.Array {
		rs := gpuarray.NewRandomState(7)
		x := rs.Normal(0, 1, gpuarray.Shape(64, 300), gpuarray.Chunks(16, 100))
		return gpuarray.IRFFT(gpuarray.RFFT(x.Mul(2), gpuarray.FFTAxis(1)), gpuarray.FFTLen(300))
	}
	local, err := build().ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := build().ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	x, err := gpuarray.NewRandomState(7).Normal(0, 1, gpuarray.Shape(64, 300)).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	if len(local) != len(x) || len(remote) != len(x) {
		t.Fatalf("lengths %d and %d, want %d", len(local), len(remote), len(x))
	}
	for i := range local {
		if local[i] != remote[i] {
			t.Fatalf("element %d: cluster %v, inline %v", i, remote[i], local[i])
		}
		if d := local[i] - 2*x[i]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("element %d: irfft(rfft(2x)) is %v, 2x is %v", i, local[i], 2*x[i])
		}
	}
}

// TestSortOnClusterEqualsLocal: sorts (library calls in the values' own dtype) run on the
// workers and give what the inline run gives, sorted along the axis.
func TestSortOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	build := func() *gpuarray.Array {
		rs := gpuarray.NewRandomState(9)
		x := rs.Normal(0, 1, gpuarray.Shape(40, 300), gpuarray.Chunks(10, 70))
		return gpuarray.Argsort(x.Mul(1000).AsType(gpuarray.Int64), 1, gpuarray.Descending())
	}
	local, err := build().ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := build().ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	x, err := gpuarray.NewRandomState(9).Normal(0, 1, gpuarray.Shape(40, 300)).Mul(1000).AsType(gpuarray.Int64).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	if len(local) != len(x) || len(remote) != len(x) {
		t.Fatalf("lengths %d and %d, want %d", len(local), len(remote), len(x))
	}
	for i := range local {
		if local[i] != remote[i] {
			t.Fatalf("element %d: cluster %v, inline %v", i, remote[i], local[i])
		}
		if j := i % 300; j > 0 {
			row := i - j
			prev, cur := x[row+int(local[i-1])], x[row+int(local[i])]
			if prev < cur || prev == cur && local[i-1] > local[i] {
				t.Fatalf("row %d: index %v (value %v) after %v (value %v): not a stable descending order", i/300, local[i], cur, local[i-1], prev)
			}
		}
	}
}

// TestSearchsortedOnClusterEqualsLocal: searches (the values fused into the search's kernel,
// the sorted array sent whole with each task, or read from the chunk a worker keeps when it is
// persisted there) run on the workers and give the inline run's positions, float64 with NaNs
// and int64 past 2^53 (compared exactly), both sides.
func TestSearchsortedOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	rs := gpuarray.NewRandomState(4)
	raw := rs.Normal(0, 1, gpuarray.Shape(500), gpuarray.Chunks(200))
	floats := gpuarray.Sort(gpuarray.Where(raw.Gt(2), raw.Div(0), raw.Round()), 0) // 0/0: NaN
	ints := gpuarray.Sort(rs.Integers(-1<<60, 1<<60, gpuarray.Shape(300), gpuarray.WithDType(gpuarray.Int64)), 0)
	fv := rs.Normal(0, 1.5, gpuarray.Shape(40, 300), gpuarray.Chunks(10, 70)).Round()
	iv := rs.Integers(-1<<60, 1<<60, gpuarray.Shape(40, 30), gpuarray.Chunks(15, 30), gpuarray.WithDType(gpuarray.Int64))
	kept := ints.Persist(gpuarray.On(c))
	if err := kept.Err(); err != nil {
		t.Fatal(err)
	}
	for _, cs := range []struct {
		what           string
		sorted, values *gpuarray.Array
	}{{"float64", floats, fv}, {"int64", ints, iv}, {"int64 kept on a worker", kept, iv.Add(ints.Slice(gpuarray.At(7)))}} {
		for _, side := range []string{"left", "right"} {
			s := gpuarray.Searchsorted(cs.sorted, cs.values, side)
			local, err := s.ToSlice(gpuarray.Inline())
			if err != nil {
				t.Fatal(err)
			}
			remote, err := s.ToSlice(gpuarray.On(c))
			if err != nil {
				t.Fatalf("%s %s: %v", cs.what, side, err)
			}
			if fmt.Sprint(local) != fmt.Sprint(remote) {
				t.Errorf("%s %s: cluster %v, inline %v", cs.what, side, remote[:8], local[:8])
			}
		}
	}
}

// TestHistogramOnClusterEqualsLocal: per-chunk bincounts (library calls with weights read
// through a join) run on the workers and give what the inline run gives.
func TestHistogramOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	build := func() (*gpuarray.Array, *gpuarray.Array) {
		rs := gpuarray.NewRandomState(5)
		x := rs.Normal(0, 1, gpuarray.Shape(20000), gpuarray.Chunks(3000))
		w := rs.Uniform(0, 1, gpuarray.Shape(20000), gpuarray.Chunks(7000))
		h, _ := gpuarray.Histogram(x, 20, -2, 2, nil)
		hw, _ := gpuarray.Histogram(x, 20, -2, 2, w)
		return h, hw
	}
	for k := 0; k < 2; k++ {
		lh, lw := build()
		rh, rw := build()
		want, err := []*gpuarray.Array{lh, lw}[k].ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatal(err)
		}
		got, err := []*gpuarray.Array{rh, rw}[k].ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("histogram %d, bin %d: cluster %v, inline %v", k, i, got[i], want[i])
			}
			total += want[i]
		}
		if lo, hi := []float64{15000, 7000}[k], []float64{20000, 10000}[k]; total < lo || total > hi {
			t.Errorf("histogram %d holds %v in [-2, 2] of 20000 normals (weights uniform in [0, 1) for 1)", k, total)
		}
	}
}

// TestSolveOnClusterEqualsLocal: the matrix functions and the lazy product run on the workers,
// a solve's right-hand sides and a product's b (further operands of the call, shipped in its
// tasks) included, and give the inline run's bits.
func TestSolveOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	build := func() []*gpuarray.Array {
		rs := gpuarray.NewRandomState(11)
		a := rs.Normal(0, 1, gpuarray.Shape(120, 120), gpuarray.Chunks(40, 60)).Add(gpuarray.Eye(120, 120, 0).Mul(20))
		b := rs.Normal(0, 1, gpuarray.Shape(120, 3), gpuarray.Chunks(50, 3))
		s := rs.Normal(0, 1, gpuarray.Shape(4, 5, 5)).Add(gpuarray.Eye(5, 5, 0).Mul(10))
		return []*gpuarray.Array{gpuarray.Solve(a, b), gpuarray.Solve(a, b.Sum(1)), gpuarray.Inv(s), gpuarray.Lstsq(a.Slice(gpuarray.All(), gpuarray.Span(0, 50)), b), gpuarray.MatMul(a.Mul(2), b).Add(1)}
	}
	locals, remotes := build(), build()
	for i := range locals {
		local, err := locals[i].ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatal(err)
		}
		remote, err := remotes[i].ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatal(err)
		}
		if len(local) != len(remote) || len(local) == 0 {
			t.Fatalf("case %d: lengths %d (inline) and %d (cluster)", i, len(local), len(remote))
		}
		for j := range local {
			if local[j] != remote[j] {
				t.Fatalf("case %d element %d: cluster %v, inline %v", i, j, remote[j], local[j])
			}
		}
	}
	// The workers say which library solved (OpenBLAS's LAPACK or gonum), for Path.
	x, err := remotes[0].Compute(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if p := x.Path(); !strings.HasPrefix(p, "solve on the CPU with ") || !strings.HasSuffix(p, "(LAPACK)") && !strings.HasSuffix(p, "gonum") {
		t.Errorf("Path of a solve on the cluster: %q, want the library the workers used", p)
	}
}

// TestMatMulPanelsOnCluster: a product's tasks go to the workers with one row chunk of a and
// one column chunk of b each, so a product whose b is larger than the memory limit of a task
// runs there, with the inline run's bits; b in one column chunk is refused with the limit.
func TestMatMulPanelsOnCluster(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	rs := gpuarray.NewRandomState(12)
	x := rs.Normal(0, 1, gpuarray.Shape(240, 200), gpuarray.Chunks(60, 200))
	y := rs.Normal(0, 1, gpuarray.Shape(200, 900), gpuarray.Chunks(50, 150)).Mul(2)
	// A task: 60 x 200 of x, 200 x 150 of y and 60 x 150 of C, 408,000 bytes; y is 1,440,000.
	const limit = 1 << 19
	p := gpuarray.MatMul(x, y).Sub(1).Sum(0)
	local, err := p.ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := p.ToSlice(gpuarray.On(c), gpuarray.MemoryLimit(limit))
	if err != nil {
		t.Fatalf("a product whose b (1.44 MB) exceeds the task limit (512 KiB) on the cluster: %v", err)
	}
	if len(remote) != 900 || len(local) != 900 {
		t.Fatalf("lengths %d (inline) and %d (cluster), want 900", len(local), len(remote))
	}
	for j := range local {
		if local[j] != remote[j] {
			t.Fatalf("element %d: cluster %v, inline %v", j, remote[j], local[j])
		}
	}
	whole := gpuarray.MatMul(x, y.Rechunk(50, 900)).Sum(0)
	if _, err := whole.ToSlice(gpuarray.On(c), gpuarray.MemoryLimit(limit)); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("b in one column chunk under the limit: %v, want the limit's error", err)
	}
}

// TestQuantileOnClusterEqualsLocal: quantiles and TopK sort keeping only the positions they
// read (expr.Call.Keep, sent to the workers with the call); the cluster gives the inline result.
func TestQuantileOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	x := gpuarray.NewRandomState(4).Normal(0, 1, gpuarray.Shape(60, 50), gpuarray.Chunks(20, 15))
	for _, a := range []*gpuarray.Array{gpuarray.Median(x, 0), gpuarray.Quantile(x, 0.3, 1), gpuarray.TopK(x, 3, 0), gpuarray.ArgTopK(x, -4, 1)} {
		local, err := a.ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatal(err)
		}
		remote, err := a.ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatal(err)
		}
		if len(local) != len(remote) || len(local) == 0 {
			t.Fatalf("lengths %d and %d", len(local), len(remote))
		}
		for i := range local {
			if local[i] != remote[i] {
				t.Fatalf("element %d: cluster %v, inline %v", i, remote[i], local[i])
			}
		}
	}
}
