package gpuarray

import (
	"context"
	"os"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// kernelLog is a scheduler that keeps the kernels it is given and runs their tasks on the CPU.
type kernelLog struct{ kernels []*plan.Kernel }

func (c *kernelLog) plansForGPU() {}

func (c *kernelLog) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	for i, t := range tasks {
		if i == 0 || t.Kernel != tasks[i-1].Kernel {
			c.kernels = append(c.kernels, t.Kernel)
		}
	}
	return engine.Inline{}.Run(ctx, tasks, done)
}

// TestStoredMirrorLowering: the planner marks the two reads of one stored array in x + x.T as
// one array (Instr.Alias), not those of x + y.T, and the GPU lowering mirrors the full sum of
// the first (both inputs read in the regenerated mirror's element order, not tiled) and of x
// regenerated unless GPUNOTES_PTX_MIRROR=0, and never the second.
func TestStoredMirrorLowering(t *testing.T) {
	const n = 70
	data := make([]float64, n*n)
	for i := range data {
		data[i] = float64(i%13) - 6
	}
	x := FromSlice(data, Shape(n, n), Chunks(40, 40))
	y := FromSlice(append([]float64(nil), data...), Shape(n, n), Chunks(40, 40))
	z := NewRandomState(3).StandardNormal(Shape(n, n), Chunks(40, 40))
	mirrored := func(a *Array) (*cuda.Spec, []plan.Instr) {
		t.Helper()
		c := &kernelLog{}
		if _, err := a.Compute(On(c)); err != nil {
			t.Fatal(err)
		}
		k := c.kernels[len(c.kernels)-1]
		s, _, err := cuda.Lower(k)
		if err != nil {
			t.Fatal(err)
		}
		return s, k.Instrs
	}
	sx, in := mirrored(x.Add(x.T()).Sum())
	if in[0].Code != plan.Input || in[1].Code != plan.Input || in[0].Alias != 0 || in[1].Alias != 1 {
		t.Fatalf("x + x.T: the inputs' aliases are %d and %d, want 0 and 1 (one array)", in[0].Alias, in[1].Alias)
	}
	sy, in := mirrored(x.Add(y.T()).Sum())
	if in[1].Alias != 0 {
		t.Errorf("x + y.T: the second input is an alias of instruction %d", in[1].Alias-1)
	}
	if sy.Mirror != nil || !sy.Tile {
		t.Errorf("x + y.T: Mirror %v, Tile %v; want none, tiled", sy.Mirror, sy.Tile)
	}
	sz, _ := mirrored(z.Add(z.T()).Sum())
	if on := os.Getenv("GPUNOTES_PTX_MIRROR") != "0"; (sx.Mirror != nil) != on || (sz.Mirror != nil) != on || sx.Tile == on {
		t.Errorf("x + x.T stored: Mirror %v, Tile %v; regenerated: Mirror %v", sx.Mirror, sx.Tile, sz.Mirror)
	}
}
