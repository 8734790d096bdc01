package gpuarray

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// The NumPy property cases of manipulation and creation, computed by the GPU backend. Their
// values are multiples of 1/64 of modest size, so sums are exact and every result must equal
// NumPy's bit for bit.

func TestGPUManipMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, manipChecks(2, 20), OnGPU())
}

func TestGPUCreateMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, createChecks(2, 20), OnGPU())
}

func TestGPUIndexMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, indexChecks(2, 20), OnGPU())
}

func TestGPUPrintsLikeCPU(t *testing.T) {
	needGPU(t)
	x := Tile(Arange(0, 12, 1).Reshape(3, 4), 1, 2)
	g, err := x.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	c, err := x.Compute(Inline())
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != c.String() {
		t.Errorf("GPU:\n%s\nCPU:\n%s", g, c)
	}
}

// TestTakeStageIsGatheredOnTheHost: the stage that reads a take says its values were gathered
// on the host (what the GPU scheduler reports in Path); a stage without one does not.
func TestTakeStageIsGatheredOnTheHost(t *testing.T) {
	x := Arange(0, 12, 1).Reshape(3, 4)
	y := Take(x, FromSliceInt64([]int64{2, 0}), 0).Add(1)
	done := map[*expr.Node]dtype.Slice{}
	order := plan.Order(y.n)
	for id, n := range order {
		st, err := plan.Lower(id, n, done, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if last := id == len(order)-1; st.Gathered != last {
			t.Errorf("stage %d of %d (%v): Gathered %v", id, len(order), n.Kind, st.Gathered)
		}
		outs := make([]*plan.Output, len(st.Tasks))
		for i, task := range st.Tasks {
			if outs[i], err = cpu.Execute(context.Background(), task); err != nil {
				t.Fatal(err)
			}
		}
		if done[n], err = st.Assemble(outs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGPUTakeSaysHostGather: with OnGPU, a take's gather is named in Path.
func TestGPUTakeSaysHostGather(t *testing.T) {
	needGPU(t)
	y := Take(Arange(0, 12, 1).Reshape(3, 4), FromSliceInt64([]int64{2, 0}), 0).Add(1)
	c, err := y.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Path(); !strings.Contains(p, "host gather") {
		t.Errorf("Path %q does not name the host gather", p)
	}
	v, err := c.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{9, 10, 11, 12, 1, 2, 3, 4}; fmt.Sprint(v) != fmt.Sprint(want) {
		t.Errorf("take: %v, want %v", v, want)
	}
}
