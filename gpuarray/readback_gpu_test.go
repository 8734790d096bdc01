package gpuarray

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// TestGPUWordResultsDownloadInPlace computes int64, uint64 and complex128 results on the GPU
// (exact operations, held there, in chunks along both axes, so each chunk's rows land apart in the host copy),
// then reads them back through the pinned staging into one buffer (gpuChunks.download): the
// values are bit-equal to the CPU's of the same persisted input, typed (ToSliceInt64,
// ToSliceComplex128) and as float64s (ToSlice); an argsort's indices (a call's int64 output)
// too; and a first element read by axis slices (bench ops --on-device) is the first value.
func TestGPUWordResultsDownloadInPlace(t *testing.T) {
	needGPU(t)
	px := NewRandomState(7).StandardNormal(Shape(300, 250), Chunks(100, 125)).Persist(OnGPU())
	if err := px.Err(); err != nil {
		t.Fatal(err)
	}
	defer px.Release()
	x := hostCopy(t, px)
	for _, c := range []struct {
		name string
		f    func(*Array) *Array
	}{
		{"int64", func(a *Array) *Array { return a.Mul(1e6).AsType(Int64) }},
		{"uint64", func(a *Array) *Array { return a.Abs().Mul(1e6).AsType(Uint64) }},
		{"complex128", func(a *Array) *Array { return a.AsType(Complex128).Mul(a) }},
		{"argsort along 1", func(a *Array) *Array { return Argsort(a, 1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.f(x).Compute(Inline())
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.f(px).Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if got.Where() != "gpu 0" {
				t.Fatalf("not held on the GPU: %q, path %s", got.Where(), got.Path())
			}
			first, err := got.Slice(Span(0, 1), Span(0, 1)).ToSlice(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			wv, err := want.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			if first[0] != wv.ToFloat64()[0] && !(math.IsNaN(first[0]) && math.IsNaN(wv.ToFloat64()[0])) {
				t.Errorf("first element %v, want %v", first[0], wv.ToFloat64()[0])
			}
			gv, err := got.n.Values() // the download
			if err != nil {
				t.Fatal(err)
			}
			if !dtype.Equal(gv, wv) {
				t.Fatalf("values differ from the CPU's: %v vs %v", gv, wv)
			}
			var typed, wantTyped any
			switch wv.DType() {
			case Int64:
				typed, err = got.ToSliceInt64()
				wantTyped = wv.Int64s()
			case Complex128:
				typed, err = got.ToSliceComplex128()
				wantTyped = wv.Complex128s()
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(typed) != fmt.Sprint(wantTyped) {
				t.Errorf("typed values differ from the CPU's")
			}
			f, err := got.ToSlice()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f, wv.ToFloat64()) {
				t.Errorf("ToSlice differs from the CPU's values as float64s")
			}
		})
	}
}
