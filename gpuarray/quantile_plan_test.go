package gpuarray

import (
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestQuantileSortKeepPlanning (planning, no GPU): the sort under Quantile, Median and
// Quantiles (a sort that keeps only the ranks read, expr.Call.Keep) writes its output into
// device memory on a GPU, one task's output per chunk of the result, for float64, float32 and
// integer inputs along any axis and over all of a chunked array: the ranks are gathered from
// the device, not assembled on the host.
func TestQuantileSortKeepPlanning(t *testing.T) {
	x := NewRandomState(9).StandardNormal(Shape(40, 30), Chunks(10, 10))
	for _, c := range []struct {
		name string
		a    *Array
	}{
		{"median(x)", Median(x)},
		{"median(x, 1)", Median(x, 1)},
		{"quantile(x, 0.3, 0)", Quantile(x, 0.3, 0)},
		{"quantiles(x, [0.1 0.9], 1)", Quantiles(x, []float64{0.1, 0.9}, 1)},
		{"percentile(float32, 90)", Percentile(x.AsType(Float32), 90)},
		{"median(int32, 0)", Median(x.Mul(10).AsType(Int32), 0)},
	} {
		if err := c.a.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := firstCall(c.a.n)
		if n == nil || n.Call.Fn != expr.FnSort || len(n.Call.Keep) == 0 {
			t.Fatalf("%s: no sort of kept ranks in the graph", c.name)
		}
		st, err := plan.Lower(0, n, map[*expr.Node]dtype.Slice{}, gpuPlanOptions())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if keep, why := planCallKeep(n, st); !keep {
			t.Errorf("%s: the sort's output is not kept on the device: %s", c.name, why)
			continue
		}
		if _, chunk, _, _, ok := callChunks(n, st); !ok || len(chunk) != expr.NumChunks(n.Chunks) {
			t.Errorf("%s: the tasks' outputs are not the result's chunks", c.name)
		}
	}
}
