package gpuarray

import (
	"slices"
	"strings"
	"testing"
)

// TestGPUTakeOnDevice gathers a float64 and an int64 array persisted on the GPU in several
// chunks, and one computed there, by a device argsort's permutation in several chunks: each
// result stays on the GPU, equals the CPU's take bit for bit, and a chained stage reads it in
// place; a narrow (int32) operand takes the general take and says so.
func TestGPUTakeOnDevice(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(41)
	v := rs.StandardNormal(Shape(300001), Chunks(70000)).Persist(OnGPU())
	k := rs.Integers(-1000, 1000, Shape(300001), Chunks(70000), WithDType(Int64)).Persist(OnGPU())
	for _, a := range []*Array{v, k} {
		if err := a.Err(); err != nil {
			t.Fatal(err)
		}
	}
	defer v.Release()
	defer k.Release()
	perm := Argsort(v, 0)
	hv, hk := hostCopy(t, v), hostCopy(t, k)
	hp, err := Argsort(hv, 0).Compute(Threads(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		x, hx  *Array
		idx    *Array
		narrow bool
	}{
		{"float64 by its argsort", v, hv, perm, false},
		{"int64 by the float argsort", k, hk, perm, false},
		{"computed int64 by a computed permutation", k.Mul(int64(3)), hk.Mul(int64(3)), Argsort(k, 0).Take(perm), false},
		{"int32 (narrow)", k.AsType(Int32), hk.AsType(Int32), perm, true},
	} {
		r, why, err := TakeOnGPU(c.x, c.idx, OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.narrow != (why != "") {
			t.Fatalf("%s: why %q", c.name, why)
		}
		hidx := hp
		if c.name == "computed int64 by a computed permutation" {
			if hidx, err = Argsort(hk, 0).Take(hp).Compute(Threads(0)); err != nil {
				t.Fatal(err)
			}
		}
		want, err := c.hx.Take(hidx).ToSliceInt64(Threads(0))
		if c.x.DType() == Float64 {
			wf, err2 := c.hx.Take(hidx).ToSlice(Threads(0))
			gf, err3 := r.ToSlice(OnGPU())
			if err2 != nil || err3 != nil || !slices.Equal(wf, gf) {
				t.Fatalf("%s: values differ (%v, %v)", c.name, err2, err3)
			}
		} else {
			got, err2 := r.ToSliceInt64(OnGPU())
			if err != nil || err2 != nil || !slices.Equal(got, want) {
				t.Fatalf("%s: values differ (%v, %v)", c.name, err, err2)
			}
		}
		if why == "" {
			if !strings.Contains(r.Path(), "gathered on gpu") || !strings.HasPrefix(r.Where(), "gpu ") {
				t.Fatalf("%s: Path %q, where %q", c.name, r.Path(), r.Where())
			}
			s, err := r.Abs().Max().AsType(Float64).ToSlice(OnGPU())
			w, err2 := c.hx.Abs().Max().AsType(Float64).ToSlice(Threads(0))
			if err != nil || err2 != nil || !slices.Equal(s, w) {
				t.Fatalf("%s: chained max of abs %v, want %v (%v, %v)", c.name, s, w, err, err2)
			}
		}
	}
}
