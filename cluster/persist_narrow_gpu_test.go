package cluster_test

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUWorkerPersistFloat32InFourBytes persists a float32 array on a GPU worker: its device
// store holds 4 bytes per element (half the 8-byte words), the array's HTML says so, the
// computations reading the chunks there are bit-equal to those of the unpersisted array, and
// so they stay after the chunks went to host memory and came back (a second array over the
// device limit).
func TestGPUWorkerPersistFloat32InFourBytes(t *testing.T) {
	needGPU(t)
	// 16 chunks of 1 MB (4-byte floats) under a device limit of 60% of 32 MiB (20.1 MB): one
	// array fits, two do not.
	c := newGPUCluster(t, cluster.Options{DeviceMemoryLimit: "32MiB"})
	const rows, cols, chunk = 2000, 2000, 500 * 500 * 4
	x := gpuarray.NewRandomState(33).Normal(1, 2, gpuarray.Shape(rows, cols), gpuarray.Chunks(500, 500), gpuarray.WithDType(gpuarray.Float32))
	want := map[string][]float64{}
	for name, a := range gpuWorkload(x) {
		got, err := a.ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s of the unpersisted array: %v", name, err)
		}
		want[name] = got
	}
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	w := waitStored(t, c, "after Persist", func(w cluster.WorkerInfo) bool { return w.DeviceStored >= 16*chunk })
	if w.DeviceStored != 16*chunk {
		t.Fatalf("after Persist the worker holds %d bytes on the device, want %d (4 bytes per element)", w.DeviceStored, 16*chunk)
	}
	if h := y.HTML(); !strings.Contains(h, "<th>Held on gpu0 (device)</th><td>16.00 MB</td>") {
		t.Fatalf("the array's HTML does not show 16 MB on gpu0's device: %s", h)
	}
	check := func(when string) {
		t.Helper()
		for name, a := range gpuWorkload(y) {
			got, err := a.ToSlice(gpuarray.On(c))
			if err != nil {
				t.Fatalf("%s: %s: %v", when, name, err)
			}
			if !bitEqual(got, want[name]) {
				t.Errorf("%s: %s differs from the unpersisted array's", when, name)
			}
		}
	}
	check("persisted")
	z := gpuarray.NewRandomState(34).Uniform(0, 1, gpuarray.Shape(rows, cols), gpuarray.Chunks(500, 500), gpuarray.WithDType(gpuarray.Float32)).Persist(gpuarray.On(c))
	if err := z.Err(); err != nil {
		t.Fatal(err)
	}
	w = waitStored(t, c, "after a second Persist", func(w cluster.WorkerInfo) bool {
		return w.DeviceStored <= 20*chunk && w.Stored > 0
	})
	t.Logf("spilled: device %d, host %d, disk %d bytes", w.DeviceStored, w.Stored, w.Spilled)
	check("after a spill")
	vals, err := y.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	regen, err := x.ToSlice(gpuarray.Inline())
	if err != nil || !bitEqual(vals, regen) {
		t.Fatalf("the persisted values differ from the CPU's (%v)", err)
	}
	y.Release()
	z.Release()
}
