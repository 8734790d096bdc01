package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// gpuResults keeps the array results of one GPU compute in device memory, as held linear
// algebra results are: an elementwise result is written there by its kernels (never copied
// to the host); a reduction's result, whose per-chunk partials the host combines in the fixed
// order (as for full reductions), is put there once combined. Later computations read them in
// place; their values come to the host when asked for (ToSlice, printing, Compute on the CPU).
type gpuResults struct {
	g      *gpuSched
	stay   map[*expr.Node]bool   // roots whose results stay on the device
	direct []*expr.Node          // stay roots computed straight into device memory
	host   map[*expr.Node]string // roots left in host memory, and why (for Path)
	// notKept: call roots whose outputs were assembled on the host, and why (keepCall)
	notKept map[*expr.Node]string
}

// staysOnDevice reports whether a GPU compute leaves root's result on the device: arrays of
// rank >= 1 (not scalars, not data already). The devices hold every dtype exactly, in the
// fused kernel's words (cuda.EncodeWords).
func staysOnDevice(root *expr.Node) bool {
	return root.Kind != expr.KData && len(root.Shape) > 0 && expr.Size(root.Shape) > 0
}

// fitsOnDevice reports whether results of bytes (the kernel's words) may stay on devices with
// avail bytes free: half of it at most, so that later work has room.
func fitsOnDevice(bytes int64, avail uint64) bool {
	return bytes >= 0 && uint64(bytes) <= avail/2
}

func newGPUResults(g *gpuSched, roots []*expr.Node) *gpuResults {
	r := &gpuResults{g: g, stay: map[*expr.Node]bool{}, host: map[*expr.Node]string{}, notKept: map[*expr.Node]string{}}
	var bytes int64
	for _, n := range roots {
		if staysOnDevice(n) && !r.stay[n] {
			r.stay[n] = true
			bytes += expr.Size(n.Shape) * 8 * int64(cuda.Words(n.DType))
		}
	}
	if len(r.stay) == 0 {
		return r
	}
	free := func() (avail uint64) {
		for _, d := range g.devs {
			avail += available(context.Background(), d)
		}
		return avail
	}
	avail := free()
	if !fitsOnDevice(bytes, avail) {
		// Results nobody holds any more (an earlier result of a loop) give their memory back
		// once collected.
		for _, d := range g.devs {
			_ = d.Do(context.Background(), func() error { d.Pool().Reclaim(); return nil })
		}
		avail = free()
	}
	if !fitsOnDevice(bytes, avail) {
		var limit uint64
		for _, d := range g.devs {
			_ = d.Do(context.Background(), func() error { limit += d.Pool().Limit(); return nil })
		}
		why := residencyNote(bytes, avail, limit)
		for n := range r.stay {
			r.host[n] = why
		}
		r.stay = map[*expr.Node]bool{}
	}
	return r
}

// residencyNote says why results of bytes were left in host memory: with avail bytes free in
// the GPUs' pools (of limit bytes in all), after the arrays nobody holds gave theirs back, they
// would take more than half of what is free (fitsOnDevice), which later work needs.
func residencyNote(bytes int64, avail, limit uint64) string {
	held := limit - min(limit, avail)
	return fmt.Sprintf("result in main memory: the results (%.3g GB) may take at most half of the GPUs' free memory, %.3g GB of %.3g GB free (arrays still held on the GPUs use %.3g GB; Release the ones you no longer need)",
		float64(bytes)/1e9, float64(avail)/1e9, float64(limit)/1e9, float64(held)/1e9)
}

// stages removes from order the roots computed straight into device memory (elementwise and
// call results, reductions whose partials may be their values (see partialsStay), and sums and
// means over some axes on one GPU, their partials combined on the device (see sumOnDevice)),
// which keep computes afterwards. A stage that reads an elementwise one computes it again in
// its own kernel; a reduction that another root reads stays in order (its values on the host).
func (r *gpuResults) stages(order []*expr.Node) []*expr.Node {
	var out []*expr.Node
	for _, n := range order {
		// A call another root reads stays in order too: runOrder keeps its output on the device
		// (runCallStage) for both, and keep takes it from there.
		if r.stay[n] && (n.Kind != expr.KReduce && n.Kind != expr.KCall || (n.Kind == expr.KCall || partialsStay(n) || r.sumOnDevice(n)) && !readByOthers(n, order)) {
			r.direct = append(r.direct, n)
			continue
		}
		out = append(out, n)
	}
	return out
}

// sumOnDevice reports whether keep may combine reduction n on the device (keepSum): a float
// sum, mean, variance or standard deviation over some axes on one GPU.
func (r *gpuResults) sumOnDevice(n *expr.Node) bool {
	switch n.Red {
	case expr.Sum, expr.Mean:
	case expr.Var, expr.Std:
		if !welfordKeep {
			return false
		}
	default:
		return false
	}
	return r.g != nil && len(r.g.devs) == 1 && (n.DType == dtype.Float64 || n.DType == dtype.Float32) &&
		len(n.Args) == 1 && len(n.Axes) < len(n.Args[0].Shape)
}

// welfordKeep lets keepSum combine variances and standard deviations over some axes on the
// device (cuda.RunPlanWelfordKeep); GPUNOTES_GPU_WELFORD_KEEP=0 combines them on the host.
var welfordKeep = os.Getenv("GPUNOTES_GPU_WELFORD_KEEP") != "0"

// partialsStay reports whether a reduction may leave its result on the device as its tasks'
// partials, with no combine on the host: a float64 sum, min or max over axes that each lie
// in one chunk of the operand (one task per result chunk). keep makes sure of the rest
// (cuda.KeepsPartials: one slice per element) and otherwise runs the reduction as a stage.
// A large result (a reduction over a short axis) is then never downloaded and assembled.
func partialsStay(n *expr.Node) bool {
	if n.Kind != expr.KReduce || n.DType != dtype.Float64 || len(n.Args) != 1 || len(n.Axes) >= len(n.Args[0].Shape) {
		return false
	}
	switch n.Red {
	case expr.Sum, expr.Min, expr.Max:
	default:
		return false
	}
	for _, ax := range n.Axes {
		if len(n.Args[0].Chunks[ax]) != 1 {
			return false
		}
	}
	return true
}

// keepSum computes the sum, mean, variance or standard deviation n (stage st) with its
// partials combined on the GPU (cuda.RunPlanSumKeep, cuda.RunPlanWelfordKeep): result chunk by
// result chunk, in the order of the host's combine (plan.Stage.Assemble), so the bits are
// those of a result combined on the host and put back.
// It returns cuda.ErrNotKept when the stage is not one it runs so.
func (r *gpuResults) keepSum(cfg computeConfig, n *expr.Node, st *plan.Stage, progress func(int)) (*gpuChunks, error) {
	if !oneKernel(st) || st.Gathered || cuda.HostGathers(st) || st.Kernel.Reduce == nil {
		return nil, cuda.ErrNotKept
	}
	red := st.Kernel.Reduced()
	grid := newChunkGrid(n.Shape, n.Chunks)
	nc := expr.NumChunks(n.Chunks)
	// The tasks of each result chunk (kept axes' corner), in task order, as Assemble groups them.
	byCorner := map[string]int{}
	var groups [][]int
	var chunkOf []int
	var offs [][]int
	for i, t := range st.Tasks {
		var off, shp []int
		for k := range t.Offset {
			if !red[k] {
				off, shp = append(off, t.Offset[k]), append(shp, t.Shape[k])
			}
		}
		key := fmt.Sprint(off)
		gi, ok := byCorner[key]
		if !ok {
			if len(off) != len(n.Shape) {
				return nil, cuda.ErrNotKept
			}
			ci, origin, shape := grid.within(off, lastIndex(off, shp))
			if ci < 0 || !slices.Equal(origin, off) || !slices.Equal(shape, shp) {
				return nil, cuda.ErrNotKept // a task's kept box is not one chunk of the result
			}
			gi = len(groups)
			byCorner[key] = gi
			groups, chunkOf, offs = append(groups, nil), append(chunkOf, ci), append(offs, off)
		}
		groups[gi] = append(groups[gi], i)
	}
	if len(groups) != nc {
		return nil, cuda.ErrNotKept
	}
	divisor := 0.0
	if n.Red == expr.Mean {
		total := int64(1)
		for k, rd := range red {
			if rd {
				total *= int64(st.Kernel.Shape[k])
			}
		}
		divisor = float64(total)
	}
	dev := r.g.devs[0]
	var ptrs []driver.DevicePtr
	var err error
	switch n.Red {
	case expr.Var, expr.Std:
		if !welfordKeep {
			return nil, cuda.ErrNotKept
		}
		ptrs, err = cuda.RunPlanWelfordKeep(cfg.ctx, dev, st.Tasks, groups, n.Red == expr.Std, n.DType == dtype.Float32)
	case expr.Sum, expr.Mean:
		ptrs, err = cuda.RunPlanSumKeep(cfg.ctx, dev, st.Tasks, groups, divisor, n.DType == dtype.Float32)
	default:
		return nil, cuda.ErrNotKept
	}
	if err != nil {
		return nil, err
	}
	gc := &gpuChunks{grid: grid, ptrs: make([]driver.DevicePtr, nc), devs: make([]*cuda.Device, nc), offs: make([][]int, nc), dt: n.DType, label: "on"}
	gc.idle.L = &gc.mu
	gc.combined = true
	for gi, ci := range chunkOf {
		gc.ptrs[ci], gc.devs[ci], gc.offs[ci] = ptrs[gi], dev, offs[gi]
	}
	gc.allocs = []devAllocs{{dev: dev, ptrs: ptrs}}
	gc.addCleanup()
	progress(len(st.Tasks))
	return gc, nil
}

// lastIndex returns the last index of the box at off with shape shp (inclusive).
func lastIndex(off, shp []int) []int {
	hi := make([]int, len(off))
	for k := range off {
		hi[k] = off[k] + shp[k] - 1
	}
	return hi
}

// readByOthers reports whether a node of order other than n reads n (so needs its values).
func readByOthers(n *expr.Node, order []*expr.Node) bool {
	seen := map[*expr.Node]bool{}
	var reads func(x *expr.Node) bool
	reads = func(x *expr.Node) bool {
		if seen[x] {
			return false
		}
		seen[x] = true
		for _, a := range x.Args {
			if a == n || reads(a) {
				return true
			}
		}
		return false
	}
	for _, o := range order {
		if o != n && reads(o) {
			return true
		}
	}
	return false
}

// keepsOnDevice reports whether keep can run st's tasks with their outputs left on the
// device: one fused kernel, elementwise or a partial reduction whose partials are its values
// with one task per chunk of the result.
func keepsOnDevice(st *plan.Stage) bool {
	if !oneKernel(st) {
		return false
	}
	if _, _, err := cuda.Lower(st.Kernel); err != nil {
		return false
	}
	if st.Kernel.Reduce == nil {
		return true
	}
	// A reduction's partials are its values only for the reductions partialsStay names (a mean
	// still needs its division: keepSum).
	if !partialsStay(st.Node) || cuda.KeepsPartials(st.Tasks) != nil || len(st.Tasks) != expr.NumChunks(st.Node.Chunks) {
		return false
	}
	grid := newChunkGrid(st.Node.Shape, st.Node.Chunks)
	for i, t := range st.Tasks {
		if off, ok := keptChunkOf(grid, t); !ok || grid.index(off) != i {
			return false
		}
	}
	return true
}

// onHost says why root's result is in host memory although a GPU computed it ("" when it
// is not an array result, or r is nil).
func (r *gpuResults) onHost(root *expr.Node) string {
	if r == nil {
		return ""
	}
	return r.host[root]
}

// keep puts the stay roots on the device: the direct ones by running their kernels with the
// outputs kept there (stage ids from id), the others from their host values in done. A root
// whose values the device cannot hold exactly stays in done, with the reason in r.host.
func (r *gpuResults) keep(cfg computeConfig, id int, done map[*expr.Node]dtype.Slice, progress func(int)) (map[*expr.Node]*gpuChunks, error) {
	held := map[*expr.Node]*gpuChunks{}
	fail := func(err error) (map[*expr.Node]*gpuChunks, error) {
		for _, gc := range held {
			gc.release()
		}
		return nil, fmt.Errorf("compute: %w", err)
	}
	for _, n := range r.direct {
		t0 := time.Now()
		st, err := plan.Lower(id, n, done, cfg.planOpts())
		id++
		if err != nil {
			return fail(err)
		}
		r.g.planSteps(st, t0)
		if keepsOnDevice(st) {
			gc, err := r.g.keep(cfg.ctx, n, st.Tasks, progress)
			if err != nil {
				return fail(err)
			}
			gc.label = "on"
			held[n] = gc
			continue
		}
		if n.Kind == expr.KReduce {
			gc, err := r.keepSum(cfg, n, st, progress)
			if err == nil {
				held[n] = gc
				continue
			}
			if !errors.Is(err, cuda.ErrNotKept) {
				return fail(err)
			}
		}
		if n.Kind == expr.KCall {
			// A call's output is written into device memory where the call runs.
			gc, err := r.g.keepCall(cfg.ctx, n, st, progress)
			if err == nil {
				held[n] = gc
				continue
			}
			if !errors.Is(err, cuda.ErrNotKept) {
				return fail(err)
			}
			r.notKept[n] = strings.TrimPrefix(err.Error(), cuda.ErrNotKept.Error()+": ")
		}
		// Not one fused kernel (a call whose output its library does not leave on the device,
		// the pieces of a join, a host fallback, a reduction whose partials the host
		// combines): run it as any stage, then put the values on the device.
		outs, err := cfg.sched.Run(cfg.ctx, st.Tasks, progress)
		if err != nil {
			return fail(err)
		}
		reportFallbacks(cfg, st, outs)
		vals, err := st.Assemble(outs)
		if err != nil {
			return fail(err)
		}
		done[n] = vals
	}
	for n := range r.stay {
		if d, ok := cfg.kept[n]; ok && held[n] == nil {
			// Computed in order (another root read it) with its output left on the device.
			if gc, ok := d.Buf.(*gpuChunks); ok {
				held[n] = gc
				delete(cfg.kept, n) // the result's now, not freed with the computation's
			}
		}
		if held[n] != nil {
			continue
		}
		vals, ok := done[n]
		if !ok {
			continue
		}
		if expr.Size(n.Shape) > maxCombined {
			what := "a reduction's partials"
			if why, ok := r.notKept[n]; ok {
				what = fmt.Sprintf("the %v's output, which stays on the device only when %s", n.Call.Fn, "its library leaves it there: "+why)
			}
			r.host[n] = fmt.Sprintf("result in main memory: it was assembled on the host (%s), and putting %.3g GB back on the GPU costs more than it saves", what, float64(expr.Size(n.Shape))*8/1e9)
			continue
		}
		gc, err := r.upload(cfg, n, vals)
		if err != nil {
			return fail(err)
		}
		held[n] = gc
	}
	return held, nil
}

// upload puts a result's host values on the scheduler's GPUs, one allocation per chunk (row
// chunk i on GPU i mod the number of GPUs, as Persist deals them), copied straight from the
// host values.
func (r *gpuResults) upload(cfg computeConfig, n *expr.Node, vals dtype.Slice) (*gpuChunks, error) {
	grid := newChunkGrid(n.Shape, n.Chunks)
	nc := expr.NumChunks(n.Chunks)
	g := &gpuChunks{grid: grid, ptrs: make([]driver.DevicePtr, nc), devs: make([]*cuda.Device, nc), offs: make([][]int, nc), dt: n.DType, label: "on"}
	g.idle.L = &g.mu
	byDev := map[int][]int{}
	for i := range nc {
		// Chunk i's corner: its row-major position in the chunk grid.
		off := make([]int, len(n.Shape))
		rest := i
		for ax := len(n.Shape) - 1; ax >= 0; ax-- {
			k := len(n.Chunks[ax])
			off[ax] = grid.bounds[ax][rest%k]
			rest /= k
		}
		d := 0
		if len(off) > 0 {
			d = (i / (nc / len(n.Chunks[0]))) % len(r.g.devs)
		}
		g.offs[i], g.devs[i] = off, r.g.devs[d]
		byDev[d] = append(byDev[d], i)
	}
	host := cuda.EncodeWords(dtype.Convert(vals, n.DType)) // the fused kernel's words
	w := cuda.Words(n.DType)
	for d, idx := range byDev {
		dev := r.g.devs[d]
		g.allocs = append(g.allocs, devAllocs{dev: dev})
		own := &g.allocs[len(g.allocs)-1]
		err := dev.Do(cfg.ctx, func() error {
			for _, i := range idx {
				shape := g.chunkShape(i)
				buf := make([]float64, max(expr.Size(shape)*int64(w), 1))
				grid.runs(g.offs[i], shape, func(at, o, k int) { copy(buf[o*w:(o+k)*w], host[at*w:(at+k)*w]) })
				p, err := dev.Pool().Alloc(uint64(len(buf)) * 8)
				if err != nil {
					return err
				}
				own.ptrs = append(own.ptrs, p)
				g.ptrs[i] = p
				if err := dev.CopyToDevice(p, buf); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			g.freeNow()
			return nil, fmt.Errorf("put the result on gpu %d: %w", dev.Info.Index, err)
		}
	}
	g.addCleanup()
	return g, nil
}

// maxCombined is the most elements of a result assembled on the host (a reduction's
// partials combined, a call's output) that is put on the device: axis reductions give small
// results (a column mean of 40000 x 40000 is 40000 elements); a result of billions (a
// reduction over an axis of length 2) took seconds more to put back than to compute.
const maxCombined = 1 << 24

// oneKernel reports whether every task of st runs st's kernel (a join has one per piece).
func oneKernel(st *plan.Stage) bool {
	for _, t := range st.Tasks {
		if t.Kernel != st.Kernel {
			return false
		}
	}
	return len(st.Tasks) > 0
}

// keptForReshapes reports whether a GPU compute leaves stage n of order on the device for the
// stages after it (runKeptStage) instead of assembling it in host memory: n is an elementwise
// array that no root is, and every node of the graphs of roots and order that reads it is a
// reshape, which reads an array held on the device in place (plan's reshapedBlock) — the mask
// x > 1 that Nonzero and Argwhere flatten, say. Before, such a stage of 4e8 elements was
// collected into host memory and every task of the next stage uploaded its part again: 11 s
// of host conversions on an H200 (issue 32's mask-compaction stall). It needs no GPU.
func keptForReshapes(n *expr.Node, order, roots []*expr.Node) bool {
	switch n.Kind {
	case expr.KUnary, expr.KBinary, expr.KWhere, expr.KCast, expr.KView, expr.KRandom, expr.KRange:
	default:
		return false
	}
	// An empty array has no chunk to hold (gpuSched.keep refused one: "task 0 is not chunk 0").
	if len(n.Shape) == 0 || expr.HasUnknown(n.Shape) || expr.Size(n.Shape) == 0 || slices.Contains(roots, n) {
		return false
	}
	readers := 0
	seen := map[*expr.Node]bool{}
	var walk func(x *expr.Node) bool
	walk = func(x *expr.Node) bool {
		if seen[x] || x == n {
			return true
		}
		seen[x] = true
		for _, a := range x.Args {
			if a == n {
				if x.Kind != expr.KReshape {
					return false
				}
				readers++
			}
			if !walk(a) {
				return false
			}
		}
		return true
	}
	for _, r := range append(slices.Clone(roots), order...) {
		if !walk(r) {
			return false
		}
	}
	return readers > 0
}

// tasksAreChunks reports whether task i of tasks computes exactly chunk i of n, as
// gpuSched.keep needs to hold their outputs as n's chunks.
func tasksAreChunks(n *expr.Node, tasks []*plan.Task) bool {
	if len(tasks) == 0 || expr.Size(n.Shape) == 0 {
		return false
	}
	grid := newChunkGrid(n.Shape, n.Chunks)
	for i, t := range tasks {
		off, ok := keptChunkOf(grid, t)
		if !ok || grid.index(off) != i {
			return false
		}
	}
	return true
}

// runKeptStage runs stage n (keptForReshapes) with its output left on the GPUs, in cfg.kept,
// and reports true; false, with nothing run, when its plan is not one kernel that keeps its
// output (keepsOnDevice) or the output would take more than half the GPUs' free memory (the
// caller then runs it as any stage).
func runKeptStage(cfg computeConfig, id int, n *expr.Node, done map[*expr.Node]dtype.Slice, progress func(int)) (bool, error) {
	g, ok := cfg.sched.(*gpuSched)
	if !ok || g == nil || len(g.devs) == 0 {
		return false, nil
	}
	bytes := expr.Size(n.Shape) * 8 * int64(cuda.Words(n.DType))
	var avail uint64
	for _, d := range g.devs {
		avail += available(cfg.ctx, d)
	}
	if !fitsOnDevice(bytes, avail) {
		return false, nil
	}
	t0 := time.Now()
	st, err := plan.Lower(id, n, done, cfg.planOpts())
	if err != nil || !keepsOnDevice(st) || len(st.HostReads) > 0 || len(st.ReshapeReads) > 0 || !tasksAreChunks(n, st.Tasks) {
		// The caller plans and runs it as any stage, and reports a planning error then.
		return false, nil
	}
	g.planSteps(st, t0)
	gc, err := g.keep(cfg.ctx, n, st.Tasks, progress)
	if err != nil {
		return false, fmt.Errorf("compute: %w", err)
	}
	gc.label = "on"
	d, err := expr.NewBuffered(gc, n.Shape, n.Chunks)
	if err != nil {
		gc.release()
		return false, fmt.Errorf("compute: %w", err)
	}
	d.DType = n.DType
	cfg.kept[n] = d
	return true, nil
}
