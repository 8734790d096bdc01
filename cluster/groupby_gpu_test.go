package cluster_test

import (
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUWorkerGroupByEqualsInline groups a frame persisted on a GPU worker (its chunks in
// device memory) with every aggregation: the dense ones (sum, mean, min, max, count, size,
// var, std) fold each partition with the group-aggregate kernel on the worker's GPU, reading
// device-held int64 columns in place; first, last, nunique and median take hashagg on the
// worker's CPU. Each result equals the groupby in this process (floats to 1e-9: the kernel's
// atomics add in their own order, and var takes M2 from the sum of squares).
func TestGPUWorkerGroupByEqualsInline(t *testing.T) {
	needGPU(t)
	c := newGPUCluster(t, cluster.Options{})
	f := groupByFrame(200000, 8)
	pf := f.Persist(gpuarray.On(c))
	if err := pf.Err(); err != nil {
		t.Fatal(err)
	}
	checkGroupByOnWorkers(t, c, f, pf, func(agg string) string {
		switch agg {
		case "first", "last", "nunique", "median":
			return "aggregated on the CPU (hashagg; "
		case "count", "size":
			return "dense-code group-aggregate kernel"
		}
		return "1 value columns read in place from device memory"
	}, 1e-9)
}
