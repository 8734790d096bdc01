package cluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// mergeResult is a merge's columns read back, in order.
type mergeResult struct {
	lens  []int
	k     []int64
	x, y  []float64
	valid []bool
	path  string
}

func readMerge(c *cluster.LocalCUDA, m *dataframe.Frame) (*mergeResult, error) {
	on := gpuarray.On(c)
	r := &mergeResult{path: m.Path()}
	var err error
	if r.k, err = m.Int64s("k", on); err != nil {
		return nil, err
	}
	if r.x, err = m.Float64s("x", on); err != nil {
		return nil, err
	}
	if r.y, err = m.Float64s("y", on); err != nil {
		return nil, err
	}
	if r.valid, err = m.Valid("y", on); err != nil {
		return nil, err
	}
	a, err := m.Array("k")
	if err != nil {
		return nil, err
	}
	r.lens = a.Chunks()[0]
	return r, nil
}

func sameMerge(a, b *mergeResult) bool {
	return slices.Equal(a.lens, b.lens) && slices.Equal(a.k, b.k) && bitEqual(a.x, b.x) && bitEqual(a.y, b.y) && slices.Equal(a.valid, b.valid)
}

// TestMergeSurvivesKilledWorker left-joins two frames persisted on four workers (computed
// there from the graph) through the worker shuffle, then again while a worker is killed with
// SIGKILL: the second merge equals the first, partition by partition and row by row, and both
// have the rows of the merge in this process.
func TestMergeSurvivesKilledWorker(t *testing.T) {
	dir := t.TempDir()
	c := newCluster(t, cluster.Options{NWorkers: 4, LocalDirectory: dir, MemoryLimit: "96MiB"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	on := gpuarray.On(c)
	lc := shuffleInput(t, c, 400_000, 8)
	rs := gpuarray.NewRandomState(11)
	rk := rs.Integers(0, 100_000, gpuarray.Shape(150_000), gpuarray.Chunks(30_000)).Persist(on)
	ry := rs.Normal(0, 1, gpuarray.Shape(150_000), gpuarray.Chunks(30_000)).Persist(on)
	left := dataframe.FromArrays([]string{"k", "x"}, lc[0], lc[1])
	right := dataframe.FromArrays([]string{"k", "y"}, rk, ry)
	merge := func() (*dataframe.Frame, error) {
		return dataframe.Merge(left, right, dataframe.On("k"), dataframe.How("left"), dataframe.BroadcastRows(0)).Compute(on, gpuarray.WithContext(ctx))
	}
	m, err := merge()
	if err != nil {
		t.Fatal(err)
	}
	want, err := readMerge(c, m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.path, "moved worker to worker") {
		t.Fatalf("path %q: not shuffled on the workers", want.path)
	}
	host, err := dataframe.Merge(left, right, dataframe.On("k"), dataframe.How("left"), dataframe.BroadcastRows(0)).Compute()
	if err != nil {
		t.Fatal(err)
	}
	hk, err := host.Int64s("k")
	if err != nil {
		t.Fatal(err)
	}
	gk := slices.Clone(want.k)
	slices.Sort(hk)
	slices.Sort(gk)
	if !slices.Equal(hk, gk) {
		t.Fatalf("the cluster's merge has %d rows, the one in this process %d, or other keys", len(gk), len(hk))
	}
	got, err := killDuring(t, ctx, c, "cpu2", func(returned func()) (*mergeResult, error) {
		m, err := merge()
		returned()
		if err != nil {
			return nil, err
		}
		return readMerge(c, m)
	})
	if err != nil {
		t.Fatalf("merge with a worker killed: %v", err)
	}
	if !sameMerge(got, want) {
		t.Fatal("the merge with a worker killed differs from the one without")
	}
	for _, a := range append(lc, rk, ry) {
		a.Release()
	}
}

// TestSortSurvivesKilledWorker sorts a frame persisted on four workers by a key with ties
// (stable, descending), then again while a worker is killed with SIGKILL: the second sort
// equals the first, partition by partition and row by row, and both are sorted.
func TestSortSurvivesKilledWorker(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 4, LocalDirectory: t.TempDir(), MemoryLimit: "96MiB"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	on := gpuarray.On(c)
	cols := shuffleInput(t, c, 400_000, 8)
	f := dataframe.FromArrays([]string{"k", "x"}, cols[0], cols[1])
	sortRead := func(returned func()) (*mergeResult, error) {
		g, err := f.SortValues([]string{"k"}, dataframe.Ascending(false)).Compute(on, gpuarray.WithContext(ctx))
		returned()
		if err != nil {
			return nil, err
		}
		r := &mergeResult{path: g.Path()}
		if r.k, err = g.Int64s("k", on); err != nil {
			return nil, err
		}
		if r.x, err = g.Float64s("x", on); err != nil {
			return nil, err
		}
		a, err := g.Array("k")
		if err != nil {
			return nil, err
		}
		r.lens = a.Chunks()[0]
		return r, nil
	}
	want, err := sortRead(func() {})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.path, "sorted on the cluster's workers") || len(want.lens) < 2 {
		t.Fatalf("path %q, %d partitions: not sorted on the workers", want.path, len(want.lens))
	}
	if !slices.IsSortedFunc(want.k, func(a, b int64) int { return int(b - a) }) || len(want.k) != 400_000 {
		t.Fatalf("%d rows, not in descending order", len(want.k))
	}
	got, err := killDuring(t, ctx, c, "cpu2", sortRead)
	if err != nil {
		t.Fatalf("sort with a worker killed: %v", err)
	}
	if !slices.Equal(got.lens, want.lens) || !slices.Equal(got.k, want.k) || !bitEqual(got.x, want.x) {
		t.Fatal("the sort with a worker killed differs from the one without")
	}
	for _, a := range cols {
		a.Release()
	}
}
