package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// memDev stands in for device memory on machines without a GPU: a chunk's values held aside,
// with its frees counted, so the store's tier moves can be checked in CI. The GPU test
// (persist_gpu_test.go) checks the same store with devChunk on a real device.
type memDev struct {
	vals  []float64
	freed *int
}

func (m *memDev) Bytes() uint64 { return uint64(len(m.vals)) * 8 }
func (m *memDev) Host() (any, error) {
	return []*plan.Output{{Shape: []int{len(m.vals)}, Data: dtype.OfFloat64(slices.Clone(m.vals))}}, nil
}
func (m *memDev) Free() { *m.freed++ }

func chunkOf(n int, first float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = first + float64(i)
	}
	return v
}

// valuesOf returns the chunk values of a store value, whichever tier it came from.
func valuesOf(t *testing.T, v any) []float64 {
	t.Helper()
	if d, ok := v.(devValue); ok {
		var err error
		if v, err = d.Host(); err != nil {
			t.Fatal(err)
		}
	}
	outs, ok := v.([]*plan.Output)
	if !ok || len(outs) != 1 {
		t.Fatalf("value is a %T, not one chunk", v)
	}
	return outs[0].Data.Float64s()
}

func TestStoreSpillsLeastRecentlyUsedDeviceChunksToHost(t *testing.T) {
	const n = 1000 // 8000 bytes a chunk
	freed := 0
	st := newStore(2*n*8, 0, t.TempDir())
	vals := map[string][]float64{}
	for i, k := range []string{"a", "b", "c"} {
		vals[k] = chunkOf(n, float64(1000*i))
		st.putDev(k, &memDev{vals: vals[k], freed: &freed})
	}
	// Three chunks over a limit of two: a, the least recently used, went to host memory.
	if got := []string{st.where("a"), st.where("b"), st.where("c")}; !slices.Equal(got, []string{tierHost, tierDevice, tierDevice}) {
		t.Fatalf("tiers of a, b, c = %v, want host, device, device", got)
	}
	if freed != 1 {
		t.Fatalf("%d device chunks freed, want 1 (a's)", freed)
	}
	s := st.stats()
	if s.Device != 2*n*8 || s.Count != 3 || s.Host == 0 || s.Disk != 0 {
		t.Fatalf("stats %+v: want 16000 device bytes, a's encoding in host memory, 3 results", s)
	}
	// Reading b makes c the least recently used: the next chunk pushes c out, not b.
	v, done, err := st.value("b", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(valuesOf(t, v), vals["b"]) {
		t.Fatal("b's values changed")
	}
	done()
	vals["d"] = chunkOf(n, 3000)
	st.putDev("d", &memDev{vals: vals["d"], freed: &freed})
	if got := []string{st.where("b"), st.where("c"), st.where("d")}; !slices.Equal(got, []string{tierDevice, tierHost, tierDevice}) {
		t.Fatalf("tiers of b, c, d = %v, want device, host, device", got)
	}
	// Every result reads back bit-equal from its tier, for tasks and for the wire.
	for k, want := range vals {
		v, done, err := st.value(k, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(valuesOf(t, v), want) {
			t.Fatalf("%s (%s): values differ", k, st.where(k))
		}
		done()
		b, err := st.blob(k)
		if err != nil {
			t.Fatal(err)
		}
		dv, err := decodeValue(b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(valuesOf(t, dv), want) {
			t.Fatalf("%s (%s): encoded values differ", k, st.where(k))
		}
	}
}

func TestStoreSpillsHostToDiskAndBringsChunksBackToTheDevice(t *testing.T) {
	const n = 1000
	freed, uploads := 0, 0
	dir := filepath.Join(t.TempDir(), "spill")
	st := newStore(2*n*8, 1, dir) // any host-held result goes to disk
	st.upload = func(v any) (devValue, error) {
		outs, ok := v.([]*plan.Output)
		if !ok || len(outs) != 1 {
			return nil, nil
		}
		uploads++
		return &memDev{vals: slices.Clone(outs[0].Data.Float64s()), freed: &freed}, nil
	}
	vals := map[string][]float64{}
	for i, k := range []string{"a", "b", "c"} {
		vals[k] = chunkOf(n, float64(1000*i))
		st.putDev(k, &memDev{vals: vals[k], freed: &freed})
	}
	if w := st.where("a"); w != tierDisk {
		t.Fatalf("a is in %q, want disk (device, then host, both over their limits)", w)
	}
	s := st.stats()
	if s.Device != 2*n*8 || s.Host != 0 || s.Disk == 0 {
		t.Fatalf("stats %+v: want two chunks on the device, a on disk", s)
	}
	files, err := os.ReadDir(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("spill directory holds %d files (%v), want a's one", len(files), err)
	}
	// A GPU task reading a comes back to the device, pinned while it reads: b, now the least
	// recently used, goes down instead, and a's file is gone.
	v, done, err := st.value("a", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(devValue); !ok || uploads != 1 {
		t.Fatalf("a GPU task reads a as a %T after %d uploads, want it back on the device", v, uploads)
	}
	if !slices.Equal(valuesOf(t, v), vals["a"]) {
		t.Fatal("a's values changed on the way back")
	}
	if got := []string{st.where("a"), st.where("b"), st.where("c")}; !slices.Equal(got, []string{tierDevice, tierDisk, tierDevice}) {
		t.Fatalf("tiers of a, b, c = %v, want device, disk, device", got)
	}
	// While a is pinned, a new chunk cannot push it out, even if it is the least recent.
	vals["d"] = chunkOf(n, 3000)
	st.putDev("d", &memDev{vals: vals["d"], freed: &freed})
	if st.where("a") != tierDevice || st.where("c") != tierDisk {
		t.Fatalf("a is in %s and c in %s; want the pinned a on the device and c spilled", st.where("a"), st.where("c"))
	}
	done()
	// A CPU task reads a spilled result from disk and leaves it there.
	v, done, err = st.value("b", false)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if _, ok := v.(devValue); ok || st.where("b") != tierDisk || !slices.Equal(valuesOf(t, v), vals["b"]) {
		t.Fatalf("a CPU task read b as a %T, b now in %s", v, st.where("b"))
	}
}

func TestStoreReleaseFreesEveryTier(t *testing.T) {
	const n = 500
	freed := 0
	dir := t.TempDir()
	st := newStore(n*8, 1, dir)
	for i, k := range []string{"a", "b", "c"} {
		st.putDev(k, &memDev{vals: chunkOf(n, float64(i)), freed: &freed})
	}
	st.putBlob("x", &blob{Enc: encGob, Data: make([]byte, 100)})
	// c on the device; a, b, x on disk (host limit 1 byte).
	if st.where("c") != tierDevice || st.where("a") != tierDisk || st.where("x") != tierDisk {
		t.Fatalf("tiers a %s, c %s, x %s", st.where("a"), st.where("c"), st.where("x"))
	}
	// A task reading c holds it: a release meanwhile frees it when the task is done.
	_, done, err := st.value("c", true)
	if err != nil {
		t.Fatal(err)
	}
	before := freed
	for _, k := range []string{"a", "b", "c", "x"} {
		st.drop(k)
	}
	if freed != before {
		t.Fatalf("a pinned chunk was freed while a task read it")
	}
	done()
	if freed != before+1 {
		t.Fatalf("the released chunk c was not freed when its reader finished (%d frees)", freed-before)
	}
	if s := st.stats(); s != (storeStats{Peak: s.Peak}) || s.Peak == 0 {
		t.Fatalf("after releasing everything the store reports %+v (the peak stays)", s)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 0 {
		t.Fatalf("%d spill files left after release", len(files))
	}
	if _, _, err := st.value("a", false); err == nil {
		t.Fatal("a released result can still be read")
	}
}

// TestStoreMakesRoomForATaskOutOfDeviceMemory moves every device result that no task reads to
// host memory, as a GPU worker does when a task runs out of device memory before it retries.
func TestStoreMakesRoomForATaskOutOfDeviceMemory(t *testing.T) {
	const n = 100
	freed := 0
	st := newStore(0, 0, t.TempDir()) // no device limit: only the task's failure spills
	for i, k := range []string{"a", "b", "c"} {
		st.putDev(k, &memDev{vals: chunkOf(n, float64(i)), freed: &freed})
	}
	_, done, err := st.value("b", true) // the failing task reads b
	if err != nil {
		t.Fatal(err)
	}
	if got := st.makeRoom(); got != 2*n*8 {
		t.Fatalf("makeRoom freed %d device bytes, want %d (a and c)", got, 2*n*8)
	}
	done()
	if got := []string{st.where("a"), st.where("b"), st.where("c")}; !slices.Equal(got, []string{tierHost, tierDevice, tierHost}) {
		t.Fatalf("tiers of a, b, c = %v, want host, device (read by the task), host", got)
	}
	if s := st.stats(); s.Device != n*8 || freed != 2 {
		t.Fatalf("stats %+v, %d frees: want b's %d bytes on the device and two frees", s, freed, n*8)
	}
	if st.makeRoom() != n*8 || st.where("b") != tierHost {
		t.Fatal("once its task is done, b makes room too")
	}
}
