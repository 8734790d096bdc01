package gpuarray

import (
	"strings"
	"testing"
)

// TestGPUBincountOnDevice: with GPUNOTES_GPU_BINCOUNT_KEEP's device totals on, Bincount and
// Histogram of arrays persisted on the GPU count every chunk into one device array: the result
// stays on the GPU, its counts equal the CPU's bit for bit, a chained sum reads it in place, and
// a value out of range is still an error.
func TestGPUBincountOnDevice(t *testing.T) {
	needGPU(t)
	was := bincountKeep
	bincountKeep = true
	t.Cleanup(func() { bincountKeep = was })
	rs := NewRandomState(17)
	x := rs.StandardNormal(Shape(300000), Chunks(70000))
	ints := x.Abs().Mul(8).AsType(Int64)
	hx, hi := hostCopyOf(t, x), hostCopyOf(t, ints)
	px, pi := x.Persist(OnGPU()), ints.Persist(OnGPU())
	defer px.Release()
	defer pi.Release()
	h, _ := Histogram(hx, 50, -4, 4, nil)
	g, _ := Histogram(px, 50, -4, 4, nil)
	for _, c := range []struct {
		name      string
		want, got *Array
	}{
		{"Bincount(int64)", Bincount(hi, nil, 64), Bincount(pi, nil, 64)},
		{"Bincount(int32)", Bincount(hi.AsType(Int32), nil, 64), Bincount(pi.AsType(Int32), nil, 64)},
		{"Histogram(x, 50, -4, 4)", h, g},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.want.Compute(Inline())
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.got.Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			p := got.Path()
			if got.Where() != "gpu 0" || !strings.Contains(p, "counted into one array") {
				t.Fatalf("not counted on the device: where %q, path %s", got.Where(), p)
			}
			wv, err := want.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			gv, err := got.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			closeSlices(t, c.name, gv, wv, true, 0)
			s, err := c.got.Sum().Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			ws, err := c.want.Sum().Float64(Inline())
			if err != nil {
				t.Fatal(err)
			}
			if v, err := s.Float64(); err != nil || v != ws || !strings.Contains(s.Path(), "counted into one array") {
				t.Fatalf("chained sum: %v (%v), want %v; path %s", v, err, ws, s.Path())
			}
		})
	}
	_, err := bincount(pi, nil, 3).Compute(OnGPU())
	if err == nil || !strings.Contains(err.Error(), "not below the length 3") {
		t.Fatalf("a value out of range: %v", err)
	}
}

// hostCopyOf computes a on the CPU, as an array in host memory with a's chunks.
func hostCopyOf(t *testing.T, a *Array) *Array {
	t.Helper()
	c, err := a.Compute(Inline())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
