package cluster_test

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUClusterOnSeveralGPUsSurvivesKilledWorker (issue 19 items 3 and 4): a local cluster
// with one worker per GPU persists a normal array, then computes its mean, column means, row
// standard deviations and the sum of x + x.T on it, one worker SIGKILLed in the middle of the
// first computation. Every result is bit-equal to the same expression computed on one GPU and
// on all GPUs of this process (OnGPUs). It needs two GPUs (GPUNOTES_GPU_TESTS=1);
// GPUNOTES_MULTI_N sets the array's side (default 20000, chunks of a quarter of it).
func TestGPUClusterOnSeveralGPUsSurvivesKilledWorker(t *testing.T) {
	if os.Getenv("GPUNOTES_GPU_TESTS") != "1" {
		t.Skip("GPU test: set GPUNOTES_GPU_TESTS=1 on a machine with GPUs")
	}
	gpus := gpuarray.GPUs()
	if len(gpus) < 2 {
		t.Skipf("needs two GPUs, found %d", len(gpus))
	}
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_MULTI_N")); err == nil && v > 0 {
		n = v
	}
	x := gpuarray.NewRandomState(19).StandardNormal(gpuarray.Shape(n, n), gpuarray.Chunks(n/4, n/4))
	ops := []struct {
		name string
		f    func(*gpuarray.Array) *gpuarray.Array
	}{
		{"mean", func(a *gpuarray.Array) *gpuarray.Array { return a.Mean() }},
		{"mean(axis=0)", func(a *gpuarray.Array) *gpuarray.Array { return a.Mean(0) }},
		{"std(axis=1)", func(a *gpuarray.Array) *gpuarray.Array { return a.Std(1) }},
		{"sum(x + x.T)", func(a *gpuarray.Array) *gpuarray.Array { return a.Add(a.T()).Sum() }},
	}
	want := make([][]float64, len(ops))
	for i, op := range ops {
		one, err := op.f(x).ToSlice(gpuarray.OnGPU(0))
		if err != nil {
			t.Fatalf("%s on one GPU: %v", op.name, err)
		}
		all, err := op.f(x).ToSlice(gpuarray.OnGPUs())
		if err != nil {
			t.Fatalf("%s on %d GPUs: %v", op.name, len(gpus), err)
		}
		if !bitEqual(one, all) {
			t.Fatalf("%s: %d GPUs differ from one GPU", op.name, len(gpus))
		}
		want[i] = one
	}
	c, err := cluster.NewLocalCUDA(cluster.Options{Binary: workerBin})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pids := c.WorkerPIDs()
	if len(pids) != len(gpus) {
		t.Fatalf("%d workers for %d GPUs: %v", len(pids), len(gpus), pids)
	}
	t0 := time.Now()
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("persisted %d x %d on %s in %.3f s", n, n, y.Where(), time.Since(t0).Seconds())
	for _, w := range c.WorkerInfo() {
		t.Logf("worker %s (%s): %d chunks, %.3g GB stored", w.Name, w.GPULabel, w.InMemory, float64(w.Stored)/1e9)
	}
	victim := pids["gpu1"]
	if victim == 0 {
		t.Fatalf("no worker named gpu1: %v", pids)
	}
	for i, op := range ops {
		t0 := time.Now()
		var killed chan error
		if i == 0 { // SIGKILL a worker while the first computation runs
			killed = make(chan error, 1)
			go func() { // as soon as gpu1 has a task of it
				for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
					if busy(c, "gpu1") {
						break
					}
				}
				killed <- syscall.Kill(victim, syscall.SIGKILL)
			}()
		}
		got, err := op.f(y).ToSlice(gpuarray.On(c))
		if killed != nil {
			if kerr := <-killed; kerr != nil {
				t.Fatal(kerr)
			}
		}
		if err != nil {
			t.Fatalf("%s on the cluster: %v", op.name, err)
		}
		if !bitEqual(got, want[i]) {
			t.Fatalf("%s on the cluster (worker killed: %v) differs from one GPU", op.name, i == 0)
		}
		t.Logf("%s on the cluster: %.3f s%s", op.name, time.Since(t0).Seconds(), map[bool]string{true: fmt.Sprintf(", worker gpu1 (pid %d) SIGKILLed during it", victim)}[i == 0])
	}
	if p := c.WorkerPIDs()["gpu1"]; p == victim || p == 0 {
		t.Errorf("gpu1 was not restarted after the kill (pid %d)", p)
	}
}

// busy reports whether the named worker has tasks sent to it and not finished.
func busy(c *cluster.LocalCUDA, name string) bool {
	for _, w := range c.WorkerInfo() {
		if w.Name == name {
			return w.Processing > 0
		}
	}
	return false
}
