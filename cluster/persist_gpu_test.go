package cluster_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// needGPU skips without a GPU, except on the GPU machine (GPUNOTES_GPU_TESTS=1, as
// bench/gpu.sh runs the tests), where a missing GPU is a failure.
func needGPU(t *testing.T) {
	t.Helper()
	if err := gpuarray.GPUError(); err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
}

// newGPUCluster starts a LocalCUDA with one GPU worker.
func newGPUCluster(t testing.TB, o cluster.Options) *cluster.LocalCUDA {
	t.Helper()
	o.Binary, o.NWorkers = workerBin, 1
	c, err := cluster.NewLocalCUDA(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if ws := c.WorkerInfo(); len(ws) != 1 || ws[0].GPU == "" {
		t.Fatalf("want one GPU worker, have %+v", ws)
	}
	return c
}

// waitStored waits until the worker reports results in device memory that satisfy ok (stats
// come every second), and returns the last report.
func waitStored(t *testing.T, c *cluster.LocalCUDA, what string, ok func(w cluster.WorkerInfo) bool) cluster.WorkerInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w := c.WorkerInfo()[0]
		if ok(w) {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the worker reports %d bytes of results on the device, %d in host memory, %d on disk", what, w.DeviceStored, w.Stored, w.Spilled)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func gpuWorkload(x *gpuarray.Array) map[string]*gpuarray.Array {
	return map[string]*gpuarray.Array{
		"mean":        x.Mean(),
		"std":         x.Std(),
		"col means":   x.Mean(0),
		"x + x.T":     x.Add(x.T()).Sum(),
		"standardize": x.Sub(x.Mean(0)).Div(x.Std(0)).Sum(0),
		"2x+1":        x.Mul(2).Add(1),
	}
}

// TestGPUWorkerPersistKeepsChunksOnTheDevice persists an array on a GPU worker: its chunks
// stay in device memory (the worker's stats), computations on it read them there and are
// bit-equal to the same computations of the unpersisted array on that worker (and close to
// the CPU's); a second persisted array pushes the first one's least recently used chunks to
// host memory (the device limit), and the results stay bit-equal as they come back.
func TestGPUWorkerPersistKeepsChunksOnTheDevice(t *testing.T) {
	needGPU(t)
	// 16 chunks of 2 MB; results may take 60% of the 64 MiB device limit (40.3 MB): one array
	// fits, two do not.
	c := newGPUCluster(t, cluster.Options{DeviceMemoryLimit: "64MiB"})
	const rows, cols, bytes = 2000, 2000, 2000 * 2000 * 8
	x := gpuarray.NewRandomState(31).Normal(1, 2, gpuarray.Shape(rows, cols), gpuarray.Chunks(500, 500))
	want := map[string][]float64{}
	for name, a := range gpuWorkload(x) {
		got, err := a.ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s of the unpersisted array: %v", name, err)
		}
		cpu, err := a.ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatal(err)
		}
		for i := range cpu {
			if math.Abs(got[i]-cpu[i]) > 1e-9*math.Max(1, math.Abs(cpu[i]))*2000 {
				t.Fatalf("%s[%d] on the GPU worker %v, CPU %v", name, i, got[i], cpu[i])
			}
		}
		want[name] = got
	}
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if p := y.Path(); strings.Contains(p, "fallback") {
		t.Fatalf("Path of a GPU-computed persist: %q", p)
	}
	w := waitStored(t, c, "after Persist", func(w cluster.WorkerInfo) bool { return w.DeviceStored >= bytes })
	if w.DeviceStored != bytes || w.Spilled != 0 {
		t.Fatalf("after Persist the worker holds %d bytes on the device (want %d) and %d on disk", w.DeviceStored, bytes, w.Spilled)
	}
	if h := y.HTML(); !strings.Contains(h, "Held on gpu0 (device)") {
		t.Fatalf("the array's HTML does not say its chunks are in gpu0's device memory: %s", h)
	}
	if h := c.HTML(); !strings.Contains(h, "Results (device / host / disk)") || !strings.Contains(h, fmt.Sprintf("%.2f MiB", float64(bytes)/(1<<20))) {
		t.Fatalf("the cluster's HTML does not show the device-held bytes: %s", h)
	}
	check := func(when string) {
		t.Helper()
		for name, a := range gpuWorkload(y) {
			g, err := a.Compute(gpuarray.On(c))
			if err != nil {
				t.Fatalf("%s: %s: %v", when, name, err)
			}
			got, err := g.ToSlice()
			if err != nil {
				t.Fatalf("%s: %s: %v", when, name, err)
			}
			if !bitEqual(got, want[name]) {
				t.Logf("%s: %s: Path %q", when, name, g.Path())
				i := 0
				for j := range got {
					if math.Float64bits(got[j]) != math.Float64bits(want[name][j]) {
						i = j
						break
					}
				}
				t.Errorf("%s: %s[%d] = %v, unpersisted %v", when, name, i, got[i], want[name][i])
			}
		}
	}
	check("persisted")
	// The tasks reading y ran where its chunks are: none fetched from a peer.
	if tasks, fetched := streamFetches(t, c); tasks == 0 || fetched != 0 {
		t.Fatalf("%d chunk tasks fetched %d bytes", tasks, fetched)
	}
	// A second array over the device limit: y's least recently used chunks go to host memory.
	z := gpuarray.NewRandomState(32).Uniform(0, 1, gpuarray.Shape(rows, cols), gpuarray.Chunks(500, 500)).Persist(gpuarray.On(c))
	if err := z.Err(); err != nil {
		t.Fatal(err)
	}
	// 32 chunks of 2 MB under a limit of 40.3 MB: 20 stay on the device, 12 go to host memory.
	const chunk = 500 * 500 * 8
	w = waitStored(t, c, "after a second Persist", func(w cluster.WorkerInfo) bool {
		return w.DeviceStored == 20*chunk && w.Stored >= 12*chunk
	})
	t.Logf("spilled: device %d, host %d, disk %d bytes", w.DeviceStored, w.Stored, w.Spilled)
	check("after a spill")
	// MapBlocks over y reads its chunks on the worker (copied from the device there).
	twice := cluster.Source{Code: `func twice(b [][]float64, shape []int) []float64 {
	out := make([]float64, len(b[0]))
	for i, v := range b[0] {
		out[i] = 2 * v
	}
	return out
}`, Func: "twice"}
	doubled, err := c.MapBlocks(twice, y).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	vals, err := y.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if doubled[i] != 2*v {
			t.Fatalf("MapBlocks over the persisted array: element %d is %v, want %v", i, doubled[i], 2*v)
		}
	}
	y.Release()
	z.Release()
	waitStored(t, c, "after Release", func(w cluster.WorkerInfo) bool {
		return w.DeviceStored == 0 && w.Stored == 0 && w.Spilled == 0
	})
}

// TestGPUWorkerMakesRoomWhenOutOfDeviceMemory gives the worker's GPU pool about 80 MB (its
// environment's GPUNOTES_GPU_MEMORY_FRACTION) and no lower device limit for kept results: the
// third persisted array of 32 MB runs out of device memory, the worker moves the kept chunks
// its task does not read to host memory and runs it again, and every result stays bit-equal.
func TestGPUWorkerMakesRoomWhenOutOfDeviceMemory(t *testing.T) {
	needGPU(t)
	gpus := gpuarray.GPUs()
	if len(gpus) == 0 || gpus[0].Memory == 0 {
		t.Fatalf("GPU memory unknown: %+v", gpus)
	}
	t.Setenv("GPUNOTES_GPU_MEMORY_FRACTION", strconv.FormatFloat(80e6/float64(gpus[0].Memory), 'g', -1, 64))
	c := newGPUCluster(t, cluster.Options{})
	const n = 2000
	arrays := make([]*gpuarray.Array, 3)
	want := make([][]float64, 3)
	for i := range arrays {
		arrays[i] = gpuarray.NewRandomState(int64(40+i)).Normal(0, 1, gpuarray.Shape(n, n), gpuarray.Chunks(500, 500))
		var err error
		if want[i], err = arrays[i].Mul(3).Sum(0).ToSlice(gpuarray.On(c)); err != nil {
			t.Fatal(err)
		}
	}
	held := make([]*gpuarray.Array, 3)
	for i, a := range arrays {
		if held[i] = a.Persist(gpuarray.On(c)); held[i].Err() != nil {
			t.Fatalf("persist %d with an 80 MB pool: %v", i, held[i].Err())
		}
	}
	w := waitStored(t, c, "after three arrays", func(w cluster.WorkerInfo) bool {
		return w.Stored >= 16*500*500*8 && w.DeviceStored+w.Stored >= 3*n*n*8
	})
	t.Logf("after three arrays: device %d, host %d bytes", w.DeviceStored, w.Stored)
	for pass := 0; pass < 2; pass++ {
		for i, h := range held {
			got, err := h.Mul(3).Sum(0).ToSlice(gpuarray.On(c))
			if err != nil {
				t.Fatalf("pass %d, array %d: %v", pass, i, err)
			}
			if !bitEqual(got, want[i]) {
				t.Fatalf("pass %d, array %d differs from the unpersisted result", pass, i)
			}
		}
	}
	for _, h := range held {
		h.Release()
	}
}

// TestGPUWorkerPersistHostFallbackReachesTheCell persists, on a GPU worker, an array whose
// kernel the GPU does not run (a weighted bincount of 5000 bins, past the device's 768): the
// worker computes it on its CPU, and the persisted array's Path says so (as a local GPU
// compute does), not only the worker's log.
func TestGPUWorkerPersistHostFallbackReachesTheCell(t *testing.T) {
	needGPU(t)
	c := newGPUCluster(t, cluster.Options{})
	rs := gpuarray.NewRandomState(5)
	x := rs.Integers(0, 5000, gpuarray.Shape(20000), gpuarray.Chunks(10000), gpuarray.WithDType(gpuarray.Int64))
	w := rs.Uniform(0, 1, gpuarray.Shape(20000), gpuarray.Chunks(10000))
	p := gpuarray.Bincount(x, w, 5000)
	y := p.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(y.Path(), "host fallback") {
		t.Fatalf("Path %q does not report the worker's host fallback", y.Path())
	}
	got, err := y.ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d bins, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*max(1, math.Abs(want[i])) {
			t.Fatalf("bin %d: %v from the worker, %v inline", i, got[i], want[i])
		}
	}
}

// TestGPUWorkerPersistTiming measures a persisted array on one GPU worker, then its mean and
// column means (GPUNOTES_PERSIST_N=20000 for 20000 x 20000): one JSON line for
// bench/RESULTS.md. Run it with a worker binary of before and after to compare.
func TestGPUWorkerPersistTiming(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GPUNOTES_PERSIST_N"))
	if n == 0 {
		t.Skip("GPUNOTES_PERSIST_N unset")
	}
	needGPU(t)
	c := newGPUCluster(t, cluster.Options{})
	x := gpuarray.NewRandomState(1).Normal(0, 1, gpuarray.Shape(n, n), gpuarray.Chunks(n/4, n/4))
	t0 := time.Now()
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	res := map[string]any{"n": n, "chunks": n / 4, "persist_s": time.Since(t0).Seconds()}
	time.Sleep(1500 * time.Millisecond) // a stats report
	w := c.WorkerInfo()[0]
	res["device_bytes"], res["host_bytes"] = w.DeviceStored, w.Stored
	for _, op := range []struct {
		name string
		a    *gpuarray.Array
	}{{"mean", y.Mean()}, {"mean0", y.Mean(0)}} {
		var times []float64
		for range 6 {
			t0 := time.Now()
			if _, err := op.a.ToSlice(gpuarray.On(c)); err != nil {
				t.Fatal(err)
			}
			times = append(times, time.Since(t0).Seconds())
		}
		res[op.name+"_first_s"] = times[0]
		rest := slices.Clone(times[1:])
		slices.Sort(rest)
		res[op.name+"_median_s"] = rest[len(rest)/2]
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	y.Release()
}
