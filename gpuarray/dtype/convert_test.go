package dtype

import (
	"math"
	"testing"
)

// TestConvertToFloat64TypedAndParallel checks convert's typed loops to float64, and its split
// over goroutines for large slices, against the element-by-element lanes: every integer and bool
// dtype's extremes and a range long enough to be split, bit-equal.
func TestConvertToFloat64TypedAndParallel(t *testing.T) {
	n := 3<<20 + 17 // more than two grains: split where GOMAXPROCS allows
	for _, dt := range All {
		if dt == Float64 || dt == Float32 || dt.IsComplex() {
			continue
		}
		wide := make([]int64, n)
		for i := range wide {
			// Values wrapping to every width, negatives and extremes among them.
			wide[i] = int64(uint64(i)*0x9E3779B97F4A7C15) ^ int64(i>>3)
		}
		wide[0], wide[1] = math.MaxInt64, math.MinInt64
		src := Convert(OfInt64(wide), dt)
		got := Convert(src, Float64).Float64s()
		for i := range n {
			if want := src.lane(i).asFloat(); math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("%v element %d: %v, want %v", dt, i, got[i], want)
			}
		}
	}
}
