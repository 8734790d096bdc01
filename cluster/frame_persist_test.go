package cluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

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
