package gpuarray

import (
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestProductTasksGetTheirPanel: a product's tasks are given only the column chunk of b that
// their panel product reads (so a worker is never sent all of b), with its values.
func TestProductTasksGetTheirPanel(t *testing.T) {
	const k, n = 30, 70
	yv := make([]float64, k*n)
	for i := range yv {
		yv[i] = float64(i)
	}
	x := NewRandomState(3).StandardNormal(Shape(50, k), Chunks(20, 10))
	y := FromSlice(yv, Shape(k, n), Chunks(10, 25))
	join := MatMul(x, y).n
	if join.Kind != expr.KConcat || len(join.Args) != 3 {
		t.Fatalf("MatMul of y in 3 column chunks: a %v of %d nodes", join.Kind, len(join.Args))
	}
	for j, p := range join.Args {
		off, w := 25*j, min(25, n-25*j)
		st, err := plan.Lower(0, p, map[*expr.Node]dtype.Slice{}, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Tasks) != 3 {
			t.Fatalf("panel %d: %d tasks, want one per row chunk of x", j, len(st.Tasks))
		}
		for _, task := range st.Tasks {
			ops := task.Operands()
			if len(ops) != 1 || ops[0].Len() != k*w {
				t.Fatalf("panel %d: a task's operand holds %d values, want %d x %d", j, ops[0].Len(), k, w)
			}
			got := ops[0].Float64s()
			for r := range k {
				for c := range w {
					if got[r*w+c] != yv[r*n+off+c] {
						t.Fatalf("panel %d: operand (%d, %d) is %v, want y's (%d, %d) = %v", j, r, c, got[r*w+c], r, off+c, yv[r*n+off+c])
					}
				}
			}
		}
	}
}
