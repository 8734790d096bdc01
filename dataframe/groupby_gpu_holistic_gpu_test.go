package dataframe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUGroupByHolisticMatchesCPU runs median, quantile, nunique, first and last on a GPU
// (argsorts, gathers and the group-aggregate kernel there) over a frame persisted on the
// device and one in host memory, and compares them with the CPU's hash aggregation bit for
// bit (Std beside them within 1e-9 relative, as TestGPUGroupByMatchesCPU bounds it).
func TestGPUGroupByHolisticMatchesCPU(t *testing.T) {
	needGPU(t)
	host := groupFrame(1<<18+3, 5, 17)
	held := host.Persist(gpuarray.OnGPU())
	if err := held.Err(); err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{{"kc"}, {"ki", "kb"}, {"kw", "kc"}, {"kt"}} {
		want, err := host.GroupBy(keys...).Sorted().Agg(holisticAggs()...).Compute()
		if err != nil {
			t.Fatalf("keys %v: %v", keys, err)
		}
		for fi, f := range []*Frame{held, host} {
			what := fmt.Sprintf("keys %v, frame %d", keys, fi)
			got, err := f.GroupBy(keys...).Sorted().Agg(holisticAggs()...).Compute(gpuarray.OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			p := got.Path()
			if !strings.Contains(p, "sorted by (code, value) on the GPU") || strings.Contains(p, "aggregation on the host") {
				t.Fatalf("%s: Path %q", what, p)
			}
			sameFrames(t, what, got.Drop("vf_std"), want.Drop("vf_std"), 0)
			sameFrames(t, what, got.Select("vf_std"), want.Select("vf_std"), 1e-9)
		}
	}
}
