package gpuarray

import (
	"strings"
	"testing"
)

// TestTakeRowsOnGPUElsewhere: with CPU options TakeRowsOnGPU gathers nothing and says why.
func TestTakeRowsOnGPUElsewhere(t *testing.T) {
	x := FromSliceInt64([]int64{10, 11, 12})
	out, idx, why, err := TakeRowsOnGPU([]*Array{x}, [][]int32{{2, -1}, nil, {0}}, true, Threads(1))
	if err != nil || out != nil || idx != nil || !strings.Contains(why, "not a GPU compute") {
		t.Fatalf("out %v, index %v, why %q, err %v", out, idx, why, err)
	}
}
