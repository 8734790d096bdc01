package cuda

import (
	"context"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Partial is one task's result of a partial reduction (Spec.Kept > 0): one entry per kept
// element, row-major over the kept axes.
type Partial struct {
	Values []float64 // sum, min, max; ArgMin/ArgMax: the value at Index; complex sums: real parts
	Ints   []int64   // integer reductions: as Values
	Imag   []float64 // complex sums: imaginary parts
	Index  []int64   // ArgMin, ArgMax: row-major index over the task's reduced axes (-1: none)
	Count  []float64 // Welford: elements, mean, sum of squared deviations
	Mean   []float64
	M2     []float64
}

// Threads per task that a partial reduction aims at (at least), and the fewest elements a
// thread should walk. The slice count of a task depends on its shape alone, never on the
// launch or the number of GPUs, so the bits are the same for any of those.
const (
	axesMinThreads = 1 << 17
	axesMinWalk    = 256
	// axesMinWarpThreads is axesMinThreads for Spec.Rows.
	axesMinWarpThreads = 1 << 14
)

// AxesSlices returns how many outer slices each kept element of a partial reduction is split
// into, for kept elements k and reduced elements n per kept element: a block takes 32 kept
// elements and one outer slice, its eight warps eight inner slices of it.
func AxesSlices(k, n int64) int64 {
	if k <= 0 || n <= 0 {
		return 1
	}
	threads := (k + 31) / 32 * BlockSize
	s := min((axesMinThreads+threads-1)/threads, (n+8*axesMinWalk-1)/(8*axesMinWalk))
	return max(min(s, MaxSlices), 1)
}

// axesMinRow is the fewest reduced elements (of a whole kernel) for which a reduction over
// the innermost axis walks each run with a warp (Spec.Rows).
const axesMinRow = 256

// AxesWarpSlices is AxesSlices for Spec.Rows: how many warps walk each kept element's run.
func AxesWarpSlices(k, n int64) int64 {
	if k <= 0 || n <= 0 {
		return 1
	}
	s := min((axesMinWarpThreads/32+k-1)/k, (n+32*axesMinWalk-1)/(32*axesMinWalk))
	return max(min(s, MaxSlices), 1)
}

// axesMaxShort is the longest reduced run (of a whole kernel) that one thread walks alone
// (Spec.Short). Up to 8 the block walk's warps take an element or none each; up to 32, four at
// most, each warp's start still paid for a few elements. (Measured on an H100 for runs of 2
// only, the reshape row: 302 -> 16.7 ms; 32 is a choice: a longer run of a small result would
// leave a thread walking it alone while the block walk spread it over eight warps.)
const axesMaxShort = 32

// shortMinThreads is the fewest threads a short walk's task aims at; past them a thread takes
// up to shortMaxPerThread kept elements (a grid-stride loop), so that its start (descriptor
// loads, the leaves' strides) is paid for more than a run or two. Which thread takes a kept
// element changes no bit. GPUNOTES_AXES_SHORT_PER_THREAD sets the most (for measuring).
var (
	shortMinThreads   int64 = 1 << 17
	shortMaxPerThread       = int64(max(1, ptx.EnvCount("GPUNOTES_AXES_SHORT_PER_THREAD", 8)))
)

// shortPerThread returns how many of a task's k kept elements a short walk's thread takes.
func shortPerThread(k int64) int64 {
	return max(1, min(shortMaxPerThread, k/shortMinThreads))
}

// axesSlices returns how many slices each of a task's k kept elements (n reduced elements
// each) is split into in s's walk.
func axesSlices(s *Spec, k, n int64) int64 {
	switch {
	case s.Short:
		return 1
	case s.Rows:
		return AxesWarpSlices(k, n)
	}
	return AxesSlices(k, n)
}

// axesGridX returns the blocks of a task's launch in s's walk, for k kept elements and sl
// slices each.
func axesGridX(s *Spec, k, sl int64) int64 {
	switch {
	case s.Short:
		per := BlockSize * shortPerThread(k)
		return (k*sl + per - 1) / per
	case s.Rows:
		return (k*sl*32 + BlockSize - 1) / BlockSize
	}
	return (k + 31) / 32 * sl
}

// axesShape returns a task's kept and reduced element counts (dims are kept first).
func axesShape(s *Spec, t *Task) (k, n int64) {
	k, n = 1, 1
	for j, d := range t.Dims {
		if j < s.Kept {
			k *= d
		} else {
			n *= d
		}
	}
	return k, n
}

// keepsPartials reports why the partials of a partial reduction cannot be left on the device
// as its values (Options.Keep), or nil when they can: one word per partial (a sum, a min, a
// max) and one slice per kept element, which is what the host's combine of a task's slices
// then returns unchanged (PairwiseSum of one value, pick of an identity and one value).
func keepsPartials(s *Spec, tasks []Task) error {
	if s.Kept == 0 || s.PartialWords() != 1 || s.Reduce == RArgMin || s.Reduce == RArgMax || s.AccLane() == ptx.LaneC {
		return fmt.Errorf("cuda: Options.Keep needs an elementwise kernel or a partial sum, min or max")
	}
	for i := range tasks {
		k, n := axesShape(s, &tasks[i])
		sl := axesSlices(s, k, n)
		if k == 0 || n == 0 || sl != 1 {
			return fmt.Errorf("cuda: task %d of a partial reduction (%d kept, %d reduced elements) combines %d slices per element on the host", i, k, n, sl)
		}
	}
	return nil
}

// maxAxesWords bounds one launch's partial words (a single larger task still runs alone).
const maxAxesWords = 1 << 26

// runAxes is run for a partial reduction.
func (d *Device) runAxes(ctx context.Context, s *Spec, tasks []Task, opt Options, res *Result) error {
	fn, err := d.kernel(s)
	if err != nil {
		return err
	}
	name := "gpn_axes_" + s.Key()
	R, L := s.Rank, s.Leaves()
	W := ptx.AxesDescWords(R, L)
	pw := int64(s.PartialWords())
	keys := randomKeys(s)
	ks, ns, ss := make([]int64, len(tasks)), make([]int64, len(tasks)), make([]int64, len(tasks))
	for i := range tasks {
		ks[i], ns[i] = axesShape(s, &tasks[i])
		ss[i] = axesSlices(s, ks[i], ns[i])
	}
	for first := 0; first < len(tasks); {
		if err := ctx.Err(); err != nil {
			return err
		}
		// One launch: tasks [first, last), their partial slots at offs.
		last := first
		var slots, gridX int64
		offs := map[int]int64{}
		for last < len(tasks) && last-first < MaxTasksPerLaunch {
			need := ks[last] * ss[last]
			if last > first && (slots+need)*pw > maxAxesWords {
				break
			}
			offs[last] = slots
			slots += need
			gridX = max(gridX, axesGridX(s, ks[last], ss[last]))
			last++
		}
		if err := d.launchAxes(ctx, fn, name, s, tasks[first:last], first, ks, ns, ss, offs, slots, gridX, W, keys, opt, res); err != nil {
			return err
		}
		first = last
	}
	return nil
}

// launchAxes runs one launch of a partial reduction over tasks (numbered from first) and
// combines each kept element's slices in slice order.
func (d *Device) launchAxes(ctx context.Context, fn driver.Function, name string, s *Spec, tasks []Task, first int,
	ks, ns, ss []int64, offs map[int]int64, slots, gridX int64, W int, keys map[int]uint64, opt Options, res *Result) error {
	pw := int64(s.PartialWords())
	up := newUploads(d)
	defer up.release()
	if gridX == 0 {
		if opt.Keep {
			return fmt.Errorf("cuda: Options.Keep of a partial reduction over no elements")
		}
		for k := range tasks {
			res.Axes[first+k] = emptyPartial(s, ks[first+k])
		}
		return nil
	}
	op, err := d.axesPartials(up, fn, name, s, tasks, first, ks, ns, ss, offs, slots, gridX, W, keys, opt)
	if err != nil {
		return err
	}
	outBytes := uint64(slots*pw) * 8
	if opt.Keep {
		// One slice per kept element (keepsPartials): the slots are the values. The output
		// buffer, allocated last (axesPartials), stays; inputs and descriptors go.
		up.bufs = up.bufs[:len(up.bufs)-1]
		res.kept = append(res.kept, op)
		for k := range tasks {
			res.Dev[first+k] = op + driver.DevicePtr(offs[first+k]*pw*8)
		}
		return nil
	}
	host, err := d.staging(outBytes)
	if err != nil {
		return err
	}
	if err := driver.MemcpyDtoH(unsafe.Pointer(&host[0]), op, outBytes); err != nil {
		return fmt.Errorf("download results: %w", err)
	}
	words := host[:slots*pw]
	if opt.Poison {
		for i, v := range words {
			if v == poisonBits {
				return fmt.Errorf("kernel %s left output word %d of %d unwritten", name, i, len(words))
			}
		}
	}
	// Tasks combine their slices independently: spread them over the cores.
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ti := range next {
				res.Axes[ti] = collectAxes(s, words, offs[ti], ks[ti], ss[ti])
			}
		}()
	}
	for k := range tasks {
		next <- first + k
	}
	close(next)
	wg.Wait()
	return nil
}

// axesPartials runs one launch of a partial reduction over tasks (numbered from first, gridX
// above 0), its buffers taken from up, and returns where the partials are (slots of
// s.partialWords() words, task ti's from slot offs[ti]).
func (d *Device) axesPartials(up *uploads, fn driver.Function, name string, s *Spec, tasks []Task, first int,
	ks, ns, ss []int64, offs map[int]int64, slots, gridX int64, W int, keys map[int]uint64, opt Options) (driver.DevicePtr, error) {
	R, L := s.Rank, s.Leaves()
	pw := int64(s.PartialWords())
	desc := make([]uint64, W*len(tasks))
	for k := range tasks {
		ti := first + k
		t := &tasks[k]
		w := desc[k*W : (k+1)*W]
		for j, dim := range t.Dims {
			w[j] = uint64(dim)
		}
		w[R], w[R+1], w[R+2], w[R+3] = uint64(ks[ti]), uint64(ns[ti]), uint64(ss[ti]), uint64(offs[ti])
		for l := 0; l < L; l++ {
			if err := up.leaf(w[R+4+l*(R+2):], t, l, keys); err != nil {
				return 0, err
			}
		}
	}
	dp, err := up.alloc(uint64(len(desc) * 8))
	if err != nil {
		return 0, err
	}
	if err := driver.MemcpyHtoD(dp, unsafe.Pointer(&desc[0]), uint64(len(desc)*8)); err != nil {
		return 0, fmt.Errorf("upload task descriptors: %w", err)
	}
	outBytes := uint64(slots*pw) * 8
	op, err := up.alloc(outBytes)
	if err != nil {
		return 0, err
	}
	if opt.Poison {
		if err := driver.MemsetD32Async(op, math.MaxUint32, outBytes/4, d.stream); err != nil {
			return 0, err
		}
	}
	grid := [3]uint32{uint32(gridX), uint32(len(tasks)), 1}
	block := [3]uint32{BlockSize, 1, 1}
	descArg, outArg := uint64(dp), uint64(op)
	params := []unsafe.Pointer{unsafe.Pointer(&descArg), unsafe.Pointer(&outArg)}
	t0 := time.Now()
	lerr := fn.Launch(grid, block, 0, d.stream, params)
	if lerr == nil {
		lerr = d.stream.Synchronize()
	}
	if lerr != nil {
		return 0, fmt.Errorf("kernel %s (grid %dx%dx1, block %dx1x1, %d tasks): %w", name, grid[0], grid[1], BlockSize, len(tasks), lerr)
	}
	Trace("kernel %s: grid %dx%d, %d tasks, dims %v: launch to sync %.3f ms", name, grid[0], grid[1], len(tasks), tasks[0].Dims, float64(time.Since(t0).Microseconds())/1e3)
	return op, nil
}

// collectAxes combines, for each of k kept elements, its sl slices' partials (slot
// off + b*k + q) in slice order.
func collectAxes(s *Spec, words []uint64, off, k, sl int64) Partial {
	r := s.Reduce
	pw := int64(s.PartialWords())
	f := func(slot, j int64) float64 { return math.Float64frombits(words[slot*pw+j]) }
	p := emptyPartial(s, k)
	parts := make([]float64, sl)
	l := s.AccLane()
	for q := int64(0); q < k; q++ {
		switch {
		case l == ptx.LaneC:
			for b := range parts {
				parts[b] = f(off+int64(b)*k+q, 0)
			}
			p.Values[q] = PairwiseSum(parts)
			for b := range parts {
				parts[b] = f(off+int64(b)*k+q, 1)
			}
			p.Imag[q] = PairwiseSum(parts)
			continue
		case l == ptx.LaneI:
			v, idx := p.Ints[q], int64(-1)
			for b := int64(0); b < sl; b++ {
				slot := off + b*k + q
				v, idx = mergeInt(r, s.UnsignedAcc(), v, idx, int64(words[slot*pw]), func() int64 { return int64(words[slot*pw+1]) })
			}
			p.Ints[q] = v
			if p.Index != nil {
				p.Index[q] = idx
			}
			continue
		}
		switch r {
		case RSum:
			for b := range parts {
				parts[b] = f(off+int64(b)*k+q, 0)
			}
			p.Values[q] = PairwiseSum(parts)
		case RMin, RMax:
			v := p.Values[q]
			for b := int64(0); b < sl; b++ {
				v = pick(v, f(off+b*k+q, 0), r == RMax)
			}
			p.Values[q] = v
		case RArgMin, RArgMax:
			v, idx := math.NaN(), int64(-1)
			for b := int64(0); b < sl; b++ {
				slot := off + b*k + q
				v2, i2 := f(slot, 0), int64(words[slot*pw+1])
				if i2 < 0 {
					continue
				}
				if idx < 0 || better(v2, i2, v, idx, r == RArgMax) {
					v, idx = v2, i2
				}
			}
			p.Values[q], p.Index[q] = v, idx
		case RWelford:
			var n, m, m2 float64
			for b := int64(0); b < sl; b++ {
				slot := off + b*k + q
				n, m, m2 = MergeWelford(n, m, m2, f(slot, 0), f(slot, 1), f(slot, 2))
			}
			p.Count[q], p.Mean[q], p.M2[q] = n, m, m2
		}
	}
	return p
}

// emptyPartial is the partial of k kept elements that reduced nothing (the identities).
func emptyPartial(s *Spec, k int64) Partial {
	r := s.Reduce
	var p Partial
	switch s.AccLane() {
	case ptx.LaneI:
		p.Ints = make([]int64, k)
		for i := range p.Ints {
			p.Ints[i] = intIdentity(s)
		}
		if r == RArgMin || r == RArgMax {
			p.Index = make([]int64, k)
			for i := range p.Index {
				p.Index[i] = -1
			}
		}
		return p
	case ptx.LaneC:
		p.Values, p.Imag = make([]float64, k), make([]float64, k)
		return p
	}
	switch r {
	case RWelford:
		p.Count, p.Mean, p.M2 = make([]float64, k), make([]float64, k), make([]float64, k)
	case RArgMin, RArgMax:
		p.Values, p.Index = make([]float64, k), make([]int64, k)
		for i := range p.Index {
			p.Index[i] = -1
		}
	default:
		p.Values = make([]float64, k)
		if r == RMin || r == RMax {
			inf := math.Inf(1)
			if r == RMax {
				inf = math.Inf(-1)
			}
			for i := range p.Values {
				p.Values[i] = inf
			}
		}
	}
	return p
}

// axesOutput turns a partial reduction's result for task t into the planner's output: the
// region's shape with the reduced axes set to 1, and for ArgMin/ArgMax the index over the
// reduced axes of the whole iteration space.
func axesOutput(t *plan.Task, s *Spec, p *Partial) *plan.Output {
	r := s.Reduce
	red := t.Kernel.Reduced()
	shape := append([]int(nil), t.Shape...)
	for d := range shape {
		if red[d] {
			shape[d] = 1
		}
	}
	o := &plan.Output{Shape: shape}
	switch {
	case s.AccLane() != ptx.LaneF:
		o.Data = laneData(s, p.Ints, p.Values, p.Imag)
	case r == RWelford:
		o.Data = dtype.OfFloat64(p.Count)
		o.Aux = [][]float64{p.Mean, p.M2}
	default:
		o.Data = dtype.OfFloat64(p.Values)
	}
	if r == RArgMin || r == RArgMax {
		idx := make([]float64, len(p.Index))
		for i, n := range p.Index {
			idx[i] = float64(reducedIndex(t, red, n))
		}
		o.Aux = [][]float64{idx}
	}
	return o
}

// reducedIndex converts a row-major index over the reduced axes of task t's region to one over
// the reduced axes of the kernel's whole iteration space (-1 stays -1).
func reducedIndex(t *plan.Task, red []bool, local int64) int64 {
	if local < 0 {
		return -1
	}
	var g int64
	stride := int64(1)
	for d := len(t.Shape) - 1; d >= 0; d-- {
		if !red[d] {
			continue
		}
		n := int64(t.Shape[d])
		i := local % n
		local /= n
		g += (int64(t.Offset[d]) + i) * stride
		stride *= int64(t.Kernel.Shape[d])
	}
	return g
}
