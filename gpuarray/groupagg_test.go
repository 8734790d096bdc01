package gpuarray

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// TestMergeGroupAggTakesMinMaxByCount merges the tables of two GPUs' chunks: counts and sums
// add, and a group one side has no values in keeps the other side's minimum and maximum
// (not the kernel's initial words, which for floats are NaNs).
func TestMergeGroupAggTakesMinMaxByCount(t *testing.T) {
	nan := math.NaN()
	a := &cuda.GroupAggResult{Count: []int64{2, 0, 1}, SumI: []int64{5, 0, -3}, MinI: []int64{1, math.MaxInt64, -3}, MaxI: []int64{4, math.MinInt64, -3},
		MinF: []float64{1.5, nan, -2}, MaxF: []float64{2.5, nan, -2}, SumSq: []float64{1, 0, 4}}
	b := &cuda.GroupAggResult{Count: []int64{1, 3, 0}, SumI: []int64{7, 9, 0}, MinI: []int64{0, 2, math.MaxInt64}, MaxI: []int64{7, 5, math.MinInt64},
		MinF: []float64{0.5, -1, nan}, MaxF: []float64{9, 3, nan}, SumSq: []float64{2, 3, 0}}
	m := mergeGroupAgg(a, b)
	if !slices.Equal(m.Count, []int64{3, 3, 1}) || !slices.Equal(m.SumI, []int64{12, 9, -3}) ||
		!slices.Equal(m.MinI, []int64{0, 2, -3}) || !slices.Equal(m.MaxI, []int64{7, 5, -3}) ||
		!slices.Equal(m.MinF, []float64{0.5, -1, -2}) || !slices.Equal(m.MaxF, []float64{9, 3, -2}) ||
		!slices.Equal(m.SumSq, []float64{3, 3, 4}) {
		t.Fatalf("merged %+v", m)
	}
	if mergeGroupAgg(nil, b) != b {
		t.Fatal("merging into nothing is not the other side")
	}
}

// TestGroupAggregateNeedsAGPU: on the CPU schedulers GroupAggregate is an error that says so
// (dataframe's GroupBy calls it only for a GPU target).
func TestGroupAggregateNeedsAGPU(t *testing.T) {
	codes := FromSliceInt64([]int64{0, 1, 0})
	if _, _, err := GroupAggregate(2, []GroupAggColumn{{Codes: codes}}, Threads(1)); err == nil || !strings.Contains(err.Error(), "needs a GPU") {
		t.Fatalf("CPU scheduler: %v", err)
	}
}
