package gpuarray

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// lowerCheck is a scheduler that lowers every kernel it is given to the GPU (cuda.Lower and
// the PTX generator, with the real device library) and fails on any that would fall back to
// the host; it then runs the tasks on the CPU so the result can be checked too.
type lowerCheck struct {
	lib     string
	kernels map[string]bool
}

func (c *lowerCheck) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	for _, t := range tasks {
		key := t.Kernel.Key()
		if !c.kernels[key] {
			spec, _, err := cuda.Lower(t.Kernel)
			if err != nil {
				return nil, fmt.Errorf("host fallback for %s: %w", describeKernel(t.Kernel), err)
			}
			if _, _, err := cuda.GeneratePTX(spec, c.lib); err != nil {
				return nil, fmt.Errorf("PTX of %s: %w", describeKernel(t.Kernel), err)
			}
			c.kernels[key] = true
		}
	}
	return engine.Inline{}.Run(ctx, tasks, done)
}

// TestPropertySetLowersToTheGPU: every kernel of the property-test set (random fused graphs,
// reductions over random axes, range and data leaves, float32) lowers to a GPU kernel, so the
// GPU backend runs none of them on the host. It needs no GPU.
func TestPropertySetLowersToTheGPU(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	c := &lowerCheck{lib: string(lib), kernels: map[string]bool{}}
	r := rand.New(rand.NewPCG(9, 13))
	partial := 0
	for trial := 0; trial < 300; trial++ {
		rs := NewRandomState(int64(trial))
		x := randExpr(r, rs)
		if r.IntN(2) == 0 {
			x = randReduce(r, x)
			if len(x.n.Axes) < len(x.n.Args[0].Shape) {
				partial++
			}
		}
		got, err := x.ToSlice(On(c))
		if err != nil {
			t.Fatalf("trial %d: %v: %v", trial, x, err)
		}
		matchReference(t, trial, x, got, true)
	}
	if partial < 30 {
		t.Fatalf("only %d partial reductions in the set", partial)
	}
	t.Logf("%d kernels lowered, %d partial reductions", len(c.kernels), partial)
}

// TestShortRunsLowerToTheShortWalk: the op table's reshape row and other partial reductions
// over runs of at most 32 elements (a middle axis of 2 or 10, an innermost one of 20) lower,
// from the array through the planner, to the short walk (a thread per kept element); the sums
// and maxima among them, as the block walk's of one slice, to tasks whose partials are their
// values, left on the device; longer runs keep the block walk. It needs no GPU.
func TestShortRunsLowerToTheShortWalk(t *testing.T) {
	x := NewRandomState(1).StandardNormal(Shape(400, 400), Chunks(100, 100))
	for _, c := range []struct {
		name        string
		a           *Array
		short, kept bool
	}{
		{"sum(x.reshape(200, 2, 400), 1)", x.Reshape(200, 2, 400).Sum(1), true, true},
		{"max(x.reshape(40, 10, 400), 1)", x.Reshape(40, 10, 400).Max(1), true, true},
		{"std(x.reshape(400, 20, 20), 2)", x.Reshape(400, 20, 20).Std(2), true, false},
		{"sum(x.reshape(10, 40, 400), 1)", x.Reshape(10, 40, 400).Sum(1), false, true},
	} {
		st, err := plan.Lower(0, c.a.n, map[*expr.Node]dtype.Slice{}, plan.Options{MemoryLimit: 1 << 30})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s, _, err := cuda.Lower(st.Kernel)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.Short != c.short || s.Kept == 0 {
			t.Fatalf("%s: short walk %v, want %v (kept axes %d, rows %v)", c.name, s.Short, c.short, s.Kept, s.Rows)
		}
		if kept := cuda.KeepsPartials(st.Tasks) == nil && partialsStay(c.a.n); kept != c.kept {
			t.Fatalf("%s: partials kept as values %v, want %v", c.name, kept, c.kept)
		}
	}
}
