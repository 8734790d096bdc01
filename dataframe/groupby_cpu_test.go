package dataframe

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestGroupByCPUIndependentOfThreads checks that the host's groupby gives the same bits with
// 1, 2 and 5 threads, on the dense and the hashed paths: units, not threads, fix the order of
// float sums and of merges.
func TestGroupByCPUIndependentOfThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 150_000 // enough pairs that medians bucket them in parallel chunks
	k1, k2 := make([]int32, n), make([]int32, n)
	v1 := make([]int32, n)
	v3 := make([]float64, n)
	for i := range k1 {
		k1[i], k2[i] = int32(1+r.IntN(5000)), int32(r.IntN(7))
		v1[i], v3[i] = int32(r.IntN(100)-50), r.NormFloat64()*1e6
	}
	x := FromSlices([]string{"k1", "k2", "v1", "v3"}, []any{k1, k2, v1, v3}, NPartitions(7)).Persist()
	frames := func() []*Frame {
		return []*Frame{
			x.GroupBy("k1").Agg(Sum("v1"), Sum("v3"), Mean("v3"), Max("v1"), Min("v1"), Size()),
			x.GroupBy("k1", "k2").Agg(Sum("v3"), Mean("v1"), Std("v3"), Count("v3")),
			x.GroupBy("k2").Agg(Sum("v3"), Median("v3"), Mean("v1")),
			x.GroupBy("k1").Agg(Median("v3"), NUnique("v1"), Quantile("v1", 0.3)),
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, mode := range []struct {
		name string
		max  uint64
	}{{"dense", 1 << 22}, {"hashed", 64}} {
		reset := SetDenseMax(mode.max)
		var want []*Frame
		for _, threads := range []int{1, 2, 5} {
			runtime.GOMAXPROCS(threads)
			for i, f := range frames() {
				c, err := f.Compute()
				if err != nil {
					t.Fatal(err)
				}
				if threads == 1 {
					want = append(want, c)
					continue
				}
				sameFrames(t, fmt.Sprintf("%s, question %d, %d threads", mode.name, i, threads), c, want[i], 0)
			}
		}
		reset()
	}
}
