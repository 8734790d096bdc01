package cuda

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestNarrowIntsPTX interprets the narrowing kernel that hands a fused kernel's integer words
// to the device sort in their own dtype: for every integer dtype under 8 bytes, random values
// (the extremes included) come out as the dtype's own bytes, over a grid of two blocks whose
// threads each loop past the grid's width.
func TestNarrowIntsPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(3, 4))
	const n, blocks = 1300, 2
	const src, dst = 1 << 40, 1 << 41
	for _, dt := range []dtype.DType{dtype.Int8, dtype.Uint8, dtype.Int16, dtype.Uint16, dtype.Int32, dtype.Uint32} {
		v := make([]int64, n)
		bits := 8 * dt.Size()
		lo, hi := int64(0), int64(1)<<bits-1
		if dt.Kind() == dtype.KindInt {
			lo, hi = -1<<(bits-1), 1<<(bits-1)-1
		}
		for i := range v {
			switch i {
			case 0:
				v[i] = lo
			case 1:
				v[i] = hi
			default:
				v[i] = lo + rs.Int64N(hi-lo+1)
			}
		}
		want := dtype.Convert(dtype.OfInt64(v), dt)
		words := EncodeWords(want)
		mem := map[uint64]uint64{}
		for i, w := range words {
			mem[src+uint64(8*i)] = math.Float64bits(w)
		}
		text, err := narrowPTX("8.0", "sm_90", dt.Size())
		if err != nil {
			t.Fatal(err)
		}
		p := ptxtest.Parse(t, text)
		for b := range blocks {
			ptxtest.Run(t, p, b, 0, map[string]uint64{"dst": dst, "src": src, "n": n, "nctaid.x": blocks}, mem, nil)
		}
		got := make([]byte, n*dt.Size())
		for i := range got {
			at := uint64(dst + i)
			got[i] = byte(mem[at&^7] >> (8 * (at & 7)))
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%v: narrowed bytes differ from the values' (first %v, want %v)", dt, got[:8], want.Bytes()[:8])
		}
	}
	if _, err := narrowPTX("8.0", "sm_90", 8); err == nil {
		t.Error("narrowing to 8-byte elements did not fail")
	}
}

// TestDeviceReadsIntegerSorts: the device sort reads integer words where the fused kernel left
// them (no trip through host memory); other libraries read float64 words only, and only the
// transforms read complex pairs in place.
func TestDeviceReadsIntegerSorts(t *testing.T) {
	for _, c := range []struct {
		fn   expr.CallFn
		dt   dtype.DType
		want bool
	}{
		{expr.FnSort, dtype.Int32, true}, {expr.FnArgsortDesc, dtype.Uint64, true}, {expr.FnSort, dtype.Float64, true},
		{expr.FnSort, dtype.Bool, true}, {expr.FnSort, dtype.Complex128, false},
		{expr.FnSolve, dtype.Int64, false}, {expr.FnSolve, dtype.Float64, true},
		{expr.FnFFT, dtype.Complex128, true}, {expr.FnIRFFT, dtype.Complex64, true}, {expr.FnSolve, dtype.Complex128, false},
	} {
		if got := DeviceReads(c.fn, c.dt); got != c.want {
			t.Errorf("DeviceReads(%v, %v) = %v, want %v", c.fn, c.dt, got, c.want)
		}
	}
}
