package cuda

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// ErrNotKept says that RunPlanSumKeep does not combine this reduction on the device; the
// caller computes it as any other stage.
var ErrNotKept = errors.New("cuda: this reduction is not combined on the device")

// maxCombineLoads bounds the partials one thread of a combine kernel reads (the slices of a
// group's tasks together): the kernel is straight-line code.
const maxCombineLoads = 256

// RunPlanSumKeep runs the plan tasks of a sum or a mean over some axes on d and leaves each
// group's result on the device: groups[g] lists the tasks whose partials make result chunk g,
// in the order the host's combine takes them, and ptrs[g] is a new allocation of d's pool
// (the caller's) holding the chunk row-major over the kept axes, in the fused kernel's float64
// words. divisor is the number of elements reduced per result (a mean; 0 for a sum), and
// f32 rounds the result to float32. The partials stay on the device and one generated kernel
// combines them in the host's order (a task's slices summed pairwise as collectAxes does, a
// group's tasks pairwise as plan.Stage.Assemble does, then the division and the rounding), so
// the bits are those of the host's combine, without the partials' trip to the host and the
// result's back. It returns ErrNotKept, before running anything, for reductions it does not
// combine so (other reductions, several launches, more than maxCombineLoads partials per
// result).
func RunPlanSumKeep(ctx context.Context, d *Device, tasks []*plan.Task, groups [][]int, divisor float64, f32 bool) ([]driver.DevicePtr, error) {
	return runPlanCombine(ctx, d, tasks, groups, RSum, func(sl []int64) string { return ptx.CombineName(sl, divisor, f32) },
		func(version, target, name string, sl []int64) string {
			return ptx.CombinePTX(version, target, name, sl, divisor, f32)
		})
}

// RunPlanWelfordKeep is RunPlanSumKeep for a variance (std false) or a standard deviation over
// some axes: the combine kernel merges a task's slices' (count, mean, M2) in slice order as
// collectAxes does (MergeWelford), the group's tasks pairwise as plan.Stage.Assemble does
// (plan.Chan, the same steps), then divides M2 by the count, takes the square root for a
// standard deviation and rounds to float32 if f32, as Assemble does: the host's bits, without
// the partials' three words per slice going to the host and the result coming back.
func RunPlanWelfordKeep(ctx context.Context, d *Device, tasks []*plan.Task, groups [][]int, std, f32 bool) ([]driver.DevicePtr, error) {
	return runPlanCombine(ctx, d, tasks, groups, RWelford, func(sl []int64) string { return ptx.WelfordCombineName(sl, std, f32) },
		func(version, target, name string, sl []int64) string {
			return ptx.WelfordCombinePTX(version, target, name, sl, std, f32)
		})
}

// runPlanCombine is RunPlanSumKeep and RunPlanWelfordKeep: the partial reduction's tasks of
// reduction want, then per group one combine kernel (named by name, written by gen for the
// group's slice counts).
func runPlanCombine(ctx context.Context, d *Device, tasks []*plan.Task, groups [][]int, want Reduce, name func(sl []int64) string, gen func(version, target, name string, sl []int64) string) ([]driver.DevicePtr, error) {
	if len(tasks) == 0 || len(tasks) > MaxTasksPerLaunch || tasks[0].Kernel.Call != nil {
		return nil, ErrNotKept
	}
	k := tasks[0].Kernel
	s, leaves, err := Lower(k)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotKept, err)
	}
	if s.Kept == 0 || s.Reduce != want || s.AccLane() != ptx.LaneF {
		// Integer and complex sums (reduce_lanes.go) combine on the host.
		return nil, ErrNotKept
	}
	gts := make([]Task, len(tasks))
	cache := gatherCache{}
	for i, t := range tasks {
		if t.Kernel != k && t.Kernel.Key() != k.Key() {
			return nil, ErrNotKept
		}
		if gts[i], err = lowerTask(t, leaves, s.Leaves(), cache); err != nil {
			return nil, err
		}
		if err := gts[i].validate(s); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	if s, err = heldOn([]*Device{d}, s, gts); err != nil {
		return nil, err
	}
	ks, ns, ss := make([]int64, len(gts)), make([]int64, len(gts)), make([]int64, len(gts))
	offs := map[int]int64{}
	var slots, gridX int64
	for i := range gts {
		ks[i], ns[i] = axesShape(s, &gts[i])
		if ks[i] == 0 || ns[i] == 0 {
			return nil, ErrNotKept
		}
		ss[i] = axesSlices(s, ks[i], ns[i])
		gridX = max(gridX, axesGridX(s, ks[i], ss[i]))
		offs[i] = slots
		slots += ks[i] * ss[i]
	}
	if slots*int64(s.PartialWords()) > maxAxesWords {
		return nil, ErrNotKept
	}
	seen := make([]bool, len(gts))
	for _, g := range groups {
		var loads int64
		for _, i := range g {
			if i < 0 || i >= len(gts) || seen[i] || ks[i] != ks[g[0]] {
				return nil, fmt.Errorf("cuda: combine groups %v of %d tasks (internal)", groups, len(gts))
			}
			seen[i] = true
			loads += ss[i]
		}
		if len(g) == 0 || loads > maxCombineLoads {
			return nil, ErrNotKept
		}
	}
	ptrs := make([]driver.DevicePtr, len(groups))
	err = d.Do(ctx, func() error {
		fn, err := d.kernel(s)
		if err != nil {
			return err
		}
		up := newUploads(d)
		defer up.release()
		op, err := d.axesPartials(up, fn, "gpn_axes_"+s.Key(), s, gts, 0, ks, ns, ss, offs, slots, gridX, ptx.AxesDescWords(s.Rank, s.Leaves()), randomKeys(s), Options{})
		if err != nil {
			return err
		}
		// Groups of one shape (their tasks' slice counts) share a combine kernel.
		bySig := map[string][]int{}
		var sigs []string
		for gi, g := range groups {
			sl := make([]int64, len(g))
			for j, i := range g {
				sl[j] = ss[i]
			}
			sig := fmt.Sprint(sl)
			if _, ok := bySig[sig]; !ok {
				sigs = append(sigs, sig)
			}
			bySig[sig] = append(bySig[sig], gi)
		}
		for gi, g := range groups {
			p, err := d.pool.Alloc(uint64(ks[g[0]]) * 8)
			if err != nil {
				return err
			}
			ptrs[gi] = p
		}
		for _, sig := range sigs {
			gs := bySig[sig]
			g0 := groups[gs[0]]
			sl := make([]int64, len(g0))
			for j, i := range g0 {
				sl[j] = ss[i]
			}
			name := name(sl)
			cf, err := d.generated(name, func() (string, error) { return gen(d.lib.Version(), d.lib.Target(), name, sl), nil })
			if err != nil {
				return err
			}
			// Per group: K, the result's address, then each task's first partial slot.
			W := 2 + len(g0)
			desc := make([]uint64, W*len(gs))
			var maxK int64
			for j, gi := range gs {
				w := desc[j*W : (j+1)*W]
				g := groups[gi]
				w[0], w[1] = uint64(ks[g[0]]), uint64(ptrs[gi])
				for t, i := range g {
					w[2+t] = uint64(offs[i])
				}
				maxK = max(maxK, ks[g[0]])
			}
			dp, err := up.alloc(uint64(len(desc)) * 8)
			if err != nil {
				return err
			}
			if err := driver.MemcpyHtoD(dp, unsafe.Pointer(&desc[0]), uint64(len(desc))*8); err != nil {
				return fmt.Errorf("upload combine descriptors: %w", err)
			}
			grid := [3]uint32{uint32((maxK + BlockSize - 1) / BlockSize), uint32(len(gs)), 1}
			descArg, partsArg := uint64(dp), uint64(op)
			params := []unsafe.Pointer{unsafe.Pointer(&descArg), unsafe.Pointer(&partsArg)}
			lerr := cf.Launch(grid, [3]uint32{BlockSize, 1, 1}, 0, d.stream, params)
			if lerr == nil {
				lerr = d.stream.Synchronize()
			}
			if lerr != nil {
				return fmt.Errorf("kernel %s (grid %dx%dx1): %w", name, grid[0], grid[1], lerr)
			}
		}
		return nil
	})
	if err != nil {
		_ = d.Do(context.Background(), func() error {
			for _, p := range ptrs {
				if p != 0 {
					d.pool.Free(p)
				}
			}
			return nil
		})
		return nil, err
	}
	return ptrs, nil
}
