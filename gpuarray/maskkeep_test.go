package gpuarray

import (
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestMaskOperandsStayOnDevicePlanning checks, without a GPU, the plan of a device selection's
// operands (takeMaskedOnDevice computes them with their results left on the GPU) for Nonzero
// and Argwhere of an array persisted on a GPU: the mask they flatten (x > 1, its own stage, as
// the operand of a reshape) is left on the device (keptForReshapes), so no stage of the
// computation is assembled in host memory; and the flattened mask's stage then reads it in
// place, joined on the device, with no block read from host memory. Before, that stage was
// collected into host memory and uploaded again task by task: at 20000² on an H200 the
// computation spent 11 s converting 4e8 values on the host (issue 32's mask-compaction stall).
func TestMaskOperandsStayOnDevicePlanning(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	x, _ := heldForPlanning(t, NewRandomState(42).StandardNormal(Shape(80, 80), Chunks(20, 20)), dev, false)
	for _, c := range []struct {
		name string
		r    *Array
	}{
		{"nonzero(x > 1)[0]", Nonzero(x.Gt(1))[0]},
		{"argwhere(x > 2)", Argwhere(x.Gt(2))},
	} {
		mk := c.r.n
		for mk.Kind != expr.KMask {
			mk = mk.Args[0]
		}
		if why := maskCompacts(mk); why != "" {
			t.Fatalf("%s: not compacted on the device: %s", c.name, why)
		}
		roots := []*expr.Node{mk.Args[0], mk.Args[1]}
		order := stageOrder(roots)
		kept := map[*expr.Node]*expr.Node{}
		for _, n := range order {
			if slices.Contains(roots, n) {
				continue // gpuResults keeps the roots
			}
			if !keptForReshapes(n, order, roots) {
				t.Errorf("%s: stage %v of shape %s would be assembled in host memory", c.name, n.Kind, expr.ShapeString(n.Shape))
				continue
			}
			// What runKeptStage leaves: the stage's values held on the GPU.
			cfg, err := configure([]ComputeOption{Inline()})
			if err != nil {
				t.Fatal(err)
			}
			vals, err := runStage(cfg, 0, n, map[*expr.Node]dtype.Slice{}, func(int) {})
			if err != nil {
				t.Fatal(err)
			}
			d, err := expr.NewData(vals, n.Shape, n.Chunks)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := heldForPlanning(t, &Array{n: d}, dev, cuda.Narrow(n.DType))
			kept[n] = h.n
		}
		if len(kept) == 0 {
			t.Fatalf("%s: no stage before the mask (the flattened x > 1): the test no longer covers it", c.name)
		}
		st, err := plan.Lower(len(order), mk.Args[1], map[*expr.Node]dtype.Slice{}, plan.Options{Held: heldOn(dev), LateGather: true, HeldOperands: true, Kept: kept})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		hostBlocks, heldBlocks := 0, 0
		for _, task := range st.Tasks {
			for _, b := range task.Inputs {
				switch {
				case !b.Data.IsNil():
					hostBlocks++
				case b.Held != nil:
					heldBlocks++
				}
			}
		}
		if hostBlocks > 0 || len(st.HostReads) > 0 || len(st.ReshapeReads) > 0 || heldBlocks != len(st.Tasks) {
			t.Errorf("%s: the mask's %d tasks read %d blocks from host memory and %d held on the GPU (host reads %v, reshape reads %+v)",
				c.name, len(st.Tasks), hostBlocks, heldBlocks, st.HostReads, st.ReshapeReads)
		}
	}
}

// TestEmptyStagesNotKeptForReshapes checks, without a GPU, that a stage of an empty array read
// by reshapes (a slice of an empty array raveled, an empty array repeated) is not left on the
// device for them (keptForReshapes), and that the tasks of a non-empty such stage compute its
// chunks in order (tasksAreChunks), as gpuSched.keep needs: on an H200 the empty ones failed
// TestGPUManipMatchesNumPy with "persist: task 0 is not chunk 0 (internal)".
func TestEmptyStagesNotKeptForReshapes(t *testing.T) {
	for _, shape := range [][]int{{0, 3}, {4, 6}} {
		x := NewRandomState(1).StandardNormal(Shape(shape...), Chunks(2, 3))
		for name, r := range map[string]*Array{"ravel x[::-1]": x.Slice(Every(-1)).Ravel(), "repeat": Repeat(x, 2)} {
			roots := []*expr.Node{r.n}
			order := stageOrder(roots)
			kept := 0
			for _, n := range order {
				if !keptForReshapes(n, order, roots) {
					continue
				}
				kept++
				if expr.Size(n.Shape) == 0 {
					t.Errorf("%s of %v: the empty stage %v is kept on the device", name, shape, n.Kind)
					continue
				}
				st, err := plan.Lower(0, n, map[*expr.Node]dtype.Slice{}, gpuPlanOptions())
				if err != nil {
					t.Fatal(err)
				}
				if !tasksAreChunks(n, st.Tasks) {
					t.Errorf("%s of %v: the kept stage's tasks are not its chunks", name, shape)
				}
			}
			if want := expr.Size(shape) > 0; (kept > 0) != want {
				t.Errorf("%s of %v: %d stages kept for reshapes, want some: %v", name, shape, kept, want)
			}
		}
	}
}
