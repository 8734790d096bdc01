package gpuarray

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestHeldJoinsCountTowardsTheMemoryLimit: a task that reads a block spanning several chunks
// held on a GPU joins them into one buffer there (plan.HeldJoin), as large as the block's
// host copy that the task would otherwise read (float64, and integers and bools held in their
// own size). So each task needs the same bytes (plan.Task.Bytes) whether the GPU holds the
// array or not, and a memory limit that refuses the host read's tasks refuses the join's,
// saying the join is why. Before, a joined block counted 0 bytes: the limit did not see it.
func TestHeldJoinsCountTowardsTheMemoryLimit(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	rs := NewRandomState(5)
	x, gx := heldForPlanning(t, rs.StandardNormal(Shape(40, 30), Chunks(10, 30)), dev, false)
	xi, gxi := heldForPlanning(t, rs.Integers(-300, 300, Shape(40, 30), Chunks(10, 30), WithDType(Int16)), dev, true)
	xb, gxb := heldForPlanning(t, rs.StandardNormal(Shape(40, 30), Chunks(10, 30)).Gt(0), dev, true)
	m := rs.StandardNormal(Shape(12, 12), Chunks(12, 12)).Add(Eye(12, 12, 0, Chunks(12, 12)).Mul(30))
	hb, gb := heldForPlanning(t, rs.StandardNormal(Shape(12, 3), Chunks(5, 2)), dev, false)
	hy, gy := heldForPlanning(t, rs.StandardNormal(Shape(30, 20), Chunks(12, 7)), dev, false)
	cases := []struct {
		what string
		r    *Array
		g    *gpuChunks
	}{
		{"sort across chunks", Sort(x, 0), gx},
		{"sort across chunks of int16 held in 2 bytes", Sort(xi, 0), gxi},
		{"cumulative sum across chunks of bools held in 1 byte", CumulativeSum(xb, 0, false), gxb},
		{"solve for held right-hand sides in several chunks", Solve(m, hb), gb},
		{"matmul by a held b", MatMul(rs.StandardNormal(Shape(40, 30), Chunks(10, 30)), hy), gy},
	}
	for _, c := range cases {
		if err := c.r.Err(); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		host, err := planBytes(c.r, plan.Options{}, nil)
		if err != nil {
			t.Fatalf("%s, read on the host: %v", c.what, err)
		}
		limit := int64(0)
		for _, st := range host {
			limit = max(limit, slices.Max(st))
		}
		joins := 0
		held, err := planBytes(c.r, plan.Options{Held: heldOn(dev), LateGather: true, HeldOperands: true, MemoryLimit: limit}, func(task *plan.Task) {
			for i, b := range task.Inputs {
				if b.Held == nil || b.Held.Join == nil || !heldBy(b.Held, c.g) {
					continue
				}
				joins++
				if task.JoinBytes(i) <= 0 {
					t.Errorf("%s: task %d joins a block of shape %v and counts %d bytes for it", c.what, task.Index, b.Shape, task.JoinBytes(i))
				}
			}
		})
		if err != nil {
			t.Fatalf("%s, held, with the host read's memory limit of %d bytes: %v", c.what, limit, err)
		}
		if joins == 0 {
			t.Fatalf("%s: no task joins blocks of the held array", c.what)
		}
		if !slices.EqualFunc(host, held, slices.Equal) {
			t.Errorf("%s: task bytes read on the host %v, joined on the GPU %v", c.what, host, held)
		}
		_, err = planBytes(c.r, plan.Options{Held: heldOn(dev), LateGather: true, HeldOperands: true, MemoryLimit: limit - 1}, nil)
		if err == nil || !strings.Contains(err.Error(), "memory limit") || !strings.Contains(err.Error(), "to join blocks that span several chunks") {
			t.Errorf("%s: held, with a limit of %d bytes, one less than a task needs: error %v, want a memory limit naming the join", c.what, limit-1, err)
		}
	}
}

// planBytes lowers r's stages with opt, each stage's values computed on the CPU for the next,
// and returns the bytes of each stage's tasks (plan.Task.Bytes), after calling each on every
// task when it is set.
func planBytes(r *Array, opt plan.Options, each func(*plan.Task)) ([][]int64, error) {
	cfg, err := configure([]ComputeOption{Inline()})
	if err != nil {
		return nil, err
	}
	var out [][]int64
	done := map[*expr.Node]dtype.Slice{}
	for id, n := range stageOrder([]*expr.Node{r.n}) {
		st, err := plan.Lower(id, n, done, opt)
		if err != nil {
			return nil, err
		}
		var bytes []int64
		for _, task := range st.Tasks {
			if each != nil {
				each(task)
			}
			bytes = append(bytes, task.Bytes())
		}
		out = append(out, bytes)
		if done[n], err = runStage(cfg, id, n, done, func(int) {}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TestLateGathersCountTowardsTheMemoryLimit: a take's block that the executor gathers inside
// the task (Options.LateGather: a GPU on the device, the CPU in LoadInputs) counts the values
// gathered, as the block gathered while planning does, so both plans need the same bytes per
// task and the same memory limit refuses both. Before, a late gather counted 0 bytes.
func TestLateGathersCountTowardsTheMemoryLimit(t *testing.T) {
	rs := NewRandomState(6)
	x := rs.StandardNormal(Shape(40, 30), Chunks(10, 30))
	idx := rs.Integers(0, 40, Shape(25), Chunks(25))
	for what, r := range map[string]*Array{
		"take of rows":    Take(x, idx, 0).Add(1),
		"take along rows": TakeAlongAxis(x, rs.Integers(0, 40, Shape(40, 30), Chunks(20, 30)), 0).Mul(2),
	} {
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		early, err := planBytes(r, plan.Options{}, nil)
		if err != nil {
			t.Fatalf("%s, gathered while planning: %v", what, err)
		}
		limit := int64(0)
		for _, st := range early {
			limit = max(limit, slices.Max(st))
		}
		gathers := 0
		late, err := planBytes(r, plan.Options{LateGather: true, MemoryLimit: limit}, func(task *plan.Task) {
			for _, b := range task.Inputs {
				if b.Gather != nil {
					gathers++
				}
			}
		})
		if err != nil {
			t.Fatalf("%s, gathered late, under the early plan's limit of %d bytes: %v", what, limit, err)
		}
		if gathers == 0 {
			t.Fatalf("%s: no task gathers late", what)
		}
		if !slices.EqualFunc(early, late, slices.Equal) {
			t.Errorf("%s: task bytes gathered while planning %v, late %v", what, early, late)
		}
		if _, err := planBytes(r, plan.Options{LateGather: true, MemoryLimit: limit - 1}, nil); err == nil || !strings.Contains(err.Error(), "memory limit") {
			t.Errorf("%s: gathered late under a limit of %d bytes, one less than a task needs: error %v, want the memory limit's", what, limit-1, err)
		}
	}
}
