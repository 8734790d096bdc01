package gpuarray

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// TestGPUUploaderHeldArray: chunks of each dtype, of odd lengths and from unaligned addresses
// (a narrow chunk's last word padded), one larger than a pinned staging piece (64 MiB), go to
// the GPU through Upload and read back from HeldArray's array as they were; a fused kernel
// reads them in place.
func TestGPUUploaderHeldArray(t *testing.T) {
	needGPU(t)
	u, err := NewUploader(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []dtype.DType{dtype.Float64, dtype.Int64, dtype.Int32, dtype.Float32, dtype.Uint8, dtype.Bool, dtype.Int16} {
		lens := []int{1, 1001, 0, 77}
		if dt == dtype.Float64 {
			lens = append(lens, 9_000_001) // 72 MB
		}
		var want []float64
		var cs []*DeviceChunk
		for p, n := range lens {
			f := make([]float64, n+1)
			for i := range f {
				f[i] = float64((i*31 + p) % 100)
			}
			whole := dtype.Convert(dtype.OfFloat64(f), dt)
			v := whole.Slice(1, n+1) // from an unaligned address for narrow dtypes
			c, err := u.Upload(v, p)
			if err != nil {
				t.Fatalf("%v chunk %d: %v", dt, p, err)
			}
			cs = append(cs, c)
			want = append(want, v.ToFloat64()...)
		}
		a, err := HeldArray(cs, dt, "")
		if err != nil {
			t.Fatal(err)
		}
		if w := a.Where(); !strings.Contains(w, "gpu 0") {
			t.Fatalf("%v chunks held on %q", dt, w)
		}
		got, err := a.AsType(Float64).Add(1).ToSlice(OnGPU())
		if err != nil {
			t.Fatalf("%v: %v", dt, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d values, want %d", dt, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i]+1 {
				t.Fatalf("%v element %d: %v, want %v", dt, i, got[i]-1, want[i])
			}
		}
		back, err := a.Values()
		if err != nil {
			t.Fatal(err)
		}
		if bf := back.ToFloat64(); len(bf) != len(want) || bf[len(bf)-1] != want[len(want)-1] || bf[0] != want[0] {
			t.Fatalf("%v: Values differ at the ends", dt)
		}
	}
}
