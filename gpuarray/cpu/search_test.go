package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// searchTask is a task searching keys (1-d) in sorted, both sides.
func searchTask(sorted, keys dtype.Slice, right bool) *plan.Task {
	n := keys.Len()
	k := &plan.Kernel{Shape: []int{n}, Instrs: []plan.Instr{
		{Code: plan.Input, DType: keys.DType(), Slot: 0, Src: []int{n}, Map: []expr.AxisMap{{Axis: 0, Step: 1}}},
		{Code: plan.Search, DType: expr.Int64, Args: []int{0}, Slot: 1, Sorted: sorted.DType(), Right: right},
	}, Result: 1}
	return &plan.Task{Kernel: k, Offset: []int{0}, Shape: []int{n}, Inputs: []plan.Block{
		{Origin: []int{0}, Shape: []int{n}, Data: keys},
		{Origin: []int{0}, Shape: []int{sorted.Len()}, Data: sorted},
	}}
}

// TestSearchPositions: the Search instruction's positions are sort.Search's over the sorted
// values (NaN last; a NaN key before the first NaN, or after all with right), for sorted
// arrays of lengths 0 to 70 with ties and NaNs, float64 and int64 keys.
func TestSearchPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for m := 0; m <= 70; m++ {
		s := make([]float64, m)
		for i := range s {
			s[i] = float64(r.IntN(9))
			if r.IntN(6) == 0 {
				s[i] = math.NaN()
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
			return int(a - b)
		})
		nums := len(s)
		for nums > 0 && math.IsNaN(s[nums-1]) {
			nums--
		}
		keys := make([]float64, 600)
		ints := make([]int64, len(keys))
		for i := range keys {
			keys[i] = float64(r.IntN(11)) - 1
			ints[i] = int64(keys[i])
			if r.IntN(8) == 0 {
				keys[i] = math.NaN()
			}
		}
		is := make([]int64, nums)
		for i := range is {
			is[i] = int64(s[i])
		}
		for _, right := range []bool{false, true} {
			out, err := Execute(context.Background(), searchTask(dtype.OfFloat64(s), dtype.OfFloat64(keys), right))
			if err != nil {
				t.Fatal(err)
			}
			iout, err := Execute(context.Background(), searchTask(dtype.OfInt64(is), dtype.OfInt64(ints), right))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range keys {
				want := sort.Search(nums, func(j int) bool { return s[j] >= v })
				if right {
					want = sort.Search(nums, func(j int) bool { return s[j] > v })
				}
				switch {
				case v != v && right:
					want = m
				case v != v:
					want = nums
				}
				if got := out.Data.Int64s()[i]; got != int64(want) {
					t.Fatalf("%d sorted values %v, key %v, right %v: %d, want %d", m, s, v, right, got, want)
				}
				w := int64(v)
				iwant := sort.Search(nums, func(j int) bool { return is[j] >= ints[i] })
				if right {
					iwant = sort.Search(nums, func(j int) bool { return is[j] > ints[i] })
				}
				if got := iout.Data.Int64s()[i]; got != int64(iwant) {
					t.Fatalf("%d sorted ints %v, key %d (%v), right %v: %d, want %d", nums, is, ints[i], w, right, got, iwant)
				}
			}
		}
	}
}

// BenchmarkSearch: 1e6 float64 keys into 1e4 sorted values in one task.
func BenchmarkSearch(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	s := make([]float64, 10000)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	slices.Sort(s)
	keys := make([]float64, 1_000_000)
	for i := range keys {
		keys[i] = r.NormFloat64()
	}
	task := searchTask(dtype.OfFloat64(s), dtype.OfFloat64(keys), false)
	b.SetBytes(8 * int64(len(keys)))
	for b.Loop() {
		if _, err := Execute(context.Background(), task); err != nil {
			b.Fatal(err)
		}
	}
}
