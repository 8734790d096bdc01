package cuda

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/io/source"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Result holds what a fused kernel produced for each task, in task order.
type Result struct {
	Values []float64   // RSum, RMin, RMax: the task's partial; RArgMin, RArgMax: the value at Index
	Ints   []int64     // integer reductions: the task's partial (or the value at Index), as Values
	Imag   []float64   // complex sums: the imaginary part (Values holds the real part)
	Index  []int64     // RArgMin, RArgMax: row-major index in the task's iteration space (-1: empty)
	Count  []float64   // RWelford: elements
	Mean   []float64   // RWelford: mean
	M2     []float64   // RWelford: sum of squared deviations from the mean
	Out    [][]float64 // RNone: the task's elements, row-major
	Axes   []Partial   // partial reductions (Spec.Kept > 0): each task's partials
	// Dev holds, with Options.Keep, each RNone task's elements left on the device (row-major);
	// FreeResult releases them.
	Dev  []driver.DevicePtr
	kept []driver.DevicePtr // the allocations behind Dev
}

// Options adjust a run.
type Options struct {
	// Poison fills output buffers with an all-ones NaN before each launch and fails the run if
	// any element still holds it afterwards (a test of the kernels' coverage).
	Poison bool
	// Keep leaves the outputs of an elementwise (RNone) kernel on the device, in Result.Dev,
	// instead of downloading them into Result.Out; and those of a partial reduction whose
	// partials are its final values (KeepsPartials), each task's kept elements row-major.
	Keep bool
}

const poisonBits = math.MaxUint64

// traceRuns (GPUNOTES_GPU_TRACE=1) prints each multi-GPU run's per-GPU finish times, for
// finding where scaling loses time.
var traceRuns = os.Getenv("GPUNOTES_GPU_TRACE") == "1"

// Trace prints a line to stderr under GPUNOTES_GPU_TRACE=1 (phase times of GPU work, for
// finding where time goes).
func Trace(format string, args ...any) {
	if traceRuns {
		fmt.Fprintf(os.Stderr, "gpunotes trace: "+format+"\n", args...)
	}
}

// Run executes the fused kernel of s for every task on device d: one launch covers up to
// MaxTasksPerLaunch tasks (blockIdx.y) split into slices (blockIdx.x), and no intermediate array
// is stored. Each task's partial is combined from its slices in a fixed order, so results do not
// depend on timing or on which GPU ran the task.
func (d *Device) Run(ctx context.Context, s *Spec, tasks []Task, opt Options) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Mirror != nil && s.Rank == 3 {
		st := make([]Task, len(tasks))
		for i := range tasks {
			st[i] = mirrorStrips(tasks[i], mirrorStrip)
		}
		tasks = st
	}
	for i := range tasks {
		if err := tasks[i].validate(s); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	if opt.Keep && s.Reduce != RNone {
		if err := keepsPartials(s, tasks); err != nil {
			return nil, err
		}
	}
	if s.Kept == 0 && !s.Tile && s.Mirror == nil { // a mirrored kernel reads rows and columns
		ct := make([]Task, len(tasks))
		for i := range tasks {
			ct[i] = collapsed(tasks[i])
		}
		tasks = ct
	}
	res := newResult(s, len(tasks))
	run := d.run
	if s.Kept > 0 {
		res = &Result{Axes: make([]Partial, len(tasks))}
		run = d.runAxes
	}
	if opt.Keep {
		res.Dev = make([]driver.DevicePtr, len(tasks))
	}
	err := d.Do(ctx, func() error { return run(ctx, s, tasks, opt, res) })
	if err != nil {
		d.FreeResult(res)
		return nil, err
	}
	return res, nil
}

// FreeResult releases the device outputs a run with Options.Keep left in res.
func (d *Device) FreeResult(res *Result) {
	if len(res.kept) == 0 {
		return
	}
	_ = d.Do(context.Background(), func() error {
		for _, p := range res.kept {
			d.pool.Free(p)
		}
		return nil
	})
	res.kept, res.Dev = nil, nil
}

func newResult(s *Spec, n int) *Result {
	res := &Result{}
	switch s.AccLane() {
	case ptx.LaneI:
		res.Ints = make([]int64, n)
		if s.Reduce == RArgMin || s.Reduce == RArgMax {
			res.Index = make([]int64, n)
		}
		return res
	case ptx.LaneC:
		res.Values, res.Imag = make([]float64, n), make([]float64, n)
		return res
	}
	switch s.Reduce {
	case RNone:
		res.Out = make([][]float64, n)
	case RWelford:
		res.Count, res.Mean, res.M2 = make([]float64, n), make([]float64, n), make([]float64, n)
	case RArgMin, RArgMax:
		res.Values, res.Index = make([]float64, n), make([]int64, n)
	default:
		res.Values = make([]float64, n)
	}
	return res
}

// run is Run on the device goroutine.
func (d *Device) run(ctx context.Context, s *Spec, tasks []Task, opt Options, res *Result) error {
	fn, err := d.kernel(s)
	if err != nil {
		return err
	}
	name := "gpn_fused_" + s.Key()
	elems := make([]int64, len(tasks))
	for i := range tasks {
		elems[i] = tasks[i].Elements()
	}
	var maxOut int64
	ew := int64(1) // words per output element
	if s.Reduce == RNone {
		ew = int64(s.OutWords())
		maxOut = int64(d.pool.Limit()/2/8) / ew
	}
	var nb int64 // bytes per element of a narrow output
	if s.NarrowOut {
		if !opt.Keep {
			return fmt.Errorf("cuda: a kernel writing narrow elements runs only with Options.Keep (internal)")
		}
		nb = int64(s.Nodes[len(s.Nodes)-1].DType.Size())
		// Each task's elements from a multiple of narrowAlign: 8-byte aligned chunks.
		a := narrowAlign(s.Nodes[len(s.Nodes)-1].DType)
		for i := range elems {
			elems[i] = (elems[i] + a - 1) / a * a
		}
	}
	launches, offs, err := ptx.PlanLaunches(elems, s.Reduce, maxOut)
	if err != nil {
		return err
	}
	if s.NarrowOut {
		for i := range elems {
			elems[i] = tasks[i].Elements()
		}
	}
	R, L := s.Rank, s.Leaves()
	W := ptx.SpecDescWords(s)
	keys := randomKeys(s)
	var keyArgs []uint64 // the kernel's key parameters (keyLeaves)
	for _, l := range ptx.KeyLeaves(s) {
		keyArgs = append(keyArgs, keys[l])
	}
	pw := s.PartialWords()
	for _, ln := range launches {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ln.GridX == 0 {
			continue // only empty tasks
		}
		if opt.Keep && ln.Count == 1 {
			ti := ln.First
			if p, ok, err := d.joinAsOutput(s, &tasks[ti], elems[ti]); err != nil {
				return err
			} else if ok {
				res.kept = append(res.kept, p)
				res.Dev[ti] = p
				continue
			}
		}
		up := newUploads(d)
		release, alloc := up.release, up.alloc
		desc := make([]uint64, W*ln.Count)
		var OutWords int64
		for k := 0; k < ln.Count; k++ {
			ti := ln.First + k
			t := &tasks[ti]
			w := desc[k*W : (k+1)*W]
			for j, dim := range t.Dims {
				w[j] = uint64(dim)
			}
			sl := Slices(elems[ti])
			w[R] = uint64(sl)
			w[R+1] = uint64(offs[ti])
			if s.NarrowOut {
				OutWords = max(OutWords, ((offs[ti]+elems[ti])*nb+7)/8)
			} else if s.Reduce == RNone {
				OutWords = max(OutWords, (offs[ti]+elems[ti])*ew)
			} else {
				OutWords = max(OutWords, (offs[ti]+int64(sl))*int64(pw))
			}
			for l := 0; l < L; l++ {
				if err := up.leaf(w[R+2+l*(R+2):], t, l, keys); err != nil {
					release()
					return err
				}
			}
			if s.StoredMirror() {
				w[W-1] = uint64(t.MirrorBase)
			}
		}
		dp, err := alloc(uint64(len(desc) * 8))
		if err != nil {
			release()
			return err
		}
		if err := driver.MemcpyHtoD(dp, unsafe.Pointer(&desc[0]), uint64(len(desc)*8)); err != nil {
			release()
			return fmt.Errorf("upload task descriptors: %w", err)
		}
		outBytes := uint64(max(OutWords, 1) * 8)
		op, err := alloc(outBytes)
		if err != nil {
			release()
			return err
		}
		if opt.Poison {
			if err := driver.MemsetD32Async(op, math.MaxUint32, outBytes/4, d.stream); err != nil {
				release()
				return err
			}
		}
		grid := [3]uint32{uint32(ln.GridX), uint32(ln.Count), 1}
		block := [3]uint32{BlockSize, 1, 1}
		descArg, outArg := uint64(dp), uint64(op)
		params := []unsafe.Pointer{unsafe.Pointer(&descArg), unsafe.Pointer(&outArg)}
		for i := range keyArgs {
			params = append(params, unsafe.Pointer(&keyArgs[i]))
		}
		t0 := time.Now()
		lerr := fn.Launch(grid, block, 0, d.stream, params)
		if lerr == nil {
			lerr = d.stream.Synchronize()
		}
		if lerr != nil {
			release()
			return fmt.Errorf("kernel %s (grid %dx%dx1, block %dx1x1, %d tasks): %w", name, grid[0], grid[1], BlockSize, ln.Count, lerr)
		}
		Trace("kernel %s: grid %dx%d, %d tasks, dims %v: launch to sync %.3f ms", name, grid[0], grid[1], ln.Count, tasks[ln.First].Dims, float64(time.Since(t0).Microseconds())/1e3)
		if opt.Keep {
			// The output buffer, allocated last, stays; inputs and descriptors go.
			up.bufs = up.bufs[:len(up.bufs)-1]
			release()
			res.kept = append(res.kept, op)
			for k := 0; k < ln.Count; k++ {
				ti := ln.First + k
				if s.NarrowOut {
					res.Dev[ti] = op + driver.DevicePtr(offs[ti]*nb)
				} else {
					res.Dev[ti] = op + driver.DevicePtr(offs[ti]*8*ew)
				}
			}
			continue
		}
		host, err := d.staging(outBytes)
		if err != nil {
			release()
			return err
		}
		if err := driver.MemcpyDtoH(unsafe.Pointer(&host[0]), op, outBytes); err != nil {
			release()
			return fmt.Errorf("download results: %w", err)
		}
		release()
		words := host[:OutWords]
		if opt.Poison {
			for i, v := range words {
				if v == poisonBits {
					return fmt.Errorf("kernel %s left output word %d of %d unwritten", name, i, len(words))
				}
			}
		}
		for k := 0; k < ln.Count; k++ {
			ti := ln.First + k
			if s.AccLane() != ptx.LaneF {
				collectLane(s, res, ti, words, offs[ti], Slices(elems[ti]))
				continue
			}
			collect(s.Reduce, res, ti, words, offs[ti]*ew, elems[ti]*ew)
		}
	}
	// Tasks with no elements.
	for i, m := range elems {
		if m == 0 && s.AccLane() != ptx.LaneF {
			collectLane(s, res, i, nil, 0, 0)
		} else if m == 0 {
			collect(s.Reduce, res, i, nil, 0, 0)
		}
	}
	return nil
}

// minStaging is the least pinned staging a device allocates: growing it later means freeing
// and allocating pinned memory, which waits for the device and takes a lock across devices
// (8 GPUs growing it at once in their first full-size launch cost 25 ms on 8x H200).
const minStaging = 8 << 20

// staging returns a pinned host buffer of at least n bytes, grown as needed and kept per device.
func (d *Device) staging(n uint64) ([]uint64, error) {
	n = max(n, minStaging)
	if uint64(len(d.pinned))*8 < n {
		if d.pinnedPtr != nil {
			_ = driver.MemFreeHost(d.pinnedPtr)
			d.pinnedPtr, d.pinned = nil, nil
		}
		p, err := driver.MemAllocHost(n)
		if err != nil {
			return nil, fmt.Errorf("pinned host buffer of %s: %w", human(n), err)
		}
		d.pinnedPtr = p
		d.pinned = unsafe.Slice((*uint64)(p), n/8)
	}
	return d.pinned, nil
}

// collect turns task ti's words of a launch's output into its result.
func collect(r Reduce, res *Result, ti int, words []uint64, off, m int64) {
	f := func(i int64) float64 { return math.Float64frombits(words[i]) }
	s := Slices(m)
	switch r {
	case RNone:
		out := make([]float64, m)
		for i := range out {
			out[i] = f(off + int64(i))
		}
		res.Out[ti] = out
	case RSum:
		parts := make([]float64, s)
		for b := range parts {
			parts[b] = f(off + int64(b))
		}
		res.Values[ti] = PairwiseSum(parts)
	case RMin, RMax:
		v := math.Inf(1)
		if r == RMax {
			v = math.Inf(-1)
		}
		for b := 0; b < s; b++ {
			v = pick(v, f(off+int64(b)), r == RMax)
		}
		res.Values[ti] = v
	case RArgMin, RArgMax:
		v, idx := math.NaN(), int64(-1)
		for b := 0; b < s; b++ {
			v2, i2 := f(2*(off+int64(b))), int64(words[2*(off+int64(b))+1])
			if i2 < 0 {
				continue
			}
			if idx < 0 || better(v2, i2, v, idx, r == RArgMax) {
				v, idx = v2, i2
			}
		}
		res.Values[ti], res.Index[ti] = v, idx
	case RWelford:
		var n, mean, m2 float64
		for b := 0; b < s; b++ {
			o := 3 * (off + int64(b))
			n, mean, m2 = MergeWelford(n, mean, m2, f(o), f(o+1), f(o+2))
		}
		res.Count[ti], res.Mean[ti], res.M2[ti] = n, mean, m2
	}
}

func pick(a, b float64, isMax bool) float64 {
	if math.IsNaN(a) {
		return a
	}
	if math.IsNaN(b) {
		return b
	}
	if isMax {
		return math.Max(a, b)
	}
	return math.Min(a, b)
}

// better reports whether (v2, i2) beats (v, i) for argmin/argmax: NaN first, then the strictly
// better value, then the smaller index.
func better(v2 float64, i2 int64, v float64, i int64, isMax bool) bool {
	n1, n2 := math.IsNaN(v), math.IsNaN(v2)
	switch {
	case n1 || n2:
		return n2 && (!n1 || i2 < i)
	case v2 == v:
		return i2 < i
	case isMax:
		return v2 > v
	}
	return v2 < v
}

// PairwiseSum sums xs by recursive halving, a fixed order.
func PairwiseSum(xs []float64) float64 {
	switch len(xs) {
	case 0:
		return 0
	case 1:
		return xs[0]
	}
	h := len(xs) / 2
	return PairwiseSum(xs[:h]) + PairwiseSum(xs[h:])
}

// MergeWelford combines two (count, mean, M2) summaries (Chan et al.).
func MergeWelford(n, m, q, n2, m2, q2 float64) (float64, float64, float64) {
	if n2 == 0 {
		return n, m, q
	}
	if n == 0 {
		return n2, m2, q2
	}
	nn := n + n2
	d := m2 - m
	return nn, m + d*(n2/nn), q + q2 + d*d*(n*n2/nn)
}

// RunOn spreads tasks over several devices (contiguous blocks of tasks, one block per device,
// run concurrently) and returns the results in task order; they equal those of one device.
func RunOn(ctx context.Context, devs []*Device, s *Spec, tasks []Task, opt Options) (*Result, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("no GPU given")
	}
	if len(devs) == 1 || len(tasks) < 2 {
		return devs[0].Run(ctx, s, tasks, opt)
	}
	n := min(len(devs), len(tasks))
	parts := make([]*Result, n)
	errs := make([]error, n)
	bounds := make([]int, n+1)
	for i := range bounds {
		bounds[i] = i * len(tasks) / n
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	t0 := time.Now()
	took := make([]time.Duration, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			parts[i], errs[i] = devs[i].Run(ctx, s, tasks[bounds[i]:bounds[i+1]], opt)
			took[i] = time.Since(t0)
			if errs[i] != nil {
				cancel()
			}
		}(i)
	}
	wg.Wait()
	if traceRuns {
		fmt.Fprintf(os.Stderr, "gpunotes gpu trace: at %.1f ms: %d tasks on %d GPUs in %v; each GPU done after %v\n",
			float64(t0.UnixMicro()%100_000_000)/1000, len(tasks), n, time.Since(t0), took)
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", devs[i].Info.Index, err)
		}
	}
	res := newResult(s, 0)
	for _, p := range parts {
		res.Values = append(res.Values, p.Values...)
		res.Ints = append(res.Ints, p.Ints...)
		res.Imag = append(res.Imag, p.Imag...)
		res.Index = append(res.Index, p.Index...)
		res.Count = append(res.Count, p.Count...)
		res.Mean = append(res.Mean, p.Mean...)
		res.M2 = append(res.M2, p.M2...)
		res.Out = append(res.Out, p.Out...)
		res.Axes = append(res.Axes, p.Axes...)
	}
	return res, nil
}

// randomKeys maps each random leaf to its Philox key (k0 low word, k1 high), which the kernel
// reads from the leaf's first descriptor word.
func randomKeys(s *Spec) map[int]uint64 {
	keys := map[int]uint64{}
	for _, nd := range s.Nodes {
		if nd.Kind == NRandom {
			keys[nd.Leaf] = uint64(nd.Rand.Key[0]) | uint64(nd.Rand.Key[1])<<32
		}
	}
	return keys
}

// uploads holds one launch's device buffers: inputs (each host buffer uploaded once),
// descriptors and output.
type uploads struct {
	d        *Device
	bufs     []driver.DevicePtr
	uploaded map[unsafe.Pointer]driver.DevicePtr
	joined   map[string]driver.DevicePtr // held blocks joined from chunks, by their copies
}

func newUploads(d *Device) *uploads {
	return &uploads{d: d, uploaded: map[unsafe.Pointer]driver.DevicePtr{}}
}

// upload copies n bytes from host memory at p to the device, once per launch.
func (u *uploads) upload(p unsafe.Pointer, n uint64) (driver.DevicePtr, error) {
	if dp, ok := u.uploaded[p]; ok {
		return dp, nil
	}
	dp, err := u.alloc(n)
	if err != nil {
		return 0, err
	}
	if err := driver.MemcpyHtoD(dp, p, n); err != nil {
		return 0, fmt.Errorf("upload input: %w", err)
	}
	u.uploaded[p] = dp
	return dp, nil
}

// uploadFile reads a file's box to the device through the device's two pinned staging
// buffers: the positioned reads of one piece land in one buffer while the DMA of the previous
// piece runs from the other, so a chunk never sits whole in Go memory and the disk and the
// link work at once.
func (u *uploads) uploadFile(b *plan.Block) (driver.DevicePtr, error) {
	n := expr.Size(b.Shape)
	dp, err := u.alloc(uint64(n) * 8)
	if err != nil {
		return 0, err
	}
	d := u.d
	st, err := d.stagingPair()
	if err != nil {
		return 0, err
	}
	piece := int64(transferPiece / 8)
	for off, k := int64(0), 0; off < n; off, k = off+piece, 1-k {
		m := min(piece, n-off)
		if err := readPiece(b, off, st[k][:m]); err != nil {
			return 0, fmt.Errorf("upload file input: %w", err)
		}
		if err := d.stream.Synchronize(); err != nil { // the DMA out of the other buffer
			return 0, err
		}
		if err := driver.MemcpyHtoDAsync(dp+driver.DevicePtr(off*8), unsafe.Pointer(&st[k][0]), uint64(m)*8, d.stream); err != nil {
			return 0, fmt.Errorf("upload file input: %w", err)
		}
	}
	if err := d.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("upload file input: %w", err)
	}
	return dp, nil
}

// readPiece reads elements [off, off+len(buf)) of a file block into buf, as float64 words,
// with positioned reads on several cores: a read from the page cache copies on the core that
// asks, so one read per piece ran at about 5 GB/s on the H200 machine, below the link.
func readPiece(b *plan.Block, off int64, buf []float64) error {
	const grain = 1 << 20 // values
	parts := min(runtime.GOMAXPROCS(0), (len(buf)+grain-1)/grain)
	if parts <= 1 {
		return source.ReadRange(b.File, b.Origin, b.Shape, off, buf)
	}
	per := (len(buf) + parts - 1) / parts
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := min(i*per, len(buf)), min((i+1)*per, len(buf))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = source.ReadRange(b.File, b.Origin, b.Shape, off+int64(lo), buf[lo:hi])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (u *uploads) alloc(n uint64) (driver.DevicePtr, error) {
	p, err := u.d.pool.Alloc(n)
	if err == nil {
		u.bufs = append(u.bufs, p)
	}
	return p, err
}

func (u *uploads) release() {
	for _, b := range u.bufs {
		u.d.pool.Free(b)
	}
	u.bufs = nil
}

// leaf fills leaf l's descriptor words b (buffer address or Philox key, offset, strides) for
// task t, uploading the leaf's input data unless the device holds it already.
func (u *uploads) leaf(b []uint64, t *Task, l int, keys map[int]uint64) error {
	if l < len(t.Held) && t.Held[l].Ptr != 0 && t.Held[l].Copies != nil {
		p, err := u.join(&t.Held[l]) // chunks held on this GPU, joined there
		if err != nil {
			return err
		}
		b[0] = uint64(p)
	} else if l < len(t.Held) && t.Held[l].Ptr != 0 {
		b[0] = uint64(t.Held[l].Ptr) // an array held on this GPU, read in place
	} else if l < len(t.Gathers) && t.Gathers[l] != nil {
		if t.Gathers[l].Len() > 0 {
			p, err := u.gather(t.Gathers[l])
			if err != nil {
				return err
			}
			b[0] = uint64(p)
		}
	} else if l < len(t.Files) && t.Files[l] != nil {
		if expr.Size(t.Files[l].Shape) > 0 {
			p, err := u.uploadFile(t.Files[l])
			if err != nil {
				return err
			}
			b[0] = uint64(p)
		}
	} else if l < len(t.InputsNarrow) && t.InputsNarrow[l] != nil {
		if in := t.InputsNarrow[l]; len(in) > 0 {
			p, err := u.upload(unsafe.Pointer(&in[0]), uint64(len(in)))
			if err != nil {
				return err
			}
			b[0] = uint64(p)
		}
	} else if l < len(t.Inputs) && len(t.Inputs[l]) > 0 {
		in := t.Inputs[l]
		p, err := u.upload(unsafe.Pointer(&in[0]), uint64(len(in)*8))
		if err != nil {
			return err
		}
		b[0] = uint64(p)
	}
	if key, ok := keys[l]; ok {
		b[0] = key // random leaves: the Philox key, read by the kernel
	}
	if l < len(t.Maps) {
		b[1] = uint64(t.Maps[l].Off)
		for j, st := range t.Maps[l].Strides {
			b[2+j] = uint64(st)
		}
	}
	return nil
}
