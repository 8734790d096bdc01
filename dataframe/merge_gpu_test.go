package dataframe_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestMergeAndSortOnGPU computes merges and sorts of frames whose columns are gpuarray
// arrays with OnGPU and checks them against the CPU: the key and value columns are computed
// on the GPU, the join there too (the device hash join), the sort on the host, which Path
// names.
func TestMergeAndSortOnGPU(t *testing.T) {
	if err := gpuarray.GPUError(); err != nil {
		t.Skip("no GPU:", err)
	}
	x := gpuarray.Arange(0, 20000, 1, gpuarray.Chunks(5000))
	l := dataframe.FromArrays([]string{"x", "v"}, x, x.Mul(3)).Assign("k", dataframe.Col("x").Mod(997).AsType(dataframe.Int64)).Drop("x")
	y := gpuarray.Arange(0, 3000, 1, gpuarray.Chunks(1000))
	r := dataframe.FromArrays([]string{"y", "w"}, y.Mul(7), y).Assign("k", dataframe.Col("y").Mod(1500).AsType(dataframe.Int64)).Drop("y")
	for _, how := range []string{"inner", "left", "right", "outer", "semi", "anti"} {
		for _, bc := range []int{0, dataframe.DefaultBroadcastRows} {
			m := dataframe.Merge(l.Assign("v2", dataframe.Col("v").Add(1)), r, dataframe.On("k"), dataframe.How(how), dataframe.BroadcastRows(bc))
			cpu := canonicalRows(t, m)
			g, err := m.Compute(gpuarray.OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			if got := canonicalRows(t, g); !slices.Equal(got, cpu) {
				t.Fatalf("%s broadcast %d: GPU %d rows, CPU %d", how, bc, len(got), len(cpu))
			}
			if !strings.Contains(g.Path(), "device hash join on gpu") || !strings.Contains(g.Path(), "computed on gpu") {
				t.Fatalf("%s: path %q", how, g.Path())
			}
		}
	}
	s := l.SortValues([]string{"k", "v"}, dataframe.Ascending(false, true))
	cpu, err := s.Int64s("v")
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := s.Int64s("v", gpuarray.OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cpu, gpu) {
		t.Fatal("GPU sort differs from the CPU's")
	}
}
