package gpuarray

import (
	"math"
	"strings"
	"testing"
)

// TestGPUUniqueOnDevice: the unique family of arrays persisted on the GPU selects with run
// boundaries marked on the device (Path names them, not a host list of positions): UniqueValues'
// values, UniqueCounts' counts and UniqueAll's first indices stay on the GPU, equal the CPU's
// bit for bit in every dtype the GPU keeps (float64 with NaNs, int64, and the narrow float32,
// int32, int16 and bool), and a chained stage (abs, then a max) reads the values in place.
func TestGPUUniqueOnDevice(t *testing.T) {
	needGPU(t)
	compactMasks(t)
	rs := NewRandomState(32)
	ints := rs.Integers(-40, 40, Shape(70000), Chunks(20000))
	base := Where(ints.Eq(13), math.NaN(), ints.AsType(Float64))
	for _, c := range []struct {
		name string
		a    *Array
	}{
		{"float64 with NaNs", base},
		{"int64", ints},
		{"float32", base.AsType(Float32)},
		{"int32", ints.AsType(Int32)},
		{"int16 matrix", ints.Reshape(700, 100).AsType(Int16)},
		{"bool", ints.Gt(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			host, err := c.a.Compute(Inline())
			if err != nil {
				t.Fatal(err)
			}
			held := host.Persist(OnGPU())
			if err := held.Err(); err != nil {
				t.Fatal(err)
			}
			defer held.Release()
			onDevice := func(what string, got *Array) {
				t.Helper()
				p := got.Path()
				if got.Where() != "gpu 0" || !strings.Contains(p, "selected on the device (run boundaries marked there") || strings.Contains(p, "listed on the host") {
					t.Fatalf("%s is not selected on the GPU: where %q, path %s", what, got.Where(), p)
				}
			}
			equal := func(what string, got, want *Array) {
				t.Helper()
				gv, err := got.n.Values()
				if err != nil {
					t.Fatal(err)
				}
				wv, err := want.n.Values()
				if err != nil {
					t.Fatal(err)
				}
				closeSlices(t, what, gv, wv, true, 0)
			}
			want, err := UniqueValues(host).Compute(Inline())
			if err != nil {
				t.Fatal(err)
			}
			got, err := UniqueValues(held).Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			onDevice("UniqueValues", got)
			equal("UniqueValues", got, want)

			wv, wn := UniqueCounts(host)
			wc, err := ComputeAll(Inline(), wv, wn)
			if err != nil {
				t.Fatal(err)
			}
			gv, gn := UniqueCounts(held)
			gc, err := ComputeAll(OnGPU(), gv, gn)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"UniqueCounts' values", "UniqueCounts' counts"} {
				onDevice(name, gc[i])
				equal(name, gc[i], wc[i])
			}

			va, ia, inva, ca := UniqueAll(host)
			vb, ib, invb, cb := UniqueAll(held)
			wa, err := ComputeAll(Inline(), va, ia, inva, ca)
			if err != nil {
				t.Fatal(err)
			}
			ga, err := ComputeAll(OnGPU(), vb, ib, invb, cb)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"UniqueAll's values", "UniqueAll's indices", "UniqueAll's inverse", "UniqueAll's counts"} {
				if i != 2 {
					onDevice(name, ga[i])
				}
				equal(name, ga[i], wa[i])
			}

			// A chained stage reads the values where the device selection left them.
			ws, err := UniqueValues(host).AsType(Float64).Abs().Max().Float64(Inline())
			if err != nil {
				t.Fatal(err)
			}
			gs, err := UniqueValues(held).AsType(Float64).Abs().Max().Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			if p := gs.Path(); !strings.Contains(p, "selected on the device") || strings.Contains(p, "listed on the host") || strings.Contains(p, "host fallback") {
				t.Fatalf("the chained max's path names a host step: %s", p)
			}
			s, err := gs.Float64()
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(s) != math.Float64bits(ws) {
				t.Fatalf("abs then max of the unique values: %v on the GPU, %v on the CPU", s, ws)
			}
		})
	}
}
