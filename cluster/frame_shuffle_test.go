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

// TestFrameShuffleOnCluster shuffles a frame with null keys and a string column on three
// workers, on an integer key, a string key (hashed in this process) and both, and checks it
// equals the shuffle in this process, partition by partition, with its columns left on the
// workers.
func TestFrameShuffleOnCluster(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3})
	f := keyedFrame(5000, 613, 7)
	for _, on := range [][]string{{"k"}, {"s"}, {"s", "k"}} {
		t.Run(strings.Join(on, ","), func(t *testing.T) {
			checkFrameShuffle(t, c, f, on, "hash partitioning on the CPU (no GPU on this worker)")
		})
	}
}

// checkFrameShuffle checks f shuffled on c equals the shuffle in this process and that Path
// says where the workers partitioned it (where).
func checkFrameShuffle(t *testing.T, c *cluster.LocalCUDA, f *dataframe.Frame, on []string, where string) {
	t.Helper()
	want, err := f.Shuffle(on, 6)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Shuffle(on, 6, gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Path(), "worker to worker") || !strings.Contains(got.Where(), "cluster worker") {
		t.Fatalf("path %q, where %q: not shuffled on the workers", got.Path(), got.Where())
	}
	if !strings.Contains(got.Path(), where) {
		t.Fatalf("path %q does not say %q", got.Path(), where)
	}
	if hashed := strings.Contains(got.Path(), "hashed on the host"); hashed != slices.Contains(on, "s") {
		t.Fatalf("path %q: the string key's hashing is not named", got.Path())
	}
	if got.NPartitions() != want.NPartitions() {
		t.Fatalf("%d partitions, want %d", got.NPartitions(), want.NPartitions())
	}
	ga, _ := got.Array("k")
	wa, _ := want.Array("k")
	if !slices.Equal(ga.Chunks()[0], wa.Chunks()[0]) {
		t.Fatalf("partition lengths %v, want %v", ga.Chunks()[0], wa.Chunks()[0])
	}
	for _, col := range []string{"k", "x", "s"} {
		var g, w any
		var e1, e2 error
		switch col {
		case "k":
			g, e1 = got.Int64s(col)
			w, e2 = want.Int64s(col)
		case "x":
			g, e1 = got.Float64s(col)
			w, e2 = want.Float64s(col)
		case "s":
			g, e1 = got.Strings(col)
			w, e2 = want.Strings(col)
		}
		if e1 != nil || e2 != nil {
			t.Fatal(e1, e2)
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("column %s differs from the shuffle in this process", col)
		}
	}
	gv, err := got.Valid("k")
	if err != nil {
		t.Fatal(err)
	}
	wv, _ := want.Valid("k")
	if !slices.Equal(gv, wv) {
		t.Fatal("the key's nulls differ from the shuffle in this process")
	}
}
