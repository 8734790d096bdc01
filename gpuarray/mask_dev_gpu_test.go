package gpuarray

import (
	"strings"
	"testing"
)

// TestGPUMasksCompactOnDevice: Nonzero, Argwhere and masks of arrays persisted on the GPU
// select on the device (Path names the device selection, not a host list of positions): each
// output stays on the GPU, equals the CPU's bit for bit, and a chained stage (abs, then a max)
// reads it in place.
func TestGPUMasksCompactOnDevice(t *testing.T) {
	needGPU(t)
	compactMasks(t)
	rs := NewRandomState(33)
	v := rs.StandardNormal(Shape(100000), Chunks(30000))
	pv := v.Persist(OnGPU())
	m := rs.Integers(-3, 3, Shape(600, 500), Chunks(150, 500), WithDType(Int32))
	pm := m.Persist(OnGPU())
	for _, a := range []*Array{pv, pm} {
		if err := a.Err(); err != nil {
			t.Fatal(err)
		}
	}
	defer pv.Release()
	defer pm.Release()
	v, m = hostCopy(t, pv), hostCopy(t, pm)
	cases := []struct {
		name string
		f    func(v, m *Array) *Array
	}{
		{"v[v > 0.5]", func(v, _ *Array) *Array { return v.Mask(v.Gt(0.5)) }},
		{"float32 v[v < 0]", func(v, _ *Array) *Array { x := v.AsType(Float32); return x.Mask(x.Lt(0)) }},
		{"nonzero of a vector", func(v, _ *Array) *Array { return Nonzero(v.Gt(1))[0] }},
		{"nonzero of a matrix, axis 0", func(_, m *Array) *Array { return Nonzero(m)[0] }},
		{"nonzero of a matrix, axis 1", func(_, m *Array) *Array { return Nonzero(m)[1] }},
		{"argwhere of a matrix", func(_, m *Array) *Array { return Argwhere(m.Gt(1)) }},
		{"nothing selected", func(v, _ *Array) *Array { return v.Mask(v.Gt(100)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.f(v, m).Compute(Inline())
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.f(pv, pm).Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			p := got.Path()
			if strings.Contains(p, "listed on the host") || strings.Contains(p, "not compacted") {
				t.Fatalf("the mask was listed on the host: %s", p)
			}
			wv, err := want.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			if wv.Len() > 0 && (got.Where() != "gpu 0" || !strings.Contains(p, "positions selected on the device") || !strings.HasSuffix(p, "result kept on gpu 0")) {
				t.Fatalf("the output is not on the GPU: where %q, path %s", got.Where(), p)
			}
			gv, err := got.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			closeSlices(t, c.name, gv, wv, true, 0)
			// (A max: a sum or mean of a selection is fused as a where over the whole array,
			// maskedReduce, and reads no selection.)
			if wv.Len() == 0 {
				return
			}
			ws, err := c.f(v, m).Abs().Max().Float64(Inline())
			if err != nil {
				t.Fatal(err)
			}
			gs, err := c.f(pv, pm).Abs().Max().Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			if p := gs.Path(); strings.Contains(p, "listed on the host") || strings.Contains(p, "host read") || strings.Contains(p, "host fallback") || wv.Len() > 0 && !strings.Contains(p, "selected on the device") {
				t.Fatalf("the chained max's path names a host step: %s", p)
			}
			s, err := gs.Float64()
			if err != nil {
				t.Fatal(err)
			}
			if s != ws {
				t.Fatalf("abs then max: %v on the GPU, %v on the CPU", s, ws)
			}
		})
	}
	// The unique family: its mask reads a join (the sorted values' neighbours), so it may
	// still list positions on the host; the values must be the CPU's either way.
	want, err := UniqueValues(m).Compute(Inline())
	if err != nil {
		t.Fatal(err)
	}
	got, err := UniqueValues(pm).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	wv, _ := want.n.Values()
	gv, err := got.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	closeSlices(t, "unique values", gv, wv, true, 0)
	t.Logf("unique values of 600 x 500 int32 on the GPU: %s", got.Path())
}
