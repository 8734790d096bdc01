package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortNumbersMatchesSlicesSort checks the radix path against slices.Sort (with -0 before
// +0, which slices.Sort leaves in any order) for every type, on values with many ties, both
// signs, extremes and infinities.
func TestSortNumbersMatchesSlicesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{radixMin - 1, radixMin, 100003} {
		f := make([]float64, n)
		for i := range f {
			switch r.IntN(10) {
			case 0:
				f[i] = math.Inf(1 - 2*r.IntN(2))
			case 1:
				f[i] = math.Copysign(0, float64(1-2*r.IntN(2)))
			case 2:
				f[i] = math.MaxFloat64 * float64(1-2*r.IntN(2))
			case 3:
				f[i] = math.SmallestNonzeroFloat64 * float64(1-2*r.IntN(2))
			default:
				f[i] = math.Round(r.NormFloat64()*1e3) * math.Pow(2, float64(r.IntN(80)-40))
			}
		}
		// pdqsort (short slices) leaves -0 and +0 in any order: the bits must match for radix only
		radix := n >= radixMin
		checkSort(t, "float64", f, func(a, b float64) bool { return a == b && (!radix || math.Float64bits(a) == math.Float64bits(b)) })
		f32 := make([]float32, n)
		for i, v := range f {
			f32[i] = float32(v)
		}
		checkSort(t, "float32", f32, func(a, b float32) bool { return a == b && (!radix || math.Float32bits(a) == math.Float32bits(b)) })
		u := make([]uint64, n)
		for i := range u {
			u[i] = r.Uint64() >> (8 * r.IntN(8))
		}
		eq64 := func(a, b int64) bool { return a == b }
		i64 := make([]int64, n)
		i32, i16, i8 := make([]int32, n), make([]int16, n), make([]int8, n)
		u32, u16, u8 := make([]uint32, n), make([]uint16, n), make([]uint8, n)
		for i, x := range u {
			i64[i], i32[i], i16[i], i8[i] = int64(x), int32(x), int16(x), int8(x)
			u32[i], u16[i], u8[i] = uint32(x), uint16(x), uint8(x)
		}
		checkSort(t, "int64", i64, eq64)
		checkSort(t, "int32", i32, func(a, b int32) bool { return a == b })
		checkSort(t, "int16", i16, func(a, b int16) bool { return a == b })
		checkSort(t, "int8", i8, func(a, b int8) bool { return a == b })
		checkSort(t, "uint64", u, func(a, b uint64) bool { return a == b })
		checkSort(t, "uint32", u32, func(a, b uint32) bool { return a == b })
		checkSort(t, "uint16", u16, func(a, b uint16) bool { return a == b })
		checkSort(t, "uint8", u8, func(a, b uint8) bool { return a == b })
	}
}

func checkSort[T number](t *testing.T, what string, v []T, same func(a, b T) bool) {
	t.Helper()
	want := slices.Clone(v)
	slices.SortStableFunc(want, func(a, b T) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		// -0 before +0: the only equal values that differ (1/x is -Inf for -0)
		na, nb := a == 0 && 1/float64(a) < 0, b == 0 && 1/float64(b) < 0
		switch {
		case na && !nb:
			return -1
		case nb && !na:
			return 1
		}
		return 0
	})
	got := slices.Clone(v)
	var tmp []byte
	sortNumbers(got, &tmp)
	for i := range want {
		if !same(got[i], want[i]) {
			t.Fatalf("%s of %d: element %d is %v, want %v", what, len(v), i, got[i], want[i])
		}
	}
}

// TestArgsortRadixMatchesComparison checks the radix argsort against the comparison sort it
// replaces for long lines (NaN last, or first descending; ties, -0 and +0 among them, in
// index order).
func TestArgsortRadixMatchesComparison(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	n := radixMin + 1234
	f := make([]float64, n)
	for i := range f {
		switch r.IntN(8) {
		case 0:
			f[i] = math.NaN()
		case 1:
			f[i] = math.Copysign(0, float64(1-2*r.IntN(2)))
		case 2:
			f[i] = math.Inf(1 - 2*r.IntN(2))
		default:
			f[i] = math.Round(r.NormFloat64() * 50)
		}
	}
	i16 := make([]int16, n)
	u32 := make([]uint32, n)
	f32 := make([]float32, n)
	for i, v := range f {
		f32[i] = float32(v)
		if v == v && !math.IsInf(v, 0) {
			i16[i], u32[i] = int16(v), uint32(int64(v))
		}
	}
	for _, desc := range []bool{false, true} {
		checkArgsort(t, "float64", f, desc)
		checkArgsort(t, "float32", f32, desc)
		checkArgsort(t, "int16", i16, desc)
		checkArgsort(t, "uint32", u32, desc)
	}
}

func checkArgsort[T number](t *testing.T, what string, v []T, desc bool) {
	t.Helper()
	want := make([]int64, len(v))
	for i := range want {
		want[i] = int64(i)
	}
	slices.SortStableFunc(want, func(i, j int64) int {
		c := compareNaNLast(v[i], v[j])
		if desc {
			c = -c
		}
		return c
	})
	got := make([]int64, len(v))
	var keys, tmp []uint64
	var itmp []int64
	argsortRadix(v, desc, got, &keys, &tmp, &itmp)
	if !slices.Equal(got, want) {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s (descending %v): position %d holds index %d, want %d", what, desc, i, got[i], want[i])
			}
		}
	}
}
