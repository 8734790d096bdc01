package gpuarray

import (
	"slices"
	"strings"
	"testing"
)

// TestTakeOnGPUElsewhere checks TakeOnGPU where it cannot gather on a device: with CPU
// options it returns the lazy take, which computes x.Take(idx), and says why.
func TestTakeOnGPUElsewhere(t *testing.T) {
	x := FromSliceInt64([]int64{10, 11, 12, 13, 14})
	idx := FromSliceInt64([]int64{4, 0, 2, 2})
	r, why, err := TakeOnGPU(x, idx, Threads(1))
	if err != nil || !strings.Contains(why, "not a GPU compute") {
		t.Fatalf("why %q, err %v", why, err)
	}
	got, err := r.ToSliceInt64(Threads(1))
	if err != nil || !slices.Equal(got, []int64{14, 10, 12, 12}) {
		t.Fatalf("%v, %v", got, err)
	}
}
