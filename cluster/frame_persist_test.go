package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestFramePersistPlacesPartitionsTogether persists a frame (a key with nulls, floats,
// strings with nulls) on three workers and checks that partition i of every column is held
// by one worker, partition i going to the i-th worker by name whatever their load (so a
// later step on a partition moves no data), and that the frame says once how many workers
// hold it.
func TestFramePersistPlacesPartitionsTogether(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3})
	const parts = 7
	names := []string{"k", "x", "s"}
	f := keyedFrame(7000, 97, parts)
	p := f.Persist(gpuarray.On(c))
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	var workers []string
	for _, w := range c.WorkerInfo() {
		workers = append(workers, w.Name)
	}
	slices.Sort(workers)
	var holders [][]string // per column, per partition
	for _, name := range names {
		a, err := p.Array(name)
		if err != nil {
			t.Fatal(err)
		}
		kept := gpuarray.KeptChunks(a, c.Client)
		if len(kept) != parts {
			t.Fatalf("column %s: %d chunks kept on the workers, want %d (held on %q)", name, len(kept), parts, a.Where())
		}
		hs := make([]string, parts)
		for i, kc := range kept {
			hs[i] = kc.Where()
		}
		holders = append(holders, hs)
	}
	held := map[string]bool{}
	for i := range parts {
		for j, name := range names {
			if holders[j][i] != holders[0][i] {
				t.Errorf("partition %d: column %s on %s, column %s on %s", i, name, holders[j][i], names[0], holders[0][i])
			}
		}
		if w := workers[i%len(workers)]; holders[0][i] != w {
			t.Errorf("partition %d on %s, want %s (the workers by name, in turn)", i, holders[0][i], w)
		}
		held[holders[0][i]] = true
	}
	if len(held) != len(workers) {
		t.Errorf("the partitions are held on %d of the %d workers: %v", len(held), len(workers), holders[0])
	}
	want := fmt.Sprintf("%d cluster workers", len(workers))
	if w := p.Where(); w != want {
		t.Errorf("Where %q, want %q", w, want)
	}
	if r := p.String(); !strings.Contains(r, "held on "+want) {
		t.Errorf("the frame's text does not say it is held on %s: %s", want, r)
	}
	// The groupby on the workers reads the partitions where they are and equals the local one.
	got, err := p.GroupBy("k").Sorted().Agg(dataframe.Sum("x"), dataframe.Size()).Compute(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Path(), "on the workers holding them") {
		t.Errorf("path %q: the groupby of the persisted frame did not run where it is held", got.Path())
	}
	wantG, err := f.GroupBy("k").Sorted().Agg(dataframe.Sum("x"), dataframe.Size()).Compute()
	if err != nil {
		t.Fatal(err)
	}
	sameFrame(t, "groupby of the persisted frame", got, wantG, 1e-9)
}

// TestWhereAllCountsWorkersOnce checks that the workers holding several persisted arrays
// are counted once over all of them, wherever the scheduler put them: an array of one chunk
// and one of four, and a frame's columns, whose text says one count ("held on 2 cluster
// workers", not one count per column).
func TestWhereAllCountsWorkersOnce(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	one := gpuarray.Arange(10).Persist(gpuarray.On(c))
	four := gpuarray.Arange(40, gpuarray.ChunkSizes([]int{10, 10, 10, 10})).Persist(gpuarray.On(c))
	if w, want := gpuarray.WhereAll(one, four), heldBy(t, c, one, four); w != want {
		t.Errorf("WhereAll %q, want %q (each: %q, %q)", w, want, one.Where(), four.Where())
	}
	if w := gpuarray.WhereAll(one, gpuarray.Arange(3).Persist()); w != "host, 1 cluster worker" {
		t.Errorf("WhereAll of a persisted array and a host one: %q", w)
	}
	p := keyedFrame(3000, 31, 5).Persist(gpuarray.On(c))
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	var cols []*gpuarray.Array
	for _, name := range p.Columns() {
		a, err := p.Array(name)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, a)
	}
	want := heldBy(t, c, cols...)
	if w := p.Where(); w != want {
		t.Errorf("the frame's Where %q, want %q", w, want)
	}
	if r := p.String(); !strings.Contains(r, "held on "+want) || strings.Contains(r, "held on "+want+",") {
		t.Errorf("the frame's text does not say it is held on %s: %s", want, r)
	}
}

// heldBy counts the workers holding the chunks of arrays persisted on c, as Where says it.
func heldBy(t *testing.T, c *cluster.LocalCUDA, arrays ...*gpuarray.Array) string {
	t.Helper()
	held := map[string]bool{}
	for _, a := range arrays {
		if err := a.Err(); err != nil {
			t.Fatal(err)
		}
		kept := gpuarray.KeptChunks(a, c.Client)
		if len(kept) == 0 {
			t.Fatalf("an array held on %q, not on the cluster", a.Where())
		}
		for _, k := range kept {
			held[k.Where()] = true
		}
	}
	if len(held) == 1 {
		return "1 cluster worker"
	}
	return fmt.Sprintf("%d cluster workers", len(held))
}
