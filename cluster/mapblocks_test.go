package cluster_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

const blockSrc = `import "os"

func affine(blocks [][]float64, shape []int) []float64 {
	out := make([]float64, len(blocks[0]))
	for i := range out {
		out[i] = blocks[0][i]*blocks[1][i] - float64(shape[0])
	}
	return out
}

func whoRan(blocks [][]float64, shape []int) []float64 {
	out := make([]float64, len(blocks[0]))
	for i := range out {
		out[i] = float64(os.Getpid())
	}
	return out
}

func short(blocks [][]float64, shape []int) []float64 { return blocks[0][:1] }

func crash(blocks [][]float64, shape []int) []float64 {
	var m map[int]float64
	m[0] = 1
	return blocks[0]
}
`

// MapBlocks on the cluster runs the shipped function on the workers, one task per block, and
// gives what gpuarray.MapBlocks gives with the same function compiled in.
func TestClusterMapBlocks(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	fn := func(name string) cluster.Source { return cluster.Source{Code: blockSrc, Func: name} }
	rs := gpuarray.NewRandomState(3)
	x := rs.Normal(1, 2, gpuarray.Shape(30, 17), gpuarray.Chunks(7, 5))
	y := gpuarray.Arange(0, 17, 1, gpuarray.Chunks(5)) // broadcast along the rows
	got, err := c.MapBlocks(fn("affine"), x, y).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	want, err := gpuarray.MapBlocks(func(b [][]float64, shape []int) []float64 {
		out := make([]float64, len(b[0]))
		for i := range out {
			out[i] = b[0][i]*b[1][i] - float64(shape[0])
		}
		return out
	}, x, y).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatal("cluster MapBlocks differs from the in-process one")
	}
	// The blocks ran in the worker processes.
	pids, err := c.MapBlocks(fn("whoRan"), x).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	workers := map[float64]bool{}
	for _, p := range c.WorkerPIDs() {
		workers[float64(p)] = true
	}
	seen := map[float64]bool{}
	for _, p := range pids {
		if !workers[p] || p == float64(os.Getpid()) {
			t.Fatalf("a block ran in process %v, not a worker (%v)", p, c.WorkerPIDs())
		}
		seen[p] = true
	}
	t.Logf("%d blocks ran on %d workers", 5*4, len(seen))
	for _, c := range []struct {
		x    *gpuarray.Array
		want string
	}{
		{c.MapBlocks(fn("short"), x), "f returned 1 values, want 35"},
		{c.MapBlocks(fn("crash"), x), "block [0 0]"},
		{c.MapBlocks(fn("nosuch"), x), "nosuch"},
	} {
		err := c.x.Err()
		t.Logf("%s: %v", c.want, err)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// MapBlocks over an array persisted on the cluster reads its chunks where they are: each
// block's task runs on the worker holding the chunk (no task fetches from a peer), with the
// other inputs sent as values, and the result equals the in-process MapBlocks of the same
// values; the persisted array never comes to the client.
func TestClusterMapBlocksReadsPersistedChunksInPlace(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	fn := func(name string) cluster.Source { return cluster.Source{Code: blockSrc, Func: name} }
	x := gpuarray.NewRandomState(9).Normal(1, 2, gpuarray.Shape(60, 40), gpuarray.Chunks(10, 10))
	z := gpuarray.Arange(0, 40, 1, gpuarray.Chunks(10)) // broadcast along the rows: sent as values
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	got, err := c.MapBlocks(fn("affine"), y, z).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	want, err := gpuarray.MapBlocks(func(b [][]float64, shape []int) []float64 {
		out := make([]float64, len(b[0]))
		for i := range out {
			out[i] = b[0][i]*b[1][i] - float64(shape[0])
		}
		return out
	}, x, z).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, want) {
		t.Fatal("MapBlocks over the persisted array differs from the in-process one")
	}
	if s := y.String(); strings.Contains(y.HTML(), "copied to the host") || !strings.Contains(s, "persisted on 2 cluster workers") {
		t.Fatalf("the persisted array was fetched to the client: %s", s)
	}
	tasks, fetched := streamFetchesOf(t, c, "affine")
	if tasks != 24 || fetched != 0 {
		t.Fatalf("%d block tasks fetched %d bytes from peers; want 24 tasks where their chunks are", tasks, fetched)
	}
	// Both workers hold chunks, so both ran blocks.
	pids, err := c.MapBlocks(fn("whoRan"), y).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[float64]bool{}
	for _, p := range pids {
		seen[p] = true
	}
	if len(seen) != 2 {
		t.Fatalf("the blocks of a persisted array ran in %d worker processes, want the 2 holding chunks", len(seen))
	}
}
