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

// TestGPUWorkerPersistIntegersInOwnSize persists an int16 and a bool array on a GPU worker:
// its device store holds 2 bytes and 1 byte per element, the HTML says so, computations
// reading the chunks there are bit-equal to those of the unpersisted arrays (sign extension
// shows in the sums of negative values), and stay so after the int16 chunks went to host
// memory and came back (the bool array pushed them over the device limit).
func TestGPUWorkerPersistIntegersInOwnSize(t *testing.T) {
	needGPU(t)
	// 16 chunks of 500 KB (int16) under a device limit of 60% of 16 MiB (10.1 MB): the int16
	// array (8 MB) fits, with the bool one (4 MB) it does not.
	c := newGPUCluster(t, cluster.Options{DeviceMemoryLimit: "16MiB"})
	const rows, cols = 2000, 2000
	x := gpuarray.NewRandomState(35).Normal(0, 20000, gpuarray.Shape(rows, cols), gpuarray.Chunks(500, 500)).AsType(gpuarray.Int16)
	b := gpuarray.NewRandomState(36).Normal(0, 1, gpuarray.Shape(rows, cols), gpuarray.Chunks(500, 500)).Gt(0.3)
	ints := func(x *gpuarray.Array) map[string]*gpuarray.Array {
		return map[string]*gpuarray.Array{
			"sum":     x.Sum(),
			"sum(0)":  x.Sum(0),
			"max(1)":  x.Max(1),
			"x + x.T": x.Add(x.T()).Sum(),
			"where":   gpuarray.Where(x.Gt(0), x, x.Neg()).Sum(),
		}
	}
	bools := func(b *gpuarray.Array) map[string]*gpuarray.Array {
		return map[string]*gpuarray.Array{
			"count":     b.Sum(),
			"any(1)":    b.Any(1),
			"b == b.T":  b.Eq(b.T()).Sum(0),
			"as int(0)": b.AsType(gpuarray.Int64).Sum(0),
		}
	}
	want := map[string][]float64{}
	for what, w := range map[string]map[string]*gpuarray.Array{"int16": ints(x), "bool": bools(b)} {
		for name, a := range w {
			got, err := a.ToSlice(gpuarray.On(c))
			if err != nil {
				t.Fatalf("%s of the unpersisted %s array: %v", name, what, err)
			}
			want[what+" "+name] = got
		}
	}
	check := func(when, what string, w map[string]*gpuarray.Array) {
		t.Helper()
		for name, a := range w {
			got, err := a.ToSlice(gpuarray.On(c))
			if err != nil {
				t.Fatalf("%s: %s of the %s array: %v", when, name, what, err)
			}
			if !bitEqual(got, want[what+" "+name]) {
				t.Errorf("%s: %s of the %s array differs from the unpersisted array's", when, name, what)
			}
		}
	}
	y := x.Persist(gpuarray.On(c))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	w := waitStored(t, c, "after Persist", func(w cluster.WorkerInfo) bool { return w.DeviceStored >= 2*rows*cols })
	if w.DeviceStored != 2*rows*cols {
		t.Fatalf("after Persist the worker holds %d bytes on the device, want %d (2 bytes per element)", w.DeviceStored, 2*rows*cols)
	}
	if h := y.HTML(); !strings.Contains(h, "<th>Held on gpu0 (device)</th><td>8.00 MB</td>") {
		t.Fatalf("the int16 array's HTML does not show 8 MB on gpu0's device: %s", h)
	}
	check("persisted", "int16", ints(y))
	z := b.Persist(gpuarray.On(c))
	if err := z.Err(); err != nil {
		t.Fatal(err)
	}
	w = waitStored(t, c, "after the bool Persist", func(w cluster.WorkerInfo) bool {
		return w.DeviceStored <= 16<<20*6/10 && w.Stored > 0
	})
	t.Logf("spilled: device %d, host %d, disk %d bytes", w.DeviceStored, w.Stored, w.Spilled)
	if h := z.HTML(); !strings.Contains(h, "<th>Held on gpu0 (device)</th>") {
		t.Fatalf("the bool array's HTML shows nothing on gpu0's device: %s", h)
	}
	check("persisted", "bool", bools(z))
	check("after a spill", "int16", ints(y))
	for what, p := range map[string][2]*gpuarray.Array{"int16": {y, x}, "bool": {z, b}} {
		vals, err := p[0].ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		regen, err := p[1].ToSlice(gpuarray.Inline())
		if err != nil || !bitEqual(vals, regen) {
			t.Fatalf("the persisted %s values differ from the CPU's (%v)", what, err)
		}
	}
	y.Release()
	z.Release()
}
