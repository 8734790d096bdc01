package cluster_test

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// streamFetches reads the dashboard's task stream: how many chunk tasks ran, and how many bytes
// they fetched from peers.
func streamFetches(t *testing.T, c *cluster.LocalCUDA) (tasks int, bytes int64) {
	t.Helper()
	return streamFetchesOf(t, c, "chunks")
}

// streamFetchesOf is streamFetches for the tasks whose key has prefix.
func streamFetchesOf(t *testing.T, c *cluster.LocalCUDA, prefix string) (tasks int, bytes int64) {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(c.Dashboard(), "/") + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st cluster.DashboardState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, ev := range st.Stream {
		if ev.Prefix == prefix {
			tasks++
			bytes += ev.FetchBytes
		}
	}
	return tasks, bytes
}

func bitEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// standardized is one pass of the iterative workload: standardize the columns, then sum
// them.
func standardized(x *gpuarray.Array) *gpuarray.Array {
	return x.Sub(x.Mean(0)).Div(x.Std(0)).Sum(0)
}

// TestPersistOnClusterSurvivesKilledWorker persists an array on two CPU workers, kills one of
// them with SIGKILL, and checks that the next computation is bit-equal to the inline one: the
// lost chunks are computed again from the graph.
func TestPersistOnClusterSurvivesKilledWorker(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	x := gpuarray.NewRandomState(21).Normal(3, 2, gpuarray.Shape(600, 400), gpuarray.Chunks(100, 100)).Mul(2).Add(1)
	want, err := standardized(x).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	wantAll, err := x.ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, w := range c.WorkerInfo() {
		held += w.InMemory
	}
	if held != 24 {
		t.Fatalf("%d results on the workers after persisting 24 chunks", held)
	}
	if w := y.Where(); w != "2 cluster workers" {
		t.Fatalf("Where %q", w)
	}
	h := y.HTML()
	if !strings.Contains(h, "Held on cpu0") || !strings.Contains(h, "Held on cpu1") {
		t.Fatalf("HTML does not show the bytes per worker: %s", h)
	}
	for pass := 0; pass < 2; pass++ {
		got, err := standardized(y).ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatal(err)
		}
		if !bitEqual(got, want) {
			t.Fatalf("pass %d on the persisted array differs from the inline computation", pass)
		}
	}
	// The tasks that read persisted chunks ran on the workers holding them: none fetched a
	// chunk from a peer.
	chunkTasks, fetched := streamFetches(t, c)
	if chunkTasks == 0 || fetched != 0 {
		t.Fatalf("%d chunk tasks fetched %d bytes from peers; they should run where their chunks are", chunkTasks, fetched)
	}
	victim := c.WorkerPIDs()["cpu0"]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got, err := standardized(y).ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatalf("after killing a worker holding chunks: %v", err)
	}
	if !bitEqual(got, want) {
		t.Fatal("after killing a worker holding chunks, the result differs from the inline one")
	}
	all, err := y.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(all, wantAll) {
		t.Fatal("the persisted values fetched to the client differ from the inline ones")
	}
	y.Release()
	deadline := time.Now().Add(10 * time.Second)
	for {
		held = 0
		for _, w := range c.WorkerInfo() {
			held += w.InMemory
		}
		if held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d results still on the workers 10 s after Release", held)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPersistThroughConnect persists an array on workers of a standalone scheduler, through a
// client of Connect, and reads it back in later computations: bit-equal to inline.
func TestPersistThroughConnect(t *testing.T) {
	h := newHosts(t, 1)
	token := randHex(16)
	_, addr, _ := startScheduler(t, h.rootIP()+":0", token, "--dashboard", "off")
	startWorkers(t, h.names[0], addr, token, "p", 2, 1)
	c := connect(t, addr, token)
	waitWorkers(t, c, 30*time.Second, "p-cpu0", "p-cpu1")
	x := gpuarray.NewRandomState(8).Uniform(-1, 1, gpuarray.Shape(400, 300), gpuarray.Chunks(100, 100))
	want, err := standardized(x).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	y := c.Persist(x)
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	for pass := 0; pass < 2; pass++ {
		got, err := standardized(y).ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatal(err)
		}
		if !bitEqual(got, want) {
			t.Fatalf("pass %d through Connect differs from inline", pass)
		}
	}
	all, err := y.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	wantAll, _ := x.ToSlice(gpuarray.Inline())
	if !bitEqual(all, wantAll) {
		t.Fatal("the persisted values fetched through Connect differ")
	}
}

// TestPersistReprSaysWhereChunksAre persists an array on CPU workers whose memory limit holds
// part of it: the rest spills to disk, and the array's HTML says how many bytes each worker
// holds in host memory and on disk; later computations read both, bit-equal to inline.
func TestPersistReprSaysWhereChunksAre(t *testing.T) {
	// 60% of 1 MB: 7 of a worker's 12 chunks of 80 kB stay in host memory, 5 go to disk.
	c := newCluster(t, cluster.Options{NWorkers: 2, MemoryLimit: "1MB"})
	x := gpuarray.NewRandomState(4).Uniform(0, 1, gpuarray.Shape(600, 400), gpuarray.Chunks(100, 100))
	want, err := standardized(x).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	// Which worker takes how many chunks depends on timing (a loaded machine can give one of
	// them 17 of 24), so each worker must hold some, and some must be in host memory and some
	// on disk: at least one worker holds 12 or more, past its 7 in host memory.
	h := y.HTML()
	for _, place := range []string{"Held on cpu0 (", "Held on cpu1 (", " (host)", " (disk)"} {
		if !strings.Contains(h, place) {
			t.Fatalf("the HTML does not say %q: %s", place, h)
		}
	}
	if w := y.Where(); w != "2 cluster workers" {
		t.Fatalf("Where %q", w)
	}
	got, err := standardized(y).ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, want) {
		t.Fatal("the chunks read from host memory and disk give another result than inline")
	}
}
