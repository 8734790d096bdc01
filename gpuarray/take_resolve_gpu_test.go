package gpuarray

import (
	"slices"
	"strings"
	"testing"
)

// TestGPUTakeGathersInCompute: a take in a GPU compute (x.Take(idx) with indices computed in
// the graph from a persisted vector, as bench ops' take row) is gathered on the device
// (resolveTakes): the result is held on the GPU in the indices' chunks, Path says so, the values equal the CPU's bit
// for bit, and a chained max of abs reads it in place. Negative indices leave the host gather
// (Path says why) with NumPy's values; an index out of bounds is still an error.
func TestGPUTakeGathersInCompute(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(71)
	pv := rs.StandardNormal(Shape(300001), Chunks(70000)).Persist(OnGPU())
	if err := pv.Err(); err != nil {
		t.Fatal(err)
	}
	defer pv.Release()
	v := hostCopy(t, pv)
	idx := func(a *Array) *Array { return a.Mul(1000).Sin().Abs().Mul(float64(a.Size() - 1)).AsType(Int64) }
	got, err := pv.Take(idx(pv)).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.Where() != "gpu 0" || !strings.Contains(got.Path(), "gathered on gpu 0") {
		t.Fatalf("where %q, path %s", got.Where(), got.Path())
	}
	// The result keeps the chunks of its indices, as the lazy take's (frames pair it with
	// their other columns chunk by chunk).
	if c := got.Chunks(); len(c) != 1 || !slices.Equal(c[0], pv.Chunks()[0]) {
		t.Fatalf("chunks %v, want the indices' %v", c, pv.Chunks())
	}
	want, err := v.Take(idx(v)).ToSlice(Inline())
	if err != nil {
		t.Fatal(err)
	}
	gv, err := got.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gv, want) {
		t.Fatal("values differ from the CPU's")
	}
	m, err := pv.Take(idx(pv)).Abs().Max().Float64(OnGPU())
	wm, err2 := v.Take(idx(v)).Abs().Max().Float64(Inline())
	if err != nil || err2 != nil || m != wm {
		t.Fatalf("chained max of abs %v, want %v (%v, %v)", m, wm, err, err2)
	}
	neg := func(a *Array) *Array { return idx(a).Sub(int64(1000)) }
	ng, err := pv.Take(neg(pv)).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ng.Path(), "outside [0, 300001)") {
		t.Errorf("negative indices: path %s", ng.Path())
	}
	nv, err := ng.ToSlice()
	nw, err2 := v.Take(neg(v)).ToSlice(Inline())
	if err != nil || err2 != nil || !slices.Equal(nv, nw) {
		t.Fatalf("negative indices: values differ (%v, %v)", err, err2)
	}
	if _, err := pv.Take(idx(pv).Add(int64(300001))).Compute(OnGPU()); err == nil {
		t.Fatal("indices out of bounds: no error")
	}
}
