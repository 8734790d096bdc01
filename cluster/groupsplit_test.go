package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// splitFrame is a frame of many groups: about 16000 keys (one in 17 null) by 3 of d.
func splitFrame(rows, parts int) *dataframe.Frame {
	k := make([]int64, rows)
	kok := make([]bool, rows)
	d := make([]int64, rows)
	x := make([]float64, rows)
	n := make([]int64, rows)
	for i := range k {
		k[i], kok[i] = int64(i*7919%16001)-300, i%17 != 0
		d[i] = int64(i % 3)
		x[i] = float64(i%977)/13 - 20
		n[i] = int64(i*31%1009) - 500
	}
	return dataframe.FromSlices([]string{"k", "d", "x", "n"},
		[]any{dataframe.Nullable(k, kok), d, x, n}, dataframe.NPartitions(parts))
}

// partitionKeys returns, per partition of f, its "k/d" keys sorted.
func partitionKeys(t *testing.T, f *dataframe.Frame) [][]string {
	t.Helper()
	a, err := f.Array("k")
	if err != nil {
		t.Fatal(err)
	}
	k, err1 := f.Int64s("k")
	d, err2 := f.Int64s("d")
	ok, err3 := f.Valid("k")
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	var out [][]string
	at := 0
	for _, l := range a.Chunks()[0] {
		var keys []string
		for r := at; r < at+l; r++ {
			keys = append(keys, fmt.Sprintf("%v:%d/%d", ok[r], k[r], d[r]))
		}
		slices.Sort(keys)
		out = append(out, keys)
		at += l
	}
	return out
}

// TestGroupBySplitOutShufflesPartials groups a frame of many groups persisted on three CPU
// workers with SplitOut(4): the partials are split by key hash where the partitions are held
// and shuffled worker to worker, each output partition combined on its owner (Path says so,
// and not that every partial was combined in one place), and the result equals the inline
// SplitOut(4) groupby: the same groups in each of the four partitions, the same values.
func TestGroupBySplitOutShufflesPartials(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3})
	f := splitFrame(60000, 12)
	pf := f.Persist(gpuarray.On(c))
	if err := pf.Err(); err != nil {
		t.Fatal(err)
	}
	aggs := []dataframe.Agg{dataframe.Sum("x"), dataframe.Count("n"), dataframe.Mean("n"), dataframe.Min("x"), dataframe.Max("n"),
		dataframe.First("x"), dataframe.Last("n"), dataframe.Median("n"), dataframe.Size(), dataframe.NUnique("x"), dataframe.Var("x")}
	want, err := f.GroupBy("k", "d").SplitOut(4).Agg(aggs...).Compute()
	if err != nil {
		t.Fatal(err)
	}
	got, err := pf.GroupBy("k", "d").SplitOut(4).Agg(aggs...).Compute(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	p := got.Path()
	t.Logf("path: %s", p)
	if !strings.Contains(p, "split by key hash into 4 output partitions and sent worker to worker") || !strings.Contains(p, "combined on each output partition's owner") ||
		strings.Contains(p, "combined there as a tree") {
		t.Errorf("path %q: the partials were not shuffled between the workers", p)
	}
	if got.NPartitions() != 4 || want.NPartitions() != 4 {
		t.Fatalf("%d partitions on the workers, %d inline, want 4", got.NPartitions(), want.NPartitions())
	}
	gk, wk := partitionKeys(t, got), partitionKeys(t, want)
	if len(gk) != len(wk) {
		t.Fatalf("%d partitions of rows, want %d", len(gk), len(wk))
	}
	groups := 0
	for b := range wk {
		if !slices.Equal(gk[b], wk[b]) {
			t.Fatalf("partition %d: %d groups, want the inline partition's %d", b, len(gk[b]), len(wk[b]))
		}
		groups += len(wk[b])
	}
	if groups < 30000 {
		t.Fatalf("%d groups: the frame should have many", groups)
	}
	gs, err := got.SortValues([]string{"k", "d"}).Compute()
	if err != nil {
		t.Fatal(err)
	}
	ws, err := want.SortValues([]string{"k", "d"}).Compute()
	if err != nil {
		t.Fatal(err)
	}
	sameFrame(t, "split out", gs, ws, 1e-12)
	var sent int64
	for _, w := range c.WorkerInfo() {
		sent += w.ShuffleSent
	}
	if sent == 0 {
		t.Error("no worker sent shuffle bytes")
	}
}

// TestGroupBySplitOutSurvivesKilledWorker kills (SIGKILL) the worker holding the most of a
// persisted frame's partitions while a SplitOut(4) groupby runs on four workers (splits,
// pushes and combines in flight): the run starts again on the workers there are once the
// lost partitions are computed again, and the result equals the run without the kill, group
// for group in each partition, bit for bit (the pieces are combined in input order).
func TestGroupBySplitOutSurvivesKilledWorker(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	on := gpuarray.On(c)
	pf := splitFrame(400_000, 32).Persist(on)
	if err := pf.Err(); err != nil {
		t.Fatal(err)
	}
	aggs := []dataframe.Agg{dataframe.Sum("x"), dataframe.Mean("n"), dataframe.Size(), dataframe.First("x"), dataframe.Median("n")}
	group := func() (*dataframe.Frame, error) {
		return pf.GroupBy("k", "d").SplitOut(4).Agg(aggs...).Compute(on, gpuarray.WithContext(ctx))
	}
	before, err := group()
	if err != nil {
		t.Fatal(err)
	}
	var victim cluster.WorkerInfo
	for _, w := range c.WorkerInfo() {
		if w.InMemory > victim.InMemory {
			victim = w
		}
	}
	if victim.InMemory == 0 {
		t.Fatalf("no worker holds the persisted partitions: %+v", c.WorkerInfo())
	}
	got, err := killDuring(t, ctx, c, victim.Name, func(returned func()) (*dataframe.Frame, error) {
		g, err := group()
		returned()
		return g, err
	})
	if err != nil {
		t.Fatalf("split-out groupby with %s killed mid-run: %v", victim.Name, err)
	}
	gk, bk := partitionKeys(t, got), partitionKeys(t, before)
	for b := range bk {
		if b >= len(gk) || !slices.Equal(gk[b], bk[b]) {
			t.Fatalf("partition %d: not the groups of the run without the kill", b)
		}
	}
	gs, err1 := got.SortValues([]string{"k", "d"}).Compute()
	bs, err2 := before.SortValues([]string{"k", "d"}).Compute()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	sameFrame(t, "with a worker killed mid-run, against the run without", gs, bs, 0)
	t.Logf("%s killed mid-groupby (restarts %v); path: %s", victim.Name, c.Restarts(), got.Path())
}
