package ptx

import (
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// TestOwnWordsCopy checks EncodeWords' and DecodeWords' copies of int64, uint64 and complex128
// values against the words they are defined as: an integer's bits, a complex value's real and
// imaginary parts; and the round trip, bit for bit.
func TestOwnWordsCopy(t *testing.T) {
	ints := []int64{0, -1, math.MinInt64, math.MaxInt64, 12345}
	uints := []uint64{0, math.MaxUint64, 1 << 63, 7}
	cs := []complex128{complex(1.5, -2), complex(math.Inf(1), math.NaN()), 0}
	iv := dtype.OfInt64(ints)
	uv, _ := dtype.Of(uints)
	cv := dtype.OfComplex128(cs)
	for _, c := range []struct {
		s    dtype.Slice
		want []uint64
	}{
		{iv, []uint64{0, math.MaxUint64, 1 << 63, math.MaxInt64, 12345}},
		{uv, uints},
		{cv, []uint64{math.Float64bits(1.5), math.Float64bits(-2), math.Float64bits(math.Inf(1)), math.Float64bits(math.NaN()), 0, 0}},
	} {
		w := EncodeWords(c.s)
		if len(w) != len(c.want) {
			t.Fatalf("%v: %d words, want %d", c.s.DType(), len(w), len(c.want))
		}
		for i, x := range w {
			if math.Float64bits(x) != c.want[i] {
				t.Errorf("%v word %d: %#x, want %#x", c.s.DType(), i, math.Float64bits(x), c.want[i])
			}
		}
		if back := DecodeWords(w, c.s.DType()); !dtype.Equal(back, c.s) {
			t.Errorf("%v: round trip %v", c.s.DType(), back)
		}
	}
	if w := EncodeWords(dtype.OfInt64(nil)); len(w) != 0 {
		t.Errorf("empty: %d words", len(w))
	}
}
