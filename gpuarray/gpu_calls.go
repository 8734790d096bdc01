package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Call stages whose outputs stay on the device (issue 32): a call's output, for inputs on a
// GPU, is written into device memory where the call ran, one allocation per chunk of the
// result, and later stages read it there as they read a persisted array.

// callKeeps says why a GPU compute would not leave the output of call node n, planned as
// kernel k, on the device, or "" when it does (cuda.KeepsCall, and the holding rules of
// gpuChunks). It needs no GPU: the planning tests call it.
func callKeeps(k *plan.Kernel, n *expr.Node) string {
	if n.Kind != expr.KCall || k == nil || k.Call == nil {
		return "not a call"
	}
	if why := cuda.KeepsCall(k); why != "" {
		return why
	}
	if !narrowStore && cuda.Narrow(n.DType) && k.Call.Fn.Sorts() {
		return "narrow arrays are kept in 8-byte words (a test's setting)"
	}
	if k.Call.DType != n.DType {
		return fmt.Sprintf("%v gives %v values for a %v array (internal)", k.Call.Fn, k.Call.DType, n.DType)
	}
	return ""
}

// callChunks maps the tasks of call stage st to the chunks of n they compute (their output
// boxes, Call.OutOffset and OutShape): chunk[i] is task i's, row[i] its row chunk. ok is false
// unless every chunk of n is one task's output.
func callChunks(n *expr.Node, st *plan.Stage) (grid chunkGrid, chunk, row []int, offs [][]int, ok bool) {
	grid = newChunkGrid(n.Shape, n.Chunks)
	nc := expr.NumChunks(n.Chunks)
	if len(st.Tasks) != nc || len(n.Shape) == 0 {
		return grid, nil, nil, nil, false
	}
	c := st.Kernel.Call
	seen := make([]bool, nc)
	for _, t := range st.Tasks {
		off := c.OutOffset(t.Offset, t.Index)
		shp := c.OutShape(t.Shape)
		if len(off) != len(n.Shape) || expr.Size(shp) == 0 {
			return grid, nil, nil, nil, false
		}
		ci, origin, cs := grid.within(off, lastIndex(off, shp))
		if ci < 0 || seen[ci] || !slices.Equal(origin, off) || !slices.Equal(cs, shp) {
			return grid, nil, nil, nil, false
		}
		seen[ci] = true
		chunk = append(chunk, ci)
		row = append(row, sort.SearchInts(grid.bounds[0], off[0]+1)-1)
		offs = append(offs, off)
	}
	return grid, chunk, row, offs, true
}

// planCallKeep is the planning decision for a call stage of a GPU compute (tests ask it with no
// GPU): whether the output of stage st, which materializes n, stays on the device, or why not.
func planCallKeep(n *expr.Node, st *plan.Stage) (bool, string) {
	if !oneKernel(st) || st.Kernel.Call == nil {
		return false, "not one call kernel"
	}
	if st.Gathered || cuda.HostGathers(st) {
		return false, "a take or mask the call reads is gathered on the host"
	}
	if why := callKeeps(st.Kernel, n); why != "" {
		return false, why
	}
	if _, _, _, _, ok := callChunks(n, st); !ok {
		return false, "a task's output is not one chunk of the result"
	}
	return true, ""
}

// keepCall runs call stage st, which materializes n, with each task's output left on the GPU
// that ran it (cuda.RunCallsKeep): one allocation per chunk of n. Tasks that read blocks held
// on a GPU run there (several GPUs: splitByDevice, chunks held on two GPUs copied peer to peer
// where that is on); the others are dealt by row chunk, as Persist deals chunks. It returns an
// error wrapping cuda.ErrNotKept, having run nothing, for a stage it does not run so.
func (s *gpuSched) keepCall(ctx context.Context, n *expr.Node, st *plan.Stage, progress func(int)) (*gpuChunks, error) {
	if s == nil || len(s.devs) == 0 {
		return nil, cuda.ErrNotKept
	}
	if ok, why := planCallKeep(n, st); !ok {
		return nil, fmt.Errorf("%w: %s", cuda.ErrNotKept, why)
	}
	grid, chunk, row, offs, _ := callChunks(n, st)
	t0 := time.Now()
	c := st.Kernel.Call
	s.libStep(fmt.Sprintf("%v on %s", c.Fn, cuda.CallLibrary(c.Fn)))
	byDev := map[*cuda.Device][]int{}
	var order []*cuda.Device
	place := func(d *cuda.Device, i int) {
		if _, ok := byDev[d]; !ok {
			order = append(order, d)
		}
		byDev[d] = append(byDev[d], i)
	}
	if len(s.devs) > 1 && plan.ReadsHeld(st.Tasks) {
		groups, copies, err := s.splitByDevice(ctx, st.Tasks)
		defer copies.free()
		if err != nil {
			return nil, err
		}
		for dev, idx := range groups {
			for _, i := range idx {
				d := s.device(dev)
				if d == nil {
					d = s.devs[row[i]%len(s.devs)]
				}
				place(d, i)
			}
		}
	} else {
		for i := range st.Tasks {
			place(s.devs[row[i]%len(s.devs)], i)
		}
	}
	nc := len(chunk)
	g := &gpuChunks{grid: grid, ptrs: make([]driver.DevicePtr, nc), devs: make([]*cuda.Device, nc), offs: make([][]int, nc), dt: n.DType, label: "on"}
	g.idle.L = &g.mu
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(order))
	narrow := make([]bool, 0, nc)
	for di, d := range order {
		idx := byDev[d]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := make([]*plan.Task, len(idx))
			for j, i := range idx {
				sub[j] = st.Tasks[i]
			}
			outs, err := cuda.RunCallsKeep(ctx, d, sub)
			if err != nil {
				errs[di] = fmt.Errorf("gpu %d: %w", d.Info.Index, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			own := devAllocs{dev: d}
			for j, i := range idx {
				if outs[j].Note != "" {
					s.libStep(fmt.Sprintf("%v on %s: %s", c.Fn, cuda.CallLibrary(c.Fn), outs[j].Note))
				}
				ci := chunk[i]
				g.ptrs[ci], g.devs[ci], g.offs[ci] = outs[j].Ptr, d, offs[i]
				own.ptrs = append(own.ptrs, outs[j].Ptr)
				narrow = append(narrow, outs[j].Narrow)
			}
			g.allocs = append(g.allocs, own)
			progress(len(idx))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		g.freeNow()
		return nil, err
	}
	for _, nw := range narrow[1:] {
		if nw != narrow[0] {
			g.freeNow()
			return nil, fmt.Errorf("%v: the outputs kept on the GPUs are not all in one layout (internal)", c.Fn)
		}
	}
	g.narrow = narrow[0]
	g.addCleanup()
	cuda.Trace("%v of %s: %d chunks left on %s in %.4f s", c.Fn, expr.ShapeString(n.Shape), nc, g.Where(), time.Since(t0).Seconds())
	return g, nil
}
