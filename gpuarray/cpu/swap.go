package cpu

import (
	"context"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// shortInner is the longest innermost axis walked with the next axis inside it instead: every
// instruction runs once per block and a row is at least one block, so a task of (m, 2) ran
// each step on blocks of two values (a weighted histogram's [value, weight] rows took 25x its
// unweighted time).
const shortInner = 4

// swapsInner reports whether a plain elementwise task walks its last two axes swapped.
func swapsInner(t *plan.Task) bool {
	r := len(t.Shape)
	return t.Kernel.Reduce == nil && t.Kernel.Call == nil && r >= 2 && t.Shape[r-1] >= 1 && t.Shape[r-1] <= shortInner && t.Shape[r-2] >= 64*t.Shape[r-1]
}

// executeSwapped runs a task with its last two axes swapped (long blocks), then puts the
// values back in the task's row-major order.
func executeSwapped(ctx context.Context, t *plan.Task) (*plan.Output, error) {
	o, err := execute(ctx, swapLast(t), nil)
	if err != nil {
		return nil, err
	}
	r := len(t.Shape)
	a, b := t.Shape[r-2], t.Shape[r-1] // the task's; o holds (..., b, a)
	src := o.Data
	out := dtype.Make(src.DType(), src.Len())
	plane := a * b
	if src.DType() == dtype.Float64 {
		s, d := src.Float64s(), out.Float64s()
		for p := 0; p+plane <= len(d); p += plane {
			sp, dp := s[p:p+plane], d[p:p+plane]
			for y := 0; y < b; y++ {
				col := sp[y*a : (y+1)*a]
				for x, v := range col {
					dp[x*b+y] = v
				}
			}
		}
	} else {
		// Other dtypes through Gather, a run of rows at a time (a bounded index).
		rows := max(1, (1<<16)/b)
		at := make([]int, min(a, rows)*b)
		for p := 0; p+plane <= out.Len(); p += plane {
			for x0 := 0; x0 < a; x0 += rows {
				x1 := min(a, x0+rows)
				for x := x0; x < x1; x++ {
					for y := 0; y < b; y++ {
						at[(x-x0)*b+y] = y*a + x
					}
				}
				n := (x1 - x0) * b
				dtype.Gather(out.Slice(p+x0*b, p+x0*b+n), src.Slice(p, p+plane), at[:n])
			}
		}
	}
	return &plan.Output{Shape: append([]int(nil), t.Shape...), Data: out}, nil
}

// swapLast returns t over the iteration space with its last two axes swapped: the kernel's
// shape, the leaves' maps (only leaves name iteration axes), the task's region.
func swapLast(t *plan.Task) *plan.Task {
	k := *t.Kernel
	r := len(k.Shape)
	sw := func(v []int) []int {
		v = append([]int(nil), v...)
		v[r-2], v[r-1] = v[r-1], v[r-2]
		return v
	}
	k.Shape = sw(k.Shape)
	k.Instrs = append([]plan.Instr(nil), k.Instrs...)
	for i := range k.Instrs {
		in := &k.Instrs[i]
		if !in.Code.Leaf() {
			continue
		}
		in.Map = append([]expr.AxisMap(nil), in.Map...)
		for d := range in.Map {
			switch in.Map[d].Axis {
			case r - 2:
				in.Map[d].Axis = r - 1
			case r - 1:
				in.Map[d].Axis = r - 2
			}
		}
	}
	u := *t
	u.Kernel = &k
	u.Offset = sw(t.Offset)
	u.Shape = sw(t.Shape)
	return &u
}
