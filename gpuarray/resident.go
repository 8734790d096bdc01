package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/blas"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// errReleased is returned for the values of an array whose GPU memory was given back.
var errReleased = errors.New("the array's GPU memory was released (Release) before its values were copied to the host")

// deviceBuffer holds a 2-d float64 array in one GPU's memory, one row-major panel of the
// array's full width per row chunk, as the GPU linear algebra leaves its results (U, C). Its
// values are copied to the host on first read and kept there too; the GPU memory goes back to
// the pool on Release, or when the garbage collector finds the buffer unreachable.
type deviceBuffer struct {
	dev  *cuda.Device
	rows []int // rows of each panel (the array's row chunks)
	cols int

	// mu guards panels and pins. A computation that reads the panels on the device pins the
	// buffer first (pin, pinGraph) and unpins it when done; release waits until no one does.
	mu      sync.Mutex
	idle    sync.Cond // signalled when pins drops to 0
	pins    int
	panels  []driver.DevicePtr // nil once released
	cleanup runtime.Cleanup

	hostMu sync.Mutex
	host   []float64
}

// newDeviceBuffer takes ownership of panels (allocated from dev's pool).
func newDeviceBuffer(dev *cuda.Device, rows []int, cols int, panels []driver.DevicePtr) *deviceBuffer {
	b := &deviceBuffer{dev: dev, rows: rows, cols: cols, panels: panels}
	b.idle.L = &b.mu
	pool := dev.Pool()
	owned := append([]driver.DevicePtr(nil), panels...)
	b.cleanup = runtime.AddCleanup(b, func(ps []driver.DevicePtr) { pool.FreeLater(ps...) }, owned)
	return b
}

// deviceArray wraps panels of a rows x cols result as an array chunked by rowChunks and
// colChunks (the panels follow rowChunks).
func deviceArray(dev *cuda.Device, panels []driver.DevicePtr, rowChunks, colChunks []int) (*Array, error) {
	cols := 0
	for _, c := range colChunks {
		cols += c
	}
	b := newDeviceBuffer(dev, rowChunks, cols, panels)
	rows := 0
	for _, r := range rowChunks {
		rows += r
	}
	n, err := expr.NewBuffered(b, []int{rows, cols}, [][]int{rowChunks, colChunks})
	if err != nil {
		b.release()
		return nil, err
	}
	return &Array{n: n}, nil
}

// Where says where the values are held.
func (b *deviceBuffer) Where() string { return fmt.Sprintf("gpu %d", b.dev.Info.Index) }

// Values copies the panels into host memory on the first call (stopping between panels when
// the running cell is interrupted) and returns that copy.
func (b *deviceBuffer) Values() (dtype.Slice, error) {
	v, err := b.floats()
	if err != nil {
		return dtype.Slice{}, err
	}
	return dtype.KeepAlive(dtype.OfFloat64(v), b), nil // v is unmapped when b is collected
}

// floats is Values as the float64s that linear algebra leaves on the device.
func (b *deviceBuffer) floats() ([]float64, error) {
	b.hostMu.Lock()
	defer b.hostMu.Unlock()
	if b.host != nil {
		return b.host, nil
	}
	if !b.pin() {
		return nil, errReleased
	}
	defer b.unpin()
	total := 0
	for _, r := range b.rows {
		total += r
	}
	t0 := time.Now()
	host, err := engine.HostBuffer(b, total*b.cols)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	off := 0
	for i, r := range b.rows {
		dst := host[off*b.cols : (off+r)*b.cols]
		if err := b.dev.Do(display.Context(), func() error { return b.dev.CopyToHost(dst, b.panels[i]) }); err != nil {
			return nil, fmt.Errorf("copy row panel %d to the host: %w", i, err)
		}
		off += r
	}
	cuda.Trace("copy %d x %d from %s to the host: allocation %.3f s, copies %.3f s", total, b.cols, b.Where(), t1.Sub(t0).Seconds(), time.Since(t1).Seconds())
	b.host = host
	return host, nil
}

// state says where the values are for the array's repr: "on gpu 0", or that they are gone.
func (b *deviceBuffer) state() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.panels == nil {
		return "released from " + b.Where()
	}
	return "on " + b.Where()
}

// copied reports whether the values have been copied to the host.
func (b *deviceBuffer) copied() bool {
	b.hostMu.Lock()
	defer b.hostMu.Unlock()
	return b.host != nil
}

// pin keeps the panels from being released until unpin; false when they were already.
func (b *deviceBuffer) pin() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.panels == nil {
		return false
	}
	b.pins++
	return true
}

func (b *deviceBuffer) unpin() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pins--
	if b.pins == 0 {
		b.idle.Broadcast()
	}
}

// panel returns row panel i's device address, or 0 once released.
func (b *deviceBuffer) panel(i int) driver.DevicePtr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.panels == nil {
		return 0
	}
	return b.panels[i]
}

// pinGraph pins every array held off the host (on a GPU, on cluster workers) that n's
// expression reads, for a computation that may read them in place, and returns the function
// that unpins them.
func pinGraph(n *expr.Node) (unpin func()) {
	var pinned []offHost
	seen := map[*expr.Node]bool{}
	var walk func(*expr.Node)
	walk = func(x *expr.Node) {
		if seen[x] {
			return
		}
		seen[x] = true
		if b, ok := x.Buf.(offHost); ok && !slices.Contains(pinned, b) && b.pin() {
			pinned = append(pinned, b)
		}
		for _, a := range x.Args {
			walk(a)
		}
	}
	walk(n)
	return func() {
		for _, b := range pinned {
			b.unpin()
		}
	}
}

// placement says the panels' bytes are on their GPU (none once released).
func (b *deviceBuffer) placement() []placeBytes {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.panels == nil {
		return nil
	}
	n := 0
	for _, r := range b.rows {
		n += r
	}
	return []placeBytes{{b.Where(), int64(n) * int64(b.cols) * 8}}
}

// blocks returns the panels as device blocks of the grid rows x colChunks (views into the
// panels), pinned until the returned function is called; ok is false once released.
func (b *deviceBuffer) blocks(colChunks []int) (bl blas.Blocks, done func(), ok bool) {
	if !b.pin() {
		return bl, nil, false
	}
	bl = blas.Blocks{Grid: linalg.Grid{RowChunks: b.rows, ColChunks: colChunks}, LD: b.cols}
	co := linalg.Offsets(colChunks)
	for i := range b.rows {
		p := b.panel(i)
		for j := range colChunks {
			bl.Ptr = append(bl.Ptr, p+driver.DevicePtr(co[j]*8))
		}
	}
	return bl, b.unpin, true
}

// release gives the panels back to the device's pool, once no computation has them pinned.
func (b *deviceBuffer) release() {
	b.mu.Lock()
	for b.pins > 0 {
		b.idle.Wait()
	}
	if b.panels == nil {
		b.mu.Unlock()
		return
	}
	b.cleanup.Stop()
	ps := b.panels
	b.panels = nil
	b.mu.Unlock()
	_ = b.dev.Do(context.Background(), func() error {
		for _, p := range ps {
			b.dev.Pool().Free(p)
		}
		return nil
	})
}

// Release gives back the memory of an array held off the host now, instead of when the
// garbage collector finds the array unreachable: GPU memory (a MatMul or SVD result computed
// there, an array persisted there) or cluster workers' (an array persisted there). It waits
// for computations reading the array. Values already copied to the host stay readable;
// otherwise reading the array afterwards is an error. It does nothing for other arrays.
func (a *Array) Release() {
	if a.Err() != nil {
		return
	}
	if b, ok := a.n.Buf.(offHost); ok {
		b.release()
	}
}

// Where says where a computed array's values are: "gpu N" for a result held in a GPU's memory
// ("gpus 0,1" for one persisted across GPUs; read it with ToSlice or Compute, which copy it to
// the host once and keep that copy beside the GPU's), "N cluster workers" for one persisted
// on a cluster, "host" for other computed arrays, and "" for lazy ones.
func (a *Array) Where() string {
	switch {
	case a.Err() != nil || a.n.Kind != expr.KData:
		return ""
	case a.n.Buf != nil:
		return a.n.Buf.Where()
	}
	return "host"
}

// HeldOnGPU reports whether a is a computed array whose values are held in GPU memory:
// persisted there (Persist with OnGPU), an array result that a GPU compute left there, or a
// factor or product that the GPU linear algebra keeps there; Where names the GPUs. A compute
// on GPUs leaves such an array where it is, for the kernels that follow to read in place;
// reading its values copies them to the host (once: the copy is kept beside the GPU's).
func (a *Array) HeldOnGPU() bool {
	if a.Err() != nil || a.n.Kind != expr.KData {
		return false
	}
	_, held := a.n.Buf.(onDevice)
	return held
}

// WhereAll says where computed arrays are held together, as Where says it for one: the GPUs
// and the cluster workers counted over all of them ("gpus 0,1", "2 cluster workers"), then
// other places, joined by ", " when they differ ("host, gpu 0"). Arrays that are not computed
// add nothing; "" when none is. Package dataframe says with it where a frame's columns are.
func WhereAll(xs ...*Array) string {
	var gpus []int
	workers := map[string]bool{}
	var others []string
	other := func(w string) {
		if w != "" && !slices.Contains(others, w) {
			others = append(others, w)
		}
	}
	for _, a := range xs {
		if a == nil || a.Err() != nil || a.n.Kind != expr.KData {
			continue
		}
		switch b := a.n.Buf.(type) {
		case *gpuChunks:
			for _, i := range b.devIndexes() {
				if !slices.Contains(gpus, i) {
					gpus = append(gpus, i)
				}
			}
		case *deviceBuffer:
			if !slices.Contains(gpus, b.dev.Info.Index) {
				gpus = append(gpus, b.dev.Info.Index)
			}
		case *keptChunks:
			for _, k := range b.kept {
				workers[k.Where()] = true
			}
		default:
			other(a.Where())
		}
	}
	var out []string
	slices.Sort(gpus)
	switch len(gpus) {
	case 0:
	case 1:
		out = append(out, fmt.Sprintf("gpu %d", gpus[0]))
	default:
		s := make([]string, len(gpus))
		for i, x := range gpus {
			s[i] = fmt.Sprint(x)
		}
		out = append(out, "gpus "+strings.Join(s, ","))
	}
	switch n := len(workers); n {
	case 0:
	case 1:
		out = append(out, "1 cluster worker")
	default:
		out = append(out, fmt.Sprintf("%d cluster workers", n))
	}
	return strings.Join(append(others, out...), ", ")
}

// heldOn returns the plan hook (plan.Options.Held) that lets kernels running on devs read
// arrays held there in place: a task's box that lies within one row panel of a GPU result
// (one device only) or one chunk of a persisted array reads that panel or chunk. Kernels that
// do not run on the GPU (and so run on the CPU executor) read the host copy. The caller keeps
// the arrays pinned (pinGraph) until the tasks have run.
func heldOn(devs ...*cuda.Device) func(k *plan.Kernel, n *expr.Node, lo, hi []int) (plan.Block, bool) {
	onGPU := map[*plan.Kernel]bool{}
	return func(k *plan.Kernel, n *expr.Node, lo, hi []int) (plan.Block, bool) {
		gpu, seen := onGPU[k]
		if !seen {
			gpu = readsHeldInPlace(k)
			onGPU[k] = gpu
		}
		if !gpu {
			return plan.Block{}, false
		}
		if g, ok := n.Buf.(*gpuChunks); ok {
			return g.heldBlock(devs, lo, hi)
		}
		b, ok := n.Buf.(*deviceBuffer)
		if !ok || len(devs) != 1 || b.dev != devs[0] || len(lo) != 2 {
			return plan.Block{}, false
		}
		row := 0
		join := &plan.HeldJoin{}
		for i, r := range b.rows {
			if lo[0] >= row && hi[0] < row+r {
				p := b.panel(i)
				if p == 0 {
					return plan.Block{}, false
				}
				return plan.Block{Origin: []int{row, 0}, Shape: []int{r, b.cols},
					Held: &plan.Held{Device: devs[0].Info.Index, Ptr: uintptr(p)}}, true
			}
			if hi[0] >= row && lo[0] < row+r { // the box spans this panel and others
				p := b.panel(i)
				if p == 0 {
					return plan.Block{}, false
				}
				join.Pieces = append(join.Pieces, plan.HeldPiece{Ptr: uintptr(p), Origin: []int{row, 0}, Shape: []int{r, b.cols}})
			}
			row += r
		}
		if len(join.Pieces) < 2 || lo[0] < 0 || hi[0] >= row || lo[1] < 0 || hi[1] >= b.cols {
			return plan.Block{}, false
		}
		return plan.Block{Origin: slices.Clone(lo), Shape: []int{hi[0] - lo[0] + 1, hi[1] - lo[1] + 1},
			Held: &plan.Held{Device: devs[0].Info.Index, Ptr: join.Pieces[0].Ptr, Join: join}}, true
	}
}

// readsHeldInPlace reports whether the GPU runs kernel k reading its inputs' blocks where a
// GPU holds them (cuda.ReadsHeld): a fused kernel, a bincount or scan, or a library call
// whose fused values the library reads on the device (sorts, FFTs, products, matrix
// functions). Other kernels read held arrays' host copies, which Path names (hostReads).
func readsHeldInPlace(k *plan.Kernel) bool { return cuda.ReadsHeld(k) }

// held returns the scheduler's plan hook for arrays held on its GPUs. With several GPUs it
// notes which persisted chunk each block is, so that a task reading chunks held on two GPUs
// can read them from the host instead (unheld).
func (s *gpuSched) held() func(k *plan.Kernel, n *expr.Node, lo, hi []int) (plan.Block, bool) {
	h := heldOn(s.devs...)
	if len(s.devs) == 1 {
		return h
	}
	return func(k *plan.Kernel, n *expr.Node, lo, hi []int) (plan.Block, bool) {
		b, ok := h(k, n, lo, hi)
		if g, isChunks := n.Buf.(*gpuChunks); !ok && isChunks && crossJoins(k, len(s.devs)) {
			b, ok = g.crossJoinedBlock(s.devs, lo, hi) // its other GPUs' pieces copied by gather
		}
		if g, isChunks := n.Buf.(*gpuChunks); ok && isChunks {
			src := heldSource{g: g, i: -1}
			if b.Held.Join == nil {
				src.i, _, _ = g.grid.within(lo, hi)
			} else {
				src.box = &plan.Block{Origin: b.Origin, Shape: b.Shape}
			}
			s.mu.Lock()
			if s.sources == nil {
				s.sources = map[plan.Held]heldSource{}
			}
			s.sources[*b.Held] = src
			s.mu.Unlock()
		}
		return b, ok
	}
}

// heldSource is the persisted chunk behind a held block (i), or for a block joined from
// several chunks (plan.HeldJoin, i < 0) the block's box of the array.
type heldSource struct {
	g   *gpuChunks
	i   int
	box *plan.Block
}

// values copies the source's values to the host: the chunk, or the joined block's box.
func (src heldSource) values() (dtype.Slice, error) {
	if src.i >= 0 {
		return src.g.chunkValues(src.i)
	}
	all, err := src.g.Values()
	if err != nil {
		return dtype.Slice{}, err
	}
	return cutBox(all, src.g.grid.shape, src.box.Origin, src.box.Shape), nil
}

// splitByDevice groups tasks by the GPU they run on (-1: any, they read nothing held): the one
// holding every held block a task reads. A task reading blocks held on several GPUs runs on
// the GPU holding most of its held bytes (on a tie, its first held block's) and gets the other
// chunks copied there from their GPUs (copies, to free once the tasks ran); a copy that finds
// no memory makes the task read those chunks from the host instead, which Path says.
func (s *gpuSched) splitByDevice(ctx context.Context, tasks []*plan.Task) (map[int][]int, *peerCopies, error) {
	groups := map[int][]int{}
	copies := &peerCopies{s: s, ptrs: map[peerKey]driver.DevicePtr{}}
	defer copies.report()
	for i, t := range tasks {
		dev := -1
		mixed := false
		for _, b := range t.Inputs {
			if b.Held == nil {
				continue
			}
			if dev >= 0 && b.Held.Device != dev || s.joinsAcross(&b) {
				mixed = true
			}
			if dev < 0 {
				dev = b.Held.Device
			}
		}
		switch {
		case mixed && peerCopy:
			var err error
			if dev, err = copies.gather(ctx, t); err != nil {
				return nil, copies, err
			}
		case mixed:
			if err := s.unhold(t); err != nil {
				return nil, copies, err
			}
			copies.host++
			dev = -1
		}
		groups[dev] = append(groups[dev], i)
	}
	return groups, copies, nil
}

// peerCopy makes a task that reads persisted chunks held on two GPUs copy the other GPU's
// chunk peer to peer (and the per-GPU groups run at once); off, it reads both from host copies
// of the chunks, which Path and a warning say. GPUNOTES_PEER_COPY=1 turns it on: it has not run
// on a machine with several GPUs yet (bench/multi-gpu.sh runs it), so it is off by default.
var peerCopy = os.Getenv("GPUNOTES_PEER_COPY") == "1"

// peerKey is a persisted chunk copied to a GPU.
type peerKey struct {
	src heldSource
	dev int
}

// peerCopies are the chunks copied between GPUs for the tasks of one run.
type peerCopies struct {
	s     *gpuSched
	ptrs  map[peerKey]driver.DevicePtr
	bytes uint64
	host  int // tasks that read their chunks from the host instead
	hostE error
}

// gather makes task t read every held block on one GPU, which it returns: chunks held on
// other GPUs are copied there (once per run), or, when that fails, all of t's held blocks are
// read from the host (device -1).
func (c *peerCopies) gather(ctx context.Context, t *plan.Task) (int, error) {
	bytesOn := map[int]int64{}
	first := -1
	for _, b := range t.Inputs {
		if b.Held != nil {
			bytesOn[b.Held.Device] += expr.Size(b.Shape)
			if first < 0 {
				first = b.Held.Device
			}
		}
	}
	dev := first // most bytes; on a tie the first block's GPU, then the lowest index
	for _, d := range slices.Sorted(maps.Keys(bytesOn)) {
		if bytesOn[d] > bytesOn[dev] {
			dev = d
		}
	}
	target := c.s.device(dev)
	moved := make([]plan.Held, len(t.Inputs))
	for j, b := range t.Inputs {
		if b.Held == nil || b.Held.Device == dev && !c.s.joinsAcross(&b) {
			continue
		}
		c.s.mu.Lock()
		src, ok := c.s.sources[*b.Held]
		c.s.mu.Unlock()
		if !ok {
			return 0, fmt.Errorf("gpuarray: a block held on gpu %d has no known source (internal)", b.Held.Device)
		}
		if src.i < 0 {
			// A block joined from chunks of other GPUs: their chunks copied here (gatherJoin),
			// or, with no room for them, this task reads its blocks from the host.
			h, ok, err := c.gatherJoin(ctx, &t.Inputs[j], src, dev)
			if err != nil {
				return 0, err
			}
			if ok {
				moved[j] = h
				continue
			}
			c.host++
			if err := c.s.unhold(t); err != nil {
				return 0, err
			}
			return -1, nil
		}
		base := src.g.ptr(src.i)
		if target == nil || base == 0 {
			return 0, fmt.Errorf("gpuarray: a persisted chunk read on gpu %d was released (internal)", dev)
		}
		key := peerKey{src, dev}
		p, ok := c.ptrs[key]
		if !ok {
			n := uint64(src.g.chunkWords(src.i)) * 8
			var err error
			p, err = target.CopyFromPeer(ctx, src.g.devs[src.i], base, n)
			if err != nil {
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				// No room on the GPU: this task reads its chunks from the host.
				c.host++
				c.hostE = err
				if err := c.s.unhold(t); err != nil {
					return 0, err
				}
				return -1, nil
			}
			c.ptrs[key] = p
			c.bytes += n
		}
		moved[j] = plan.Held{Device: dev, Ptr: uintptr(p) + (b.Held.Ptr - uintptr(base)), Narrow: b.Held.Narrow}
	}
	for j := range t.Inputs {
		if moved[j].Ptr != 0 {
			h := moved[j]
			t.Inputs[j].Held = &h
		}
	}
	return dev, nil
}

// device returns the scheduler's GPU with index i, or nil.
func (s *gpuSched) device(i int) *cuda.Device {
	for _, d := range s.devs {
		if d.Info.Index == i {
			return d
		}
	}
	return nil
}

// report records the run's copies for Path: between GPUs a library-like step, through the
// host a host step (it warns).
func (c *peerCopies) report() {
	if len(c.ptrs) > 0 {
		msg := fmt.Sprintf("%d persisted chunks (%.3g GB) copied between GPUs for tasks that read chunks held on two GPUs", len(c.ptrs), float64(c.bytes)/1e9)
		cuda.Trace("%s", msg)
		c.s.libStep(msg)
	}
	switch {
	case c.host > 0 && c.hostE != nil:
		c.s.hostStep(fmt.Sprintf("host copy: %d tasks read persisted chunks held on two GPUs through host memory (a copy between GPUs failed: %v)", c.host, c.hostE))
	case c.host > 0:
		c.s.hostStep(fmt.Sprintf("host copy: %d tasks read persisted chunks held on two GPUs through host copies of those chunks (GPUNOTES_PEER_COPY=1 copies them between the GPUs instead)", c.host))
	}
}

// free gives the copies back to their GPUs' pools.
func (c *peerCopies) free() {
	if c == nil {
		return
	}
	for k, p := range c.ptrs {
		if d := c.s.device(k.dev); d != nil {
			d.Pool().FreeLater(p)
		}
	}
	c.ptrs = nil
}

// unhold replaces t's held blocks by host copies of their chunks.
func (s *gpuSched) unhold(t *plan.Task) error {
	for j := range t.Inputs {
		b := &t.Inputs[j]
		if b.Held == nil {
			continue
		}
		s.mu.Lock()
		src, ok := s.sources[*b.Held]
		s.mu.Unlock()
		if !ok {
			return fmt.Errorf("gpuarray: a block held on gpu %d has no known source (internal)", b.Held.Device)
		}
		v, err := src.values()
		if err != nil {
			return err
		}
		b.Data, b.Held = v, nil
	}
	return nil
}

// deviceGather lets a GPU scheduler gather takes on the device (off only to time the host
// gather against it).
var deviceGather = true

// gpuPlanned is a scheduler whose stages are planned as a GPU scheduler's are (takes left for
// the device to gather): the tests' checks of what the GPU lowering decides, which need no GPU.
type gpuPlanned interface{ plansForGPU() }

// planOptions returns the plan options for computing with sched: the memory limit; for a GPU
// scheduler the hook that reads arrays held on its GPUs in place; for a cluster (a
// plan.Keeper) the hook that reads chunks persisted there where they are; for the CPU
// schedulers the hook that reads chunks persisted in host memory in place.
func planOptions(sched Scheduler, memLimit int64) plan.Options {
	opt := plan.Options{MemoryLimit: memLimit}
	switch s := sched.(type) {
	case *gpuSched:
		opt.Held = s.held()
		opt.LateGather = deviceGather
		// One GPU reads a call's held further operands there (several GPUs would need the
		// operand's chunks on the GPU that runs each task: read from host memory, named).
		opt.HeldOperands = len(s.devs) == 1
	case gpuPlanned:
		opt.LateGather = deviceGather
	case plan.Keeper:
		opt.HeldOperands = true // a call's operands kept there are read by the workers
		opt.Held = func(_ *plan.Kernel, n *expr.Node, lo, hi []int) (plan.Block, bool) {
			if c, ok := n.Buf.(*keptChunks); ok {
				return c.refBlock(s, lo, hi)
			}
			return plan.Block{}, false
		}
	case *engine.Threads, engine.Inline:
		opt.LateGather = true // takes and searches gathered inside the tasks, on all cores
		// Chunks persisted in host memory are read in place.
		opt.Held = func(_ *plan.Kernel, n *expr.Node, lo, hi []int) (plan.Block, bool) {
			if h, ok := n.Buf.(*hostChunks); ok {
				return h.block(lo, hi)
			}
			return plan.Block{}, false
		}
	}
	return opt
}

// cutBox copies the box at origin with shape out of all, the row-major values of an array of
// the given shape.
func cutBox(all dtype.Slice, shape, origin, box []int) dtype.Slice {
	out := dtype.Make(all.DType(), int(expr.Size(box)))
	if out.Len() == 0 {
		return out
	}
	r := len(shape)
	if r == 0 {
		dtype.Copy(out, all)
		return out
	}
	strides := make([]int, r)
	st := 1
	for d := r - 1; d >= 0; d-- {
		strides[d] = st
		st *= shape[d]
	}
	inner := box[r-1]
	pos := make([]int, r)
	for o := 0; o < out.Len(); o += inner {
		at := 0
		for d := range r {
			at += (origin[d] + pos[d]) * strides[d]
		}
		dtype.Copy(out.Slice(o, o+inner), all.Slice(at, at+inner))
		for d := r - 2; d >= 0; d-- {
			if pos[d]++; pos[d] < box[d] {
				break
			}
			pos[d] = 0
		}
	}
	return out
}
