package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// offHost is a Buffer whose values live outside the notebook's memory until copied: a GPU's
// memory (deviceBuffer, gpuChunks) or cluster workers (keptChunks).
type offHost interface {
	expr.Buffer
	// copied reports whether the values are in host memory too.
	copied() bool
	// state says where the values are, for the repr ("on gpu 0", "released from …").
	state() string
	// placement returns the bytes held per place ("gpu 0", a worker's name), sorted by place.
	placement() []placeBytes
	// pin keeps the values from being released until unpin; false when they already were.
	pin() bool
	unpin()
	release()
}

// placeBytes is how many bytes of an array one place holds.
type placeBytes struct {
	Where string
	Bytes int64
}

// Persist computes the array once and keeps its chunks where they were computed: in host
// memory (the CPU schedulers), in a GPU's memory (OnGPU; spread over several with OnGPUs, row
// chunks dealt round-robin), or on a cluster's workers (On(c): each chunk stays on the worker
// that computed it: a GPU worker keeps them in its device memory, where its kernels read them
// in place, and under pressure its least recently used chunks go to host memory, then to
// disk, coming back on use). Later
// computations that read the result run where its chunks are (a cluster worker holding a
// chunk runs the tasks that read it; a GPU's fused kernels read chunks held there in place).
// A chunk lost with a cluster worker is computed again from the graph. Release frees the
// chunks; the HTML repr shows the bytes held per GPU or worker. Errors are in the returned
// array's Err.
func (a *Array) Persist(opts ...ComputeOption) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if _, ok := a.n.Buf.(offHost); ok {
		return a // already held
	}
	cfg, err := configure(opts)
	if err != nil {
		return errArray(fmt.Errorf("persist: %w", err))
	}
	k, keeper := cfg.sched.(plan.Keeper)
	g, onGPU := cfg.sched.(*gpuSched)
	// Host steps of the stages before the kept one (cluster workers' fallbacks) reach Path.
	cfg.notes = &engine.HostNotes{}
	defer pinGraph(a.n)()
	root := a.n
	if hasMask(root) { // boolean masks are computed first, to know the lengths
		if root, err = resolveMasks(cfg, root); err != nil {
			return errArray(fmt.Errorf("persist: %w", err))
		}
	}
	if root.Kind == expr.KReduce {
		// The chunks of a reduction's result are combined on the host: compute it, then keep
		// the result's chunks.
		c, err := computeHost(cfg, []*Array{a})
		if err != nil {
			return errArray(fmt.Errorf("persist: %w", err))
		}
		root = c[0].n
		if c[0].path != "" {
			cfg.notes.AddOnce(c[0].path)
		}
	}
	order := stageOrder([]*expr.Node{root})
	if len(order) == 0 || order[len(order)-1] != root {
		order = append(order, root) // data: a stage that copies it where it is kept
	}
	total := 0
	for _, n := range order {
		iter := n
		if n.Kind == expr.KReduce {
			iter = n.Args[0]
		}
		total += expr.NumChunks(iter.Chunks)
	}
	prog := engine.NewProgress(total, cfg.progress, cfg.quiet)
	defer prog.Finish()
	done := map[*expr.Node]dtype.Slice{}
	cfg, releaseKept := withKept(cfg)
	defer releaseKept()
	if err := runOrder(cfg, order[:len(order)-1], []*expr.Node{root}, done, prog.Add); err != nil {
		return errArray(fmt.Errorf("persist: %w", err))
	}
	t0 := time.Now()
	st, err := plan.Lower(len(order)-1, root, done, cfg.planOpts())
	if err != nil {
		return errArray(fmt.Errorf("persist: %w", err))
	}
	if onGPU {
		g.planSteps(st, t0)
	}
	var buf offHost
	if keeper {
		kept, err := k.Keep(cfg.ctx, st.Tasks, prog.Add)
		if err != nil {
			return errArray(fmt.Errorf("persist: %w", err))
		}
		buf = newKeptChunks(k, root, st.Tasks, kept)
	} else if onGPU {
		// A call's output is written into device memory where the call runs (keepCall); other
		// stages, and calls whose library does not leave their outputs there, run through keep.
		gc, err := g.keepCall(cfg.ctx, root, st, prog.Add)
		if errors.Is(err, cuda.ErrNotKept) {
			gc, err = g.keep(cfg.ctx, root, st.Tasks, prog.Add)
		}
		if err != nil {
			return errArray(fmt.Errorf("persist: %w", err))
		}
		gc.label = "persisted on"
		buf = gc
	} else {
		hc, err := keepOnHost(cfg.ctx, cfg.sched, root, st.Tasks, prog.Add)
		if err != nil {
			return errArray(fmt.Errorf("persist: %w", err))
		}
		buf = hc
	}
	prog.OK = true
	n, err := expr.NewBuffered(buf, root.Shape, root.Chunks)
	if err != nil {
		buf.release()
		return errArray(fmt.Errorf("persist: %w", err))
	}
	n.DType = root.DType
	out := &Array{n: n}
	if gc, ok := buf.(*gpuChunks); ok && gc.hostRun {
		out.path = "persisted on " + gc.Where() + "; computed on the host and uploaded (the GPU code generator does not express this kernel)"
		fmt.Fprintln(os.Stderr, "gpuarray: warning: "+out.path)
	}
	if kc, ok := buf.(*keptChunks); ok {
		if n, why := kc.hostFallbacks(); n > 0 {
			out.path = fmt.Sprintf("persisted on %s; %d of %d chunks computed on a GPU worker's CPU (host fallback: %s)", kc.Where(), n, len(kc.kept), why)
			fmt.Fprintln(os.Stderr, "gpuarray: warning: "+out.path)
		}
	}
	if notes := cfg.notes.String(); notes != "" && !onGPU { // warned already, where they ran
		out.path = strings.TrimPrefix(out.path+"; "+notes, "; ")
	}
	return out
}

// chunkGrid locates the chunks of an array: bounds per axis, for the chunk holding a box.
type chunkGrid struct {
	shape  []int
	chunks [][]int
	bounds [][]int // per axis: 0, c0, c0+c1, …
}

func newChunkGrid(shape []int, chunks [][]int) chunkGrid {
	g := chunkGrid{shape: slices.Clone(shape), chunks: chunks}
	for _, cs := range chunks {
		b := []int{0}
		for _, c := range cs {
			b = append(b, b[len(b)-1]+c)
		}
		g.bounds = append(g.bounds, b)
	}
	return g
}

// index returns the row-major number of the chunk at offset off (a chunk's corner).
func (g chunkGrid) index(off []int) int {
	i := 0
	for ax, o := range off {
		j := sort.SearchInts(g.bounds[ax], o+1) - 1
		i = i*len(g.chunks[ax]) + j
	}
	return i
}

// within returns the chunk holding the box [lo, hi] (inclusive), or -1 when the box spans
// several chunks.
func (g chunkGrid) within(lo, hi []int) (int, []int, []int) {
	if len(lo) != len(g.bounds) {
		return -1, nil, nil
	}
	i := 0
	origin, shape := make([]int, len(lo)), make([]int, len(lo))
	for ax := range lo {
		j := sort.SearchInts(g.bounds[ax], lo[ax]+1) - 1
		if j < 0 || j >= len(g.chunks[ax]) || hi[ax] >= g.bounds[ax][j+1] {
			return -1, nil, nil
		}
		i = i*len(g.chunks[ax]) + j
		origin[ax], shape[ax] = g.bounds[ax][j], g.chunks[ax][j]
	}
	return i, origin, shape
}

// meeting returns the chunks (row-major numbers) that the box [lo, hi] (inclusive) meets, in
// row-major order; false when the box is not inside the array.
func (g chunkGrid) meeting(lo, hi []int) ([]int, bool) {
	r := len(g.bounds)
	if len(lo) != r || len(hi) != r {
		return nil, false
	}
	first, last := make([]int, r), make([]int, r)
	for ax := range lo {
		if lo[ax] < 0 || hi[ax] < lo[ax] || hi[ax] >= g.bounds[ax][len(g.bounds[ax])-1] {
			return nil, false
		}
		first[ax] = sort.SearchInts(g.bounds[ax], lo[ax]+1) - 1
		last[ax] = sort.SearchInts(g.bounds[ax], hi[ax]+1) - 1
	}
	var out []int
	idx := slices.Clone(first)
	for {
		i := 0
		for ax := range idx {
			i = i*len(g.chunks[ax]) + idx[ax]
		}
		out = append(out, i)
		ax := r - 1
		for ; ax >= 0; ax-- {
			if idx[ax]++; idx[ax] <= last[ax] {
				break
			}
			idx[ax] = first[ax]
		}
		if ax < 0 {
			return out, true
		}
	}
}

// runs calls f for each contiguous run of a chunk at off with shape inside the whole array
// (row-major): at is the run's start in the array, o in the chunk, n its length.
func (g chunkGrid) runs(off, shape []int, f func(at, o, n int)) {
	r := len(shape)
	if r == 0 {
		f(0, 0, 1)
		return
	}
	if expr.Size(shape) == 0 {
		return
	}
	strides := make([]int, r)
	s := 1
	for d := r - 1; d >= 0; d-- {
		strides[d] = s
		s *= g.shape[d]
	}
	inner := shape[r-1]
	pos := make([]int, r)
	for o := 0; o < int(expr.Size(shape)); o += inner {
		at := 0
		for d := 0; d < r; d++ {
			at += (off[d] + pos[d]) * strides[d]
		}
		f(at, o, inner)
		for d := r - 2; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
}

// place copies a chunk's row-major values at off with shape into dst, the whole array
// row-major.
func (g chunkGrid) place(dst dtype.Slice, off, shape []int, src dtype.Slice) {
	g.runs(off, shape, func(at, o, n int) { dtype.Copy(dst.Slice(at, at+n), src.Slice(o, o+n)) })
}

// gpuChunks holds an array's chunks in GPU memory, one allocation per chunk, each on the GPU
// that computed it. Values are copied to the host on first read and kept there too.
type gpuChunks struct {
	grid     chunkGrid
	offs     [][]int // each chunk's corner, row-major chunk order
	devs     []*cuda.Device
	hostRun  bool        // computed on the host and uploaded
	combined bool        // a reduction's partials combined on the device (gpuResults.keepSum)
	label    string      // how state names the holding: "persisted on" (Persist), "on" (Compute)
	dt       dtype.DType // the array's dtype; the GPUs hold its values as cuda.EncodeWords writes them
	// narrow: the GPUs hold the values in their own size (float32, bool, integers of 1 to 4
	// bytes: cuda.Narrow, cuda.EncodeNarrow), each chunk from an 8-byte aligned address and
	// padded to a whole word; kernels read them so (plan.Held.Narrow).
	narrow bool

	mu      sync.Mutex
	idle    sync.Cond
	pins    int
	ptrs    []driver.DevicePtr // nil once released
	allocs  []devAllocs        // the allocations behind ptrs, per device
	cleanup runtime.Cleanup

	hostMu sync.Mutex
	host   dtype.Slice
}

// keep runs the tasks of the last stage of a Persist (one per chunk) on the scheduler's GPUs
// and leaves their outputs there: row chunk i on device i mod len(devs). The tasks of a
// partial reduction whose partials are its values (cuda.KeepsPartials, one task per chunk of
// n, see keptChunkOf) leave those.
func (s *gpuSched) keep(ctx context.Context, n *expr.Node, tasks []*plan.Task, done func(int)) (*gpuChunks, error) {
	if tasks[0].Kernel.Reduce != nil {
		if err := cuda.KeepsPartials(tasks); err != nil {
			return nil, fmt.Errorf("persist: a reduction's partials cannot be kept: %w (internal)", err)
		}
	}
	g := &gpuChunks{grid: newChunkGrid(n.Shape, n.Chunks), ptrs: make([]driver.DevicePtr, len(tasks)), dt: n.DType}
	g.idle.L = &g.mu
	g.devs = make([]*cuda.Device, len(tasks))
	g.offs = make([][]int, len(tasks))
	byDev := map[int][]int{}
	for i, t := range tasks {
		off, ok := keptChunkOf(g.grid, t)
		if !ok || g.grid.index(off) != i {
			return nil, fmt.Errorf("persist: task %d is not chunk %d (internal)", i, i)
		}
		d := 0
		if len(off) > 0 {
			d = sort.SearchInts(g.grid.bounds[0], off[0]+1) - 1
		}
		d %= len(s.devs)
		g.devs[i] = s.devs[d]
		g.offs[i] = off
		byDev[d] = append(byDev[d], i)
	}
	fail := func(err error) (*gpuChunks, error) {
		g.freeNow()
		return nil, err
	}
	_, _, lerr := cuda.Lower(tasks[0].Kernel)
	g.hostRun = lerr != nil
	k := tasks[0].Kernel
	g.narrow = narrowStore && k.Reduce == nil && cuda.Narrow(g.dt) && k.Instrs[k.Result].DType == g.dt
	runKeep := cuda.RunPlanKeepOwned
	if g.narrow {
		runKeep = cuda.RunPlanKeepNarrow
	}
	for d, idx := range byDev {
		dev := s.devs[d]
		sub := make([]*plan.Task, len(idx))
		for j, i := range idx {
			sub[j] = tasks[i]
		}
		if !g.hostRun {
			ptrs, allocs, err := runKeep(ctx, dev, sub)
			if err != nil {
				return fail(fmt.Errorf("gpu %d: %w", dev.Info.Index, err))
			}
			g.allocs = append(g.allocs, devAllocs{dev, allocs})
			for j, i := range idx {
				g.ptrs[i] = ptrs[j]
			}
			done(len(idx))
			continue
		}
		// Not a GPU kernel (a range leaf, say): compute each chunk on the host, upload it.
		g.allocs = append(g.allocs, devAllocs{dev: dev})
		own := &g.allocs[len(g.allocs)-1]
		for j, i := range idx {
			o, err := cpu.Execute(ctx, sub[j])
			if err != nil {
				return fail(fmt.Errorf("chunk %d: %w", i, err))
			}
			err = dev.Do(ctx, func() error {
				w := g.encode(dtype.Convert(o.Data, g.dt))
				p, err := dev.Pool().Alloc(uint64(max(len(w), 1)) * 8)
				if err != nil {
					return err
				}
				own.ptrs = append(own.ptrs, p)
				g.ptrs[i] = p
				return dev.CopyToDevice(p, w)
			})
			if err != nil {
				return fail(fmt.Errorf("upload chunk %d to gpu %d: %w", i, dev.Info.Index, err))
			}
			done(1)
		}
	}
	g.addCleanup()
	return g, nil
}

// encode returns a chunk's values as the GPU holds them (EncodeNarrow, or the fused kernel's
// words).
func (g *gpuChunks) encode(v dtype.Slice) []float64 {
	if g.narrow {
		return cuda.EncodeNarrow(v)
	}
	return cuda.EncodeWords(v)
}

// chunkBytes is how many bytes the GPU holds for chunk i (without a narrow chunk's padding).
func (g *gpuChunks) chunkBytes(i int) int64 {
	n := expr.Size(g.chunkShape(i))
	if g.narrow {
		return n * int64(g.dt.Size())
	}
	return n * 8 * int64(cuda.Words(g.dt))
}

// chunkWords is how many 8-byte words the GPU holds for chunk i (a narrow chunk's padding
// included): what a copy of the whole chunk moves.
func (g *gpuChunks) chunkWords(i int) int64 { return (g.chunkBytes(i) + 7) / 8 }

// narrowStore keeps arrays of float32, bools and integers of 1 to 4 bytes on the GPU in their
// own element size (off only in tests, to compare with the 8-byte words every dtype took
// before).
var narrowStore = true

// keptChunkOf returns the corner, in the array of grid, of what task t computes: its offset,
// less the reduced axes for a partial reduction; ok is false unless that box is exactly one
// chunk of grid (so the task's output, row-major, is the chunk's values).
func keptChunkOf(grid chunkGrid, t *plan.Task) (off []int, ok bool) {
	off, shape := slices.Clone(t.Offset), slices.Clone(t.Shape)
	if t.Kernel.Reduce != nil {
		off, shape = nil, nil
		for ax, r := range t.Kernel.Reduced() {
			if !r {
				off, shape = append(off, t.Offset[ax]), append(shape, t.Shape[ax])
			}
		}
	}
	if len(off) != len(grid.shape) {
		return nil, false
	}
	if len(off) == 0 || expr.Size(shape) == 0 {
		return off, true // no box to compare: the chunk index alone says
	}
	hi := make([]int, len(off))
	for ax := range off {
		hi[ax] = off[ax] + shape[ax] - 1
	}
	i, origin, cs := grid.within(off, hi)
	return off, i >= 0 && slices.Equal(origin, off) && slices.Equal(cs, shape)
}

// devAllocs are device allocations of one GPU.
type devAllocs struct {
	dev  *cuda.Device
	ptrs []driver.DevicePtr
}

// addCleanup gives the allocations back when g becomes unreachable. The cleanup hands them to
// the pools' FreeLater and does not wait for the devices: an allocation that finds a GPU full
// runs the collector on the device's goroutine and waits for cleanups like this one.
func (g *gpuChunks) addCleanup() {
	g.cleanup = runtime.AddCleanup(g, func(as []devAllocs) {
		for _, a := range as {
			a.dev.Pool().FreeLater(a.ptrs...)
		}
	}, slices.Clone(g.allocs))
}

// freeNow gives the allocations back on their devices' goroutines.
func (g *gpuChunks) freeNow() {
	for _, a := range g.allocs {
		freeOn(a.dev, a.ptrs)
	}
	g.allocs = nil
}

func freeOn(dev *cuda.Device, ps []driver.DevicePtr) {
	_ = dev.Do(context.Background(), func() error {
		for _, p := range ps {
			dev.Pool().Free(p)
		}
		return nil
	})
}

func (g *gpuChunks) devIndexes() []int {
	var ix []int
	for _, d := range g.devs {
		if !slices.Contains(ix, d.Info.Index) {
			ix = append(ix, d.Info.Index)
		}
	}
	slices.Sort(ix)
	return ix
}

// Where says which GPUs hold the chunks: "gpu 0", or "gpus 0,1".
func (g *gpuChunks) Where() string {
	ix := g.devIndexes()
	if len(ix) == 1 {
		return fmt.Sprintf("gpu %d", ix[0])
	}
	s := make([]string, len(ix))
	for i, x := range ix {
		s[i] = fmt.Sprint(x)
	}
	return "gpus " + strings.Join(s, ",")
}

func (g *gpuChunks) chunkShape(i int) []int {
	shape := make([]int, len(g.offs[i]))
	for ax, o := range g.offs[i] {
		j := sort.SearchInts(g.grid.bounds[ax], o+1) - 1
		shape[ax] = g.grid.chunks[ax][j]
	}
	return shape
}

// Values copies the chunks into host memory on the first call and returns that copy, in the
// array's dtype.
func (g *gpuChunks) Values() (dtype.Slice, error) {
	g.hostMu.Lock()
	defer g.hostMu.Unlock()
	if !g.host.IsNil() {
		return g.host, nil
	}
	if !g.pin() {
		return dtype.Slice{}, errReleased
	}
	defer g.unpin()
	if _, ok := dtype.ViewWords(g.dt, nil); ok && !g.narrow {
		// Float64, int64, uint64 and complex128 chunks hold the values' own bytes (the
		// kernels' words): they come through the pinned staging straight into their places.
		// Before, int64 chunks (argsort's indices) came chunk by chunk into pageable memory,
		// were decoded, placed and then converted, each pass on one core: 14.9 s for a 4e8
		// argsort read back as float64s on an H200 (bench/RESULTS.md, issue 32).
		t0 := time.Now()
		host, err := g.download(cuda.Words(g.dt))
		if err != nil {
			return dtype.Slice{}, err
		}
		v, _ := dtype.ViewWords(g.dt, host)
		cuda.Trace("copy %s %v from %s to the host: %.3f s", expr.ShapeString(g.grid.shape), g.dt, g.Where(), time.Since(t0).Seconds())
		g.host = dtype.KeepAlive(v, g) // host is unmapped when g is collected
		return g.host, nil
	}
	host := dtype.Make(g.dt, int(expr.Size(g.grid.shape)))
	for i := range g.ptrs {
		v, err := g.chunkValues(i)
		if err != nil {
			return dtype.Slice{}, err
		}
		g.grid.place(host, g.offs[i], g.chunkShape(i), v)
	}
	g.host = host
	return host, nil
}

// download copies chunks of words words per element (1 for float64 and 64-bit integers, 2 for
// complex128) into one fresh host array (engine.HostBuffer), each piece of a chunk put in its
// place as it leaves the pinned staging: one copy on the host, on all cores, where a copy of
// each chunk first and then of the chunk into a zeroed array took three. The caller keeps the
// chunks pinned.
func (g *gpuChunks) download(words int) ([]float64, error) {
	host, err := engine.HostBuffer(g, words*int(expr.Size(g.grid.shape)))
	if err != nil {
		return nil, err
	}
	for i := range g.ptrs {
		shape := g.chunkShape(i)
		var runs []run
		g.grid.runs(g.offs[i], shape, func(at, o, k int) { runs = append(runs, run{at * words, o * words, k * words}) })
		dev, p := g.devs[i], g.ptr(i)
		err := dev.Do(display.Context(), func() error {
			return dev.CopyToHostPieces(p, words*int(expr.Size(shape)), func(off int, piece []float64) {
				scatterRuns(host, piece, off, runs)
			})
		})
		if err != nil {
			return nil, fmt.Errorf("copy chunk %d from gpu %d to the host: %w", i, dev.Info.Index, err)
		}
	}
	return host, nil
}

// run is a contiguous run of a chunk inside its array: at in the array, o in the chunk, n long.
type run struct{ at, o, n int }

// scatterRuns copies piece, elements [off, off+len(piece)) of a chunk whose runs (in chunk
// order) are runs, to their places in dst, on up to GOMAXPROCS goroutines.
func scatterRuns(dst, piece []float64, off int, runs []run) {
	end := off + len(piece)
	lo := sort.Search(len(runs), func(j int) bool { return runs[j].o+runs[j].n > off })
	var segs []run // clipped to the piece; o relative to it
	for _, r := range runs[lo:] {
		if r.o >= end {
			break
		}
		a, b := max(r.o, off), min(r.o+r.n, end)
		segs = append(segs, run{r.at + a - r.o, a - off, b - a})
	}
	w := min(runtime.GOMAXPROCS(0), max(len(piece)>>16, 1))
	if w <= 1 {
		for _, s := range segs {
			copy(dst[s.at:s.at+s.n], piece[s.o:s.o+s.n])
		}
		return
	}
	// Worker j copies elements [j*per, (j+1)*per) of the piece, whichever runs they are in.
	per := (len(piece) + w - 1) / w
	var wg sync.WaitGroup
	for j := range w {
		from, to := j*per, min((j+1)*per, len(piece))
		if from >= to {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := sort.Search(len(segs), func(i int) bool { return segs[i].o+segs[i].n > from })
			for ; k < len(segs) && segs[k].o < to; k++ {
				s := segs[k]
				a, b := max(s.o, from), min(s.o+s.n, to)
				copy(dst[s.at+a-s.o:s.at+b-s.o], piece[a:b])
			}
		}()
	}
	wg.Wait()
}

// chunkValues copies chunk i to the host; the caller keeps the chunks pinned.
func (g *gpuChunks) chunkValues(i int) (dtype.Slice, error) {
	v := make([]float64, g.chunkWords(i))
	dev, p := g.devs[i], g.ptr(i)
	if err := dev.Do(display.Context(), func() error { return dev.CopyToHost(v, p) }); err != nil {
		return dtype.Slice{}, fmt.Errorf("copy chunk %d from gpu %d to the host: %w", i, dev.Info.Index, err)
	}
	if g.narrow {
		return cuda.DecodeNarrow(v, int(expr.Size(g.chunkShape(i))), g.dt), nil
	}
	return cuda.DecodeWords(v, g.dt), nil
}

func (g *gpuChunks) ptr(i int) driver.DevicePtr {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ptrs == nil {
		return 0
	}
	return g.ptrs[i]
}

func (g *gpuChunks) copied() bool {
	g.hostMu.Lock()
	defer g.hostMu.Unlock()
	return !g.host.IsNil()
}

func (g *gpuChunks) state() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ptrs == nil {
		return "released from " + g.Where()
	}
	label := "persisted on"
	if g.label != "" {
		label = g.label
	}
	if g.narrow { // what a reader of the HTML's bytes held needs to know
		return fmt.Sprintf("%s %s in %d-byte elements", label, g.Where(), g.dt.Size())
	}
	return label + " " + g.Where()
}

func (g *gpuChunks) placement() []placeBytes {
	g.mu.Lock()
	released := g.ptrs == nil
	g.mu.Unlock()
	if released {
		return nil
	}
	m := map[string]int64{}
	for i, d := range g.devs {
		m[fmt.Sprintf("gpu %d", d.Info.Index)] += g.chunkBytes(i)
	}
	return sortedPlaces(m)
}

func sortedPlaces(m map[string]int64) []placeBytes {
	out := make([]placeBytes, 0, len(m))
	for k, v := range m {
		out = append(out, placeBytes{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Where < out[j].Where })
	return out
}

func (g *gpuChunks) pin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ptrs == nil {
		return false
	}
	g.pins++
	return true
}

func (g *gpuChunks) unpin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pins--
	if g.pins == 0 {
		g.idle.Broadcast()
	}
}

func (g *gpuChunks) release() {
	g.mu.Lock()
	for g.pins > 0 {
		g.idle.Wait()
	}
	if g.ptrs == nil {
		g.mu.Unlock()
		return
	}
	g.cleanup.Stop()
	g.ptrs = nil
	g.mu.Unlock()
	g.freeNow()
}

// heldBlock returns the block for a box [lo, hi] of the array held on one of devs, read in
// place: the chunk that holds the box, or the box itself joined on the device from the chunks
// it spans when one GPU holds them all (plan.HeldJoin).
func (g *gpuChunks) heldBlock(devs []*cuda.Device, lo, hi []int) (plan.Block, bool) {
	i, origin, shape := g.grid.within(lo, hi)
	if i < 0 {
		return g.joinedBlock(devs, lo, hi)
	}
	if !slices.Contains(devs, g.devs[i]) {
		return plan.Block{}, false
	}
	p := g.ptr(i)
	if p == 0 {
		return plan.Block{}, false
	}
	return plan.Block{Origin: origin, Shape: shape, Held: &plan.Held{Device: g.devs[i].Info.Index, Ptr: uintptr(p), Narrow: g.narrow}}, true
}

// joinedBlock returns the block of exactly the box [lo, hi] of the array, joined from the
// chunks it meets, when one of devs holds them all.
func (g *gpuChunks) joinedBlock(devs []*cuda.Device, lo, hi []int) (plan.Block, bool) {
	chunks, ok := g.grid.meeting(lo, hi)
	if !ok || len(chunks) == 0 {
		return plan.Block{}, false
	}
	dev := g.devs[chunks[0]]
	if !slices.Contains(devs, dev) {
		return plan.Block{}, false
	}
	join := &plan.HeldJoin{}
	for _, i := range chunks {
		p := g.ptr(i)
		if g.devs[i] != dev || p == 0 {
			return plan.Block{}, false
		}
		join.Pieces = append(join.Pieces, plan.HeldPiece{Ptr: uintptr(p), Origin: slices.Clone(g.offs[i]), Shape: g.chunkShape(i)})
	}
	shape := make([]int, len(lo))
	for d := range lo {
		shape[d] = hi[d] - lo[d] + 1
	}
	return plan.Block{Origin: slices.Clone(lo), Shape: shape,
		Held: &plan.Held{Device: dev.Info.Index, Ptr: join.Pieces[0].Ptr, Narrow: g.narrow, Join: join}}, true
}

// keptChunks holds an array's chunks on a cluster's workers (plan.Keeper), each on the worker
// that computed it.
type keptChunks struct {
	k    plan.Keeper
	grid chunkGrid
	offs [][]int
	kept []plan.Kept
	dt   dtype.DType

	mu       sync.Mutex
	pins     int
	idle     sync.Cond
	released bool
	cleanup  runtime.Cleanup

	hostMu sync.Mutex
	host   dtype.Slice
}

func newKeptChunks(k plan.Keeper, n *expr.Node, tasks []*plan.Task, kept []plan.Kept) *keptChunks {
	c := &keptChunks{k: k, grid: newChunkGrid(n.Shape, n.Chunks), kept: kept, dt: n.DType}
	c.idle.L = &c.mu
	for _, t := range tasks {
		c.offs = append(c.offs, slices.Clone(t.Offset))
	}
	c.cleanup = runtime.AddCleanup(c, func(ks []plan.Kept) {
		for _, x := range ks {
			x.Release()
		}
	}, slices.Clone(kept))
	return c
}

// hostFallbacks counts the chunks that a GPU worker computed on its CPU, and says why the
// first was (Kept values with a HostFallback method: the cluster's).
func (c *keptChunks) hostFallbacks() (n int, why string) {
	for _, k := range c.kept {
		hf, ok := k.(interface{ HostFallback() string })
		if !ok {
			continue
		}
		if w := hf.HostFallback(); w != "" {
			if n == 0 {
				why = w
			}
			n++
		}
	}
	return n, why
}

// Where says the chunks are on a cluster's workers, and on how many.
func (c *keptChunks) Where() string {
	workers := map[string]bool{}
	for _, k := range c.kept {
		workers[k.Where()] = true
	}
	n := len(workers)
	if n == 1 {
		return "1 cluster worker"
	}
	return fmt.Sprintf("%d cluster workers", n)
}

// Values fetches the chunks from the workers on the first call (recomputing those lost with a
// worker) and returns them row-major.
func (c *keptChunks) Values() (dtype.Slice, error) {
	c.hostMu.Lock()
	defer c.hostMu.Unlock()
	if !c.host.IsNil() {
		return c.host, nil
	}
	if !c.pin() {
		return dtype.Slice{}, fmt.Errorf("the array's chunks were released from the cluster (Release) before they were read")
	}
	defer c.unpin()
	host := dtype.Make(c.dt, int(expr.Size(c.grid.shape)))
	for i, k := range c.kept {
		v, err := k.Fetch(display.Context())
		if err != nil {
			return dtype.Slice{}, fmt.Errorf("chunk %d at %v: %w", i, c.offs[i], err)
		}
		shape := c.chunkShape(i)
		if int64(v.Len()) != expr.Size(shape) {
			return dtype.Slice{}, fmt.Errorf("chunk %d at %v: %d values for shape %s", i, c.offs[i], v.Len(), expr.ShapeString(shape))
		}
		c.grid.place(host, c.offs[i], shape, v)
	}
	c.host = host
	return host, nil
}

func (c *keptChunks) chunkShape(i int) []int {
	shape := make([]int, len(c.offs[i]))
	for ax, o := range c.offs[i] {
		j := sort.SearchInts(c.grid.bounds[ax], o+1) - 1
		shape[ax] = c.grid.chunks[ax][j]
	}
	return shape
}

func (c *keptChunks) copied() bool {
	c.hostMu.Lock()
	defer c.hostMu.Unlock()
	return !c.host.IsNil()
}

func (c *keptChunks) state() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return "released from the cluster"
	}
	return "persisted on " + c.Where()
}

// placement gives the bytes per worker and, where the keeper says (Tier: a cluster's), per
// tier: "gpu0 (device)", "cpu1 (disk)". A GPU worker's device holds a chunk as the local GPU
// does (its own element size where cuda.Narrow holds, the fused kernel's words otherwise); other tiers hold the
// values in their dtype.
func (c *keptChunks) placement() []placeBytes {
	m := map[string]int64{}
	for i, k := range c.kept {
		w := k.Where()
		per := int64(c.dt.Size())
		if t, ok := k.(interface{ Tier() string }); ok && t.Tier() != "" {
			w += " (" + t.Tier() + ")"
			if t.Tier() == "device" && !cuda.Narrow(c.dt) {
				per = 8 * int64(cuda.Words(c.dt))
			}
		}
		m[w] += expr.Size(c.chunkShape(i)) * per
	}
	return sortedPlaces(m)
}

func (c *keptChunks) pin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return false
	}
	c.pins++
	return true
}

func (c *keptChunks) unpin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pins--
	if c.pins == 0 {
		c.idle.Broadcast()
	}
}

func (c *keptChunks) release() {
	c.mu.Lock()
	for c.pins > 0 {
		c.idle.Wait()
	}
	if c.released {
		c.mu.Unlock()
		return
	}
	c.released = true
	c.cleanup.Stop()
	c.mu.Unlock()
	for _, k := range c.kept {
		k.Release()
	}
}

// refBlock returns the block for a box [lo, hi], read where it is kept by tasks that k runs:
// the chunk that holds it, or the box itself joined from the chunks it meets (plan.Block.
// RefJoin), which the worker running the task joins on its GPU or in its memory.
func (c *keptChunks) refBlock(k plan.Keeper, lo, hi []int) (plan.Block, bool) {
	c.mu.Lock()
	released := c.released
	c.mu.Unlock()
	if released {
		return plan.Block{}, false
	}
	i, origin, shape := c.grid.within(lo, hi)
	if i >= 0 {
		if !k.Holds(c.kept[i]) {
			return plan.Block{}, false
		}
		return plan.Block{Origin: origin, Shape: shape, Ref: c.kept[i].Ref()}, true
	}
	chunks, ok := c.grid.meeting(lo, hi)
	if !ok || len(chunks) == 0 {
		return plan.Block{}, false
	}
	join := &plan.HeldJoin{}
	for _, i := range chunks {
		if !k.Holds(c.kept[i]) {
			return plan.Block{}, false
		}
		join.Pieces = append(join.Pieces, plan.HeldPiece{Ref: c.kept[i].Ref(), Origin: slices.Clone(c.offs[i]), Shape: c.chunkShape(i)})
	}
	shape = make([]int, len(lo))
	for d := range lo {
		shape[d] = hi[d] - lo[d] + 1
	}
	return plan.Block{Origin: slices.Clone(lo), Shape: shape, RefJoin: join}, true
}
