package cuda

import (
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// TestWordsRoundTrip: the fused kernel's words hold every value of every dtype exactly
// (64-bit integers beyond 2^53, NaN payloads, complex parts), Words per element.
func TestWordsRoundTrip(t *testing.T) {
	ints := dtype.OfInt64([]int64{math.MinInt64, math.MaxInt64, 1<<53 + 1, -1, 0, 255, -129, math.MaxUint32})
	floats := dtype.OfFloat64([]float64{math.NaN(), math.Inf(-1), math.Copysign(0, -1), 5e-324, 1 << 60, 0.1, -2.5, 3})
	cplx := dtype.OfComplex128([]complex128{complex(math.NaN(), 1), complex(1<<60+3, -0.1), complex(math.Inf(1), math.Copysign(0, -1)), 0, 1, 2i, -3, 5e-324})
	for _, dt := range []dtype.DType{dtype.Bool, dtype.Int8, dtype.Int16, dtype.Int32, dtype.Int64, dtype.Uint8, dtype.Uint16, dtype.Uint32, dtype.Uint64,
		dtype.Float32, dtype.Float64, dtype.Complex64, dtype.Complex128} {
		src := ints
		switch {
		case dt.IsFloat():
			src = floats
		case dt.IsComplex():
			src = cplx
		}
		v := dtype.Convert(src, dt)
		w := EncodeWords(v)
		if len(w) != v.Len()*Words(dt) {
			t.Errorf("%v: %d words for %d values", dt, len(w), v.Len())
		}
		if back := DecodeWords(w, dt); !dtype.Equal(back, v) {
			t.Errorf("%v: %v came back as %v", dt, v, back)
		}
	}
	if w := EncodeWords(dtype.OfInt64([]int64{1<<53 + 1})); math.Float64bits(w[0]) != 1<<53+1 {
		t.Errorf("int64 words are the value's bits, got %x", math.Float64bits(w[0]))
	}
}
