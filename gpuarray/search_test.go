package gpuarray

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// searchCases returns random cases of Searchsorted against numpy.searchsorted: sorted arrays
// with ties and trailing NaNs, values of random shapes and chunks that hit, miss and tie.
func searchCases(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 13))
	var cs []check
	for i := 0; i < n; i++ {
		m := 1 + rs.IntN(20)
		s := make([]float64, m)
		for j := range s {
			s[j] = float64(rs.IntN(10)) - 5
			if rs.IntN(8) == 0 {
				s[j] = math.NaN()
			}
		}
		slices.SortFunc(s, func(a, b float64) int {
			switch {
			case a != a && b != b:
				return 0
			case a != a:
				return 1
			case b != b:
				return -1
			}
			return cmp.Compare(a, b)
		})
		shape := npShape(rs, rs.IntN(3), 1, 6)
		_, vin := randArray(rs, "v", shape)
		for j := range vin.data {
			switch rs.IntN(4) {
			case 0:
				vin.data[j] = float64(rs.IntN(12)) - 6 // equal to some sorted values
			case 1:
				if rs.IntN(3) == 0 {
					vin.data[j] = math.NaN()
				}
			}
		}
		v := FromSlice(vin.data, Shape(shape...), ChunkSizes(npChunks(rs, shape)...))
		sa := FromSlice(s, Shape(m), ChunkSizes(npChunks(rs, []int{m})...))
		sin := input{"s", []int{m}, s}
		for _, side := range []string{"left", "right"} {
			cs = append(cs, check{
				what:   fmt.Sprintf("Searchsorted(%v, values of shape %v, %s)", s, shape, side),
				got:    Searchsorted(sa, v, side),
				code:   fmt.Sprintf("np.searchsorted(s, v, side=%q)", side),
				inputs: []input{sin, vin},
			})
		}
	}
	return cs
}

func TestSearchsortedMatchesNumPy(t *testing.T) {
	runChecks(t, searchCases(1, 30))
}

func TestSearchsortedErrors(t *testing.T) {
	s := FromSlice([]float64{1, 2, 2, 3}, Shape(4), Chunks(2))
	for _, c := range []struct {
		a    *Array
		want string
	}{
		{Searchsorted(s, s, "middle"), "side"},
		{Searchsorted(s.Reshape(2, 2), s, "left"), "1-d"},
		{Searchsorted(s.AsType(Complex128), s, "left"), "no order"},
	} {
		if err := c.a.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one with %q", err, c.want)
		}
	}
	got, err := Searchsorted(s, FromSlice([]float64{2, 0, 9}, Shape(3)), "right").ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[3 0 4]" {
		t.Errorf("Searchsorted right: %v", got)
	}
}

// TestGPUSearchsortedMatchesNumPy runs the searches under OnGPU: binary searches in the
// fused kernel.
func TestGPUSearchsortedMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, searchCases(2, 10), OnGPU())
}

// searchFused is Searchsorted as it was before the binary search: a fused count of the
// sorted values below each value (len(x1) comparisons per value), kept to time against it.
func searchFused(x1, x2 *Array, right bool) *Array {
	v := ExpandDims(x2, -1)
	in := LogicalOr(x1.Lt(v), LogicalAnd(IsNaN(v), LogicalNot(IsNaN(x1))))
	if right {
		in = LogicalOr(x1.Le(v), IsNaN(v))
	}
	return in.Sum(-1).AsType(Int64)
}

// BenchmarkSearchsorted: 2e5 values into 1024 sorted ones, by binary search and by the fused
// count it replaced (both checked equal).
func BenchmarkSearchsorted(b *testing.B) {
	rs := NewRandomState(3)
	x1 := Sort(rs.Normal(0, 1, Shape(1024)), 0)
	x2 := rs.Normal(0, 1, Shape(200_000), Chunks(50_000))
	want, err := searchFused(x1, x2, false).ToSlice()
	if err != nil {
		b.Fatal(err)
	}
	got, err := Searchsorted(x1, x2, "left").ToSlice()
	if err != nil {
		b.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		b.Fatal("binary search and fused count differ")
	}
	for _, c := range []struct {
		name string
		f    func() *Array
	}{{"binary", func() *Array { return Searchsorted(x1, x2, "left") }}, {"fused-count", func() *Array { return searchFused(x1, x2, false) }}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.f().Compute(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSearchsortedReadsHeldSortedArrays: a sorted array persisted in one chunk is read in
// place by every task of the search; one persisted in several chunks is read into host memory
// for the tasks, which the stage says (WholeOnHost, which a GPU's Path names), and either way
// the positions are those of the same search of plain data.
func TestSearchsortedReadsHeldSortedArrays(t *testing.T) {
	vals := []float64{-3, -1, -1, 0, 2, 2, 2, 5, 9, math.NaN()}
	keys := FromSlice([]float64{-5, -1, 0.5, 2, 9, 11, math.NaN(), 2}, Shape(2, 4), Chunks(1, 4)).Mul(1.5)
	want, err := Searchsorted(FromSlice(vals), keys, "right").ToSlice(Inline())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		chunks int
		onHost bool
	}{{10, false}, {4, true}} {
		x1 := FromSlice(vals, Chunks(c.chunks)).Persist(Inline())
		if err := x1.Err(); err != nil {
			t.Fatal(err)
		}
		s := Searchsorted(x1, keys, "right")
		st, err := plan.Lower(0, s.n, map[*expr.Node]dtype.Slice{}, planOptions(engine.Inline{}, 0))
		if err != nil {
			t.Fatal(err)
		}
		if st.WholeOnHost != c.onHost {
			t.Errorf("sorted array in chunks of %d: WholeOnHost %v, want %v", c.chunks, st.WholeOnHost, c.onHost)
		}
		got, err := s.ToSlice(Inline())
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sorted array in chunks of %d: %v, want %v", c.chunks, got, want)
		}
	}
}

// intSearchCases returns Searchsorted cases of integers that float64 cannot tell apart,
// against NumPy (which compares in the values' common dtype): int64 values past 2^60 whose
// ties and neighbours differ by 1, the values searched for a fused expression; uint64 values
// past 2^63; int8 values into an int32 array.
func intSearchCases(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 17))
	var cs []check
	for i := 0; i < n; i++ {
		m := 1 + rs.IntN(30)
		s := make([]float64, m)
		for j := range s {
			s[j] = float64(rs.IntN(12))
		}
		slices.Sort(s)
		shape := npShape(rs, 1+rs.IntN(2), 1, 7)
		v := make([]float64, expr.Size(shape))
		for j := range v {
			v[j] = float64(rs.IntN(14)) - 1
		}
		sin, vin := input{"s", []int{m}, s}, input{"v", shape, v}
		chunks := ChunkSizes(npChunks(rs, shape)...)
		big := func(x []float64, off int64) []int64 {
			out := make([]int64, len(x))
			for j, f := range x {
				out[j] = int64(f) + off
			}
			return out
		}
		side := []string{"left", "right"}[i%2]
		cs = append(cs,
			check{
				what: fmt.Sprintf("Searchsorted of int64 past 2^60 (%v, %s)", s, side),
				got: Searchsorted(FromSliceInt64(big(s, 1<<60), ChunkSizes(npChunks(rs, []int{m})...)),
					FromSlice(v, Shape(shape...), chunks).AsType(Int64).Add(FromSliceInt64([]int64{1 << 60})), side),
				code:   fmt.Sprintf("np.searchsorted(s.astype(np.int64) + 2**60, v.astype(np.int64) + 2**60, side=%q)", side),
				inputs: []input{sin, vin},
			},
			check{
				what: fmt.Sprintf("Searchsorted of uint64 past 2^63 (%v, %s)", s, side),
				got: Searchsorted(FromSliceInt64(big(s, math.MinInt64)).AsType(Uint64),
					FromSliceInt64(big(v, math.MinInt64), Shape(shape...), chunks).AsType(Uint64), side),
				code:   fmt.Sprintf("np.searchsorted(s.astype(np.uint64) + np.uint64(2**63), v.astype(np.uint64) + np.uint64(2**63), side=%q)", side),
				inputs: []input{sin, vin},
			},
			check{
				what:   fmt.Sprintf("Searchsorted of int8 into int32 (%v, %s)", s, side),
				got:    Searchsorted(FromSlice(s).AsType(Int32), FromSlice(v, Shape(shape...), chunks).AsType(Int8), side),
				code:   fmt.Sprintf("np.searchsorted(s.astype(np.int32), v.astype(np.int8), side=%q)", side),
				inputs: []input{sin, vin},
			})
	}
	return cs
}

func TestSearchsortedIntegersMatchNumPy(t *testing.T) {
	runChecks(t, intSearchCases(3, 12))
}

// TestGPUSearchsortedIntegersMatchNumPy: the exact integer searches, in the fused kernel.
func TestGPUSearchsortedIntegersMatchNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, intSearchCases(4, 8), OnGPU())
}
