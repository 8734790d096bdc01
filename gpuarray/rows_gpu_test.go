package gpuarray

import (
	"strings"
	"testing"
)

// TestTakeRowsOnGPUElsewhere: with CPU options TakeRowsOnGPU gathers nothing and says why; a
// piece count that does not add up to the rows is an error.
func TestTakeRowsOnGPUElsewhere(t *testing.T) {
	x := FromSliceInt64([]int64{10, 11, 12})
	out, idx, why, err := TakeRowsOnGPU([]*Array{x}, []int32{2, -1, 0}, []int{3}, true, Threads(1))
	if err != nil || out != nil || idx != nil || !strings.Contains(why, "not a GPU compute") {
		t.Fatalf("out %v, index %v, why %q, err %v", out, idx, why, err)
	}
	if _, _, _, err := TakeRowsOnGPU([]*Array{x}, []int32{2, -1, 0}, []int{2}, false, Threads(1)); err == nil {
		t.Fatal("pieces of 2 rows for 3: no error")
	}
}
