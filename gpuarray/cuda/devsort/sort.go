package devsort

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

func init() {
	cuda.RegisterLibrary(libName, runHost, runDevice, driver.Load, func(fn expr.CallFn) bool { return fn.Sorts() })
	cuda.RegisterKeep(libName, runKeep, keepRule)
}

// libName names the device sort in Path.
const libName = "the device radix sort"

// keepRule is runKeep's rule (cuda.KeepRule): a sort's output stays on the device when it has
// the values' dtype (an argsort's: int64) and the GPU keeps that dtype as the sort writes it:
// float64 and int64 in 8-byte words, float32, bool and integers of 1 to 4 bytes narrow.
func keepRule(c *plan.CallStep, dt dtype.DType) string {
	odt := dt
	if c.Fn == expr.FnArgsort || c.Fn == expr.FnArgsortDesc {
		odt = dtype.Int64
	}
	switch {
	case odt != c.DType:
		return fmt.Sprintf("%v of %v values gives %v: converted on the host", c.Fn, odt, c.DType)
	case odt == dtype.Float64, odt == dtype.Int64, cuda.Narrow(odt):
		return ""
	}
	return fmt.Sprintf("%v of %v values: the GPU keeps no such array as the sort writes it", c.Fn, odt)
}

// Element type codes of sort.cu.
const (
	tF64 = iota
	tF32
	tI64
	tI32
	tI16
	tI8
	tU64
	tU32
	tU16
	tU8
)

// typeCode returns sort.cu's code of dt and the bits its keys have.
func typeCode(dt dtype.DType) (code, keyBits int, err error) {
	switch dt {
	case dtype.Float64:
		return tF64, 64, nil
	case dtype.Float32:
		return tF32, 32, nil
	case dtype.Int64:
		return tI64, 64, nil
	case dtype.Int32:
		return tI32, 32, nil
	case dtype.Int16:
		return tI16, 16, nil
	case dtype.Int8:
		return tI8, 8, nil
	case dtype.Uint64:
		return tU64, 64, nil
	case dtype.Uint32:
		return tU32, 32, nil
	case dtype.Uint16:
		return tU16, 16, nil
	case dtype.Uint8, dtype.Bool: // false < true, as uint8
		return tU8, 8, nil
	}
	return 0, 0, fmt.Errorf("%v values have no order (sort real numbers)", dt)
}

// Launch shape of the line sort (sort.cu's RT, RIPT) and of the loops over elements.
const (
	radixThreads = 256
	radixTile    = radixThreads * 8
	loopThreads  = 256
)

// traced: GPUNOTES_GPU_TRACE=1 times the sort on the device, without the transfers.
var traced = os.Getenv("GPUNOTES_GPU_TRACE") == "1"

// maxElems is the largest block sorted on a GPU: payloads are 32-bit positions.
const maxElems = 1<<32 - 1

// Sort sorts the lines of vals (row-major, shape) along c.Axis on d as the CPU does
// (cpu.ApplyCall): the sorted values in c.DType, or their int64 indices for an argsort.
func Sort(ctx context.Context, d *cuda.Device, c *plan.CallStep, vals dtype.Slice, shape []int) (dtype.Slice, []int, error) {
	return runHost(ctx, d, c, vals, shape, nil)
}

func runHost(ctx context.Context, d *cuda.Device, c *plan.CallStep, vals dtype.Slice, shape []int, _ []dtype.Slice) (dtype.Slice, []int, error) {
	var out dtype.Slice
	err := d.Do(ctx, func() error {
		n := vals.Len()
		if n == 0 {
			out = dtype.Make(c.DType, int(expr.Size(c.OutShape(shape))))
			return nil
		}
		x, err := d.Pool().Alloc(uint64(len(vals.Bytes())))
		if err != nil {
			return fmt.Errorf("devsort: input buffer: %w", err)
		}
		defer d.Pool().Free(x)
		if err := upload(d, x, vals.Bytes()); err != nil {
			return fmt.Errorf("devsort: upload: %w", err)
		}
		out, err = sortOn(ctx, d, c, x, vals.DType(), shape)
		return err
	})
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	return out, c.OutShape(shape), nil
}

func runDevice(ctx context.Context, d *cuda.Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, _ []cuda.Operand) (dtype.Slice, []int, error) {
	var out dtype.Slice
	err := d.Do(ctx, func() error {
		if expr.Size(shape) == 0 {
			out = dtype.Make(c.DType, int(expr.Size(c.OutShape(shape))))
			return nil
		}
		x, free, err := sortInput(d, ptr, dt, int(expr.Size(shape)))
		if err != nil {
			return err
		}
		defer free()
		out, err = sortOn(ctx, d, c, x, dt, shape)
		return err
	})
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	return out, c.OutShape(shape), nil
}

// runKeep is runDevice leaving the sorted values (or positions) on the device
// (cuda.KeepCallRunner): the sort's result buffer becomes the output, in the dtype's own size
// where the GPU keeps that dtype narrow, else in 8-byte words (see keepRule).
func runKeep(ctx context.Context, d *cuda.Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, _ []cuda.Operand) (cuda.KeptCall, error) {
	if why := keepRule(c, dt); why != "" {
		return cuda.KeptCall{}, fmt.Errorf("devsort: %w: %s", cuda.ErrNotKept, why)
	}
	oshape := c.OutShape(shape)
	out := cuda.KeptCall{Shape: oshape, Narrow: cuda.Narrow(c.DType)}
	err := d.Do(ctx, func() error {
		if expr.Size(shape) == 0 {
			var err error
			out.Ptr, err = d.Pool().Alloc(8)
			return err
		}
		x, free, err := sortInput(d, ptr, dt, int(expr.Size(shape)))
		if err != nil {
			return err
		}
		defer free()
		s, err := newSorter(d, c, x, dt, shape)
		if err != nil {
			return err
		}
		defer s.free()
		how, err := s.sort(ctx)
		if err != nil {
			return err
		}
		if traced {
			if err := d.Stream().Synchronize(); err != nil {
				return fmt.Errorf("devsort: %w", err)
			}
			cuda.Trace("devsort: %v of %d %v values (%d lines) %s on the device in %.3g s (%.3g s of it allocating), left there", c.Fn, s.l.Count()*s.l.N, dt, s.l.Count(), how, time.Since(s.t0).Seconds(), s.allocated.Seconds())
		}
		// The sort's scratch goes back to the pool below, and the next allocation may hand it out
		// to a copy that does not wait for this stream (a synchronous upload of a kernel's task
		// descriptors): the sort must be done first. Without this wait such an upload overwrote
		// the tile counters of a sort still running (CUDA_ERROR_ILLEGAL_ADDRESS on an H200).
		if err := d.Stream().Synchronize(); err != nil {
			return fmt.Errorf("devsort: %w", err)
		}
		out.Ptr = s.res
		s.bufs = slices.DeleteFunc(s.bufs, func(p driver.DevicePtr) bool { return p == s.res }) // the caller's now
		return nil
	})
	if err != nil {
		return cuda.KeptCall{}, err
	}
	return out, nil
}

// sortInput returns the values the sort reads from the fused words at ptr (n of them, standing
// for values of dt): ptr itself for 8-byte values, else a buffer of the values in their own
// size, which free gives back. Call it on the device goroutine.
func sortInput(d *cuda.Device, ptr driver.DevicePtr, dt dtype.DType, n int) (x driver.DevicePtr, free func(), err error) {
	none := func() {}
	switch {
	case dt == dtype.Float64, dt == dtype.Int64, dt == dtype.Uint64:
		// The words are the values: float64s, or the 64-bit integers' bits (EncodeWords).
		return ptr, none, nil
	case dt.IsInteger(): // narrower integers: their words' low bytes
		if x, err = d.Pool().Alloc(uint64(n * dt.Size())); err != nil {
			return 0, none, fmt.Errorf("devsort: input buffer: %w", err)
		}
		free = func() { d.Pool().Free(x) }
		if err := d.NarrowInts(x, ptr, int64(n), dt); err != nil {
			free()
			return 0, none, fmt.Errorf("devsort: %w", err)
		}
		return x, free, nil
	}
	// The fused values stand for float32 or bool values: convert.
	kind := 0
	switch dt {
	case dtype.Float32:
	case dtype.Bool:
		kind = 1
	default:
		return 0, none, fmt.Errorf("devsort: fused values of dtype %v", dt)
	}
	if x, err = d.Pool().Alloc(uint64(n * dt.Size())); err != nil {
		return 0, none, fmt.Errorf("devsort: input buffer: %w", err)
	}
	free = func() { d.Pool().Free(x) }
	if err := launch(d, "gpn_sort_narrow", grid(n), loopThreads, x, ptr, uint64(n), int32(kind)); err != nil {
		free()
		return 0, none, err
	}
	return x, free, nil
}

// sortOn sorts the block at x (dtype dt, row-major, shape) on d's goroutine and downloads the
// result.
func sortOn(ctx context.Context, d *cuda.Device, c *plan.CallStep, x driver.DevicePtr, dt dtype.DType, shape []int) (dtype.Slice, error) {
	s, err := newSorter(d, c, x, dt, shape)
	if err != nil {
		return dtype.Slice{}, err
	}
	defer s.free()
	how, err := s.sort(ctx)
	if err != nil {
		return dtype.Slice{}, err
	}
	// The host's result is made while the device sorts: Go zeroes reused heap memory, about
	// 0.1 s for 800 MB, which would otherwise come before the first launch.
	out := dtype.Make(s.odt, s.l.Count()*s.klen)
	if traced {
		if err := d.Stream().Synchronize(); err != nil {
			return dtype.Slice{}, fmt.Errorf("devsort: %w", err)
		}
		cuda.Trace("devsort: %v of %d %v values (%d lines) %s on the device in %.3g s (%.3g s of it allocating)", c.Fn, s.l.Count()*s.l.N, dt, s.l.Count(), how, time.Since(s.t0).Seconds(), s.allocated.Seconds())
	}
	if err := download(d, out.Bytes(), s.res); err != nil {
		return dtype.Slice{}, fmt.Errorf("devsort: download: %w", err)
	}
	if out.DType() != c.DType {
		out = dtype.Convert(out, c.DType)
	}
	return out, nil
}

// newSorter checks the sort of the block at x and allocates its result (and kept positions)
// on d; the caller frees it.
func newSorter(d *cuda.Device, c *plan.CallStep, x driver.DevicePtr, dt dtype.DType, shape []int) (*sorter, error) {
	l, err := fft.Split(shape, c.Axis)
	if err != nil {
		return nil, fmt.Errorf("devsort: %w", err)
	}
	n := l.Count() * l.N
	if n > maxElems {
		return nil, fmt.Errorf("devsort: a block of %d values is more than a GPU sort takes (%d): chunk the other axes smaller", n, maxElems)
	}
	code, keyBits, err := typeCode(dt)
	if err != nil {
		return nil, fmt.Errorf("devsort: %w", err)
	}
	s := &sorter{d: d, c: c, l: l, x: x, dt: dt, odt: dt, code: code, keyBits: keyBits, t0: time.Now(),
		arg:  c.Fn == expr.FnArgsort || c.Fn == expr.FnArgsortDesc,
		desc: c.Fn == expr.FnSortDesc || c.Fn == expr.FnArgsortDesc,
		mask: ^uint64(0)}
	if keyBits < 64 {
		s.mask = uint64(1)<<keyBits - 1
	}
	if s.arg { // a sort keeps the dtype (the CPU's converts to c.DType after, as here)
		s.odt = dtype.Int64
	}
	s.klen = l.N
	if len(c.Keep) > 0 { // only the positions a quantile reads come back
		s.klen = len(c.Keep)
		kp := make([]uint32, s.klen)
		for i, p := range c.Keep {
			if p < 0 || p >= l.N {
				return nil, fmt.Errorf("devsort: position %d kept of lines of %d", p, l.N)
			}
			kp[i] = uint32(p)
		}
		if s.keep, err = s.alloc("kept positions", 4*uint64(s.klen)); err != nil {
			s.free()
			return nil, err
		}
		if err := driver.MemcpyHtoD(s.keep, unsafe.Pointer(&kp[0]), 4*uint64(s.klen)); err != nil {
			s.free()
			return nil, fmt.Errorf("devsort: %w", err)
		}
	}
	if s.res, err = s.alloc("result", uint64(l.Count()*s.klen*s.odt.Size())); err != nil {
		s.free()
		return nil, err
	}
	return s, nil
}

// scratchLimit, when not 0, stands for the pool's free memory in sort (tests set it to make
// blocks split).
var scratchLimit uint64

// sort sorts s's block into s.res and says how: line by line, in global passes, or in global
// passes over groups of lines (outer slabs) when the passes' buffers for the whole block do
// not fit in the device's pool. A single slab that does not fit is an error that names the
// sizes, never a crash or a silent trip through the host.
func (s *sorter) sort(ctx context.Context) (string, error) {
	l := s.l
	if l.N >= shortLine && l.N <= radixTile {
		return "line by line", s.lines()
	}
	avail := s.d.Pool().Available()
	if scratchLimit != 0 {
		avail = scratchLimit
	}
	if s.scratch(l.Count()*l.N) <= avail {
		return "in global passes", s.global(ctx)
	}
	slab := l.N * l.Inner
	g := 0
	if per := s.scratch(slab); per <= avail {
		g = int(avail / per)
	}
	if g == 0 || l.Outer == 1 {
		return "", fmt.Errorf("devsort: sorting %d %v values (lines of %d) on %s needs %s of GPU memory beside the values and the result, and %s is free in its pool: chunk the array smaller along the other axes, or raise GPUNOTES_GPU_MEMORY_FRACTION",
			l.Count()*l.N, s.dt, l.N, s.d.Info.Name, human(s.scratch(slab)), human(avail))
	}
	for o0 := 0; o0 < l.Outer; o0 += g {
		sub := *s
		sub.bufs = nil
		sub.l = fft.Lines{Outer: min(g, l.Outer-o0), N: l.N, Inner: l.Inner}
		sub.x = s.x + driver.DevicePtr(o0*slab*s.dt.Size())
		sub.res = s.res + driver.DevicePtr(o0*s.klen*l.Inner*s.odt.Size())
		err := sub.global(ctx)
		s.allocated += sub.allocated
		sub.free()
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("in global passes over groups of %d of %d slabs (the whole block's buffers do not fit the pool)", g, l.Outer), nil
}

// scratch returns the device memory that global passes over n values take beside the values
// and the result: two buffers of keys and, unless keys alone carry them, two of positions,
// and the tiles' status words.
func (s *sorter) scratch(n int) uint64 {
	kb := uint64(4)
	if s.keyBits == 64 {
		kb = 8
	}
	un := uint64(n)
	return 2*kb*un + 2*4*un + 256*8*(un/tile64Pairs+1) + 8*256*4 + 64
}

// human writes a size in bytes for people.
func human(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}

// shortLine is the shortest line sorted by one block (gpn_sort_lines): shorter lines are
// cheaper in global passes, which cost per value, than in a block each, which costs per line.
const shortLine = 64

// sorter is one sort on a device: its block, options and device buffers.
type sorter struct {
	d            *cuda.Device
	c            *plan.CallStep
	l            fft.Lines
	x, res, keep driver.DevicePtr // the values, the result, the kept positions (or 0)
	klen         int              // values per line of the result
	dt, odt      dtype.DType      // of the values, of the result
	code         int
	keyBits      int
	mask         uint64
	arg, desc    bool
	bufs         []driver.DevicePtr
	t0           time.Time
	allocated    time.Duration // time spent in allocations, for the trace
}

func (s *sorter) alloc(what string, size uint64) (driver.DevicePtr, error) {
	t := time.Now()
	p, err := s.d.Pool().Alloc(size)
	s.allocated += time.Since(t)
	if err != nil {
		return 0, fmt.Errorf("devsort: %s: %w", what, err)
	}
	s.bufs = append(s.bufs, p)
	return p, nil
}

func (s *sorter) free() {
	for _, b := range s.bufs {
		s.d.Pool().Free(b)
	}
}

// lines sorts each line in one block, in shared memory.
func (s *sorter) lines() error {
	name := "gpn_sort_lines32"
	if s.keyBits == 64 {
		name = "gpn_sort_lines64"
	}
	return launch(s.d, name, s.l.Count(), radixThreads, s.res, s.x, uint64(s.l.N), uint64(s.l.Inner), int32(s.code), b2i(s.desc), s.mask,
		int32(s.keyBits), s.keep, uint64(s.klen), int32(s.dt.Size()), b2i(s.arg))
}

// Tile shapes of the passes (sort.cu's TT and TI*): threads a block, keys a thread, by key width
// and payload.
const (
	tileThreads = 384
	tile64Keys  = tileThreads * 12
	tile64Pairs = tileThreads * 10
	tile32Keys  = tileThreads * 12
	tile32Pairs = tileThreads * 12
)

// tileOf returns the keys a block of the passes takes.
func tileOf(wide, pairs bool) int {
	switch {
	case wide && pairs:
		return tile64Pairs
	case wide:
		return tile64Keys
	case pairs:
		return tile32Pairs
	}
	return tile32Keys
}

// global sorts the block in passes over all its values: the keys' digits, then the lines'.
func (s *sorter) global(ctx context.Context) error {
	d, l := s.d, s.l
	n := l.Count() * l.N
	un := uint64(n)
	wide := s.keyBits == 64
	kb := uint64(4)
	if wide {
		kb = 8
	}
	r := &radix{d: d, s: s, n: un}
	var err error
	if r.counts, err = s.alloc("digit counts", 8*256*4); err != nil {
		return err
	}
	if r.special, err = s.alloc("flag", 4); err != nil {
		return err
	}
	if r.next, err = s.alloc("tile counter", 4); err != nil {
		return err
	}
	if r.status, err = s.alloc("tile status", 256*8*uint64((n+tile64Pairs-1)/tile64Pairs)); err != nil {
		return err
	}
	// The digit counts of every pass, and whether a NaN or -0 is there, in one read of the values.
	np := (s.keyBits + 7) / 8
	counts, sp, err := r.upfront(wide, np, s.x, 0, true, s.code, s.desc, s.mask)
	if err != nil {
		return err
	}
	// One line and only the values: the keys alone carry them, unless a NaN or a -0 (whose keys
	// are shared with other bit patterns) needs its original bits back.
	keysOnly := !s.arg && l.Count() == 1 && !sp
	var keys, keys2, idx, idx2 driver.DevicePtr
	if keys, err = s.alloc("keys", kb*un); err != nil {
		return err
	}
	if keys2, err = s.alloc("keys", kb*un); err != nil {
		return err
	}
	if !keysOnly {
		if idx, err = s.alloc("payloads", 4*un); err != nil {
			return err
		}
		if idx2, err = s.alloc("payloads", 4*un); err != nil {
			return err
		}
	}
	// With keys alone and all of each line, the last pass writes the values themselves.
	var out driver.DevicePtr
	if keysOnly && s.keep == 0 {
		out = s.res
	}
	k, v, wrote, err := r.passes(ctx, wide, counts, np, s.x, keys, keys2, idx, idx2, keysOnly, out)
	if err != nil {
		return err
	}
	if lines := l.Count(); lines > 1 {
		// The lines one after another: stable passes over each payload's line number.
		sk := other(k, keys, keys2)
		if err := launch(d, "gpn_sort_segkeys", grid(n), loopThreads, sk, v, un, uint64(l.N), uint64(l.Inner)); err != nil {
			return err
		}
		lp := (bits.Len(uint(lines-1)) + 7) / 8
		counts, _, err := r.upfront(false, lp, 0, sk, false, 0, false, 0)
		if err != nil {
			return err
		}
		if k, v, _, err = r.passes(ctx, false, counts, lp, 0, sk, k, v, other(v, idx, idx2), false, 0); err != nil {
			return err
		}
	}
	m := l.Count() * s.klen
	switch {
	case wrote:
		return nil
	case keysOnly:
		k32, k64 := k, driver.DevicePtr(0)
		if wide {
			k32, k64 = 0, k
		}
		return launch(d, "gpn_sort_unkeys", grid(m), loopThreads, s.res, k32, k64, s.keep, uint64(m), int32(s.code), b2i(s.desc), s.mask)
	}
	return launch(d, "gpn_sort_out", grid(m), loopThreads, s.res, s.x, v, uint64(l.Count()), uint64(l.N), uint64(l.Inner), s.keep, uint64(s.klen), int32(s.dt.Size()), b2i(s.arg))
}

// other returns whichever of a and b p is not.
func other(p, a, b driver.DevicePtr) driver.DevicePtr {
	if p == a {
		return b
	}
	return a
}

// radix runs the passes of one sort: one kernel a pass (gpn_radix_tile*), each tile finding
// its place among the earlier tiles' by decoupled look-back, the digit totals counted up front.
type radix struct {
	d            *cuda.Device
	s            *sorter
	n            uint64
	counts       driver.DevicePtr // every pass's digit totals (8 x 256)
	special      driver.DevicePtr // set when a NaN or -0 is among the values
	status, next driver.DevicePtr // the tiles' published counts, the tile counter
}

// upfront counts the digits of np passes of the keys (of the values at x, keys null, or of the
// 32-bit keys at keys) and returns them, and whether a NaN or -0 was seen.
func (r *radix) upfront(wide bool, np int, x, keys driver.DevicePtr, fromValues bool, code int, desc bool, mask uint64) ([]uint32, bool, error) {
	st := r.d.Stream()
	if err := driver.MemsetD32Async(r.counts, 0, 8*256, st); err != nil {
		return nil, false, fmt.Errorf("devsort: %w", err)
	}
	if err := driver.MemsetD32Async(r.special, 0, 1, st); err != nil {
		return nil, false, fmt.Errorf("devsort: %w", err)
	}
	name := "gpn_radix_upfront32"
	if wide {
		name = "gpn_radix_upfront64"
	}
	blocks := int(min((r.n+1023)/1024, uint64(8*max(1, r.d.Info.SMs))))
	if err := launch(r.d, name, blocks, loopThreads, x, keys, r.n, int32(code), b2i(desc), mask, int32(np), r.counts, r.special); err != nil {
		return nil, false, err
	}
	if err := st.Synchronize(); err != nil {
		return nil, false, fmt.Errorf("devsort: digit counts: %w", err)
	}
	c := make([]uint32, 8*256+1)
	if err := driver.MemcpyDtoH(unsafe.Pointer(&c[0]), r.counts, 8*256*4); err != nil {
		return nil, false, fmt.Errorf("devsort: %w", err)
	}
	if err := driver.MemcpyDtoH(unsafe.Pointer(&c[8*256]), r.special, 4); err != nil {
		return nil, false, fmt.Errorf("devsort: %w", err)
	}
	return c[:8*256], fromValues && c[8*256] != 0, nil
}

// passes sorts stably by np digits of 8 bits, from the values at x (the first pass makes their
// keys and numbers them) or, x null, from the keys at keys with the payloads at idx, between
// those buffers and keys2, idx2 (idx unused with keysOnly). A pass whose digit is the same for
// every key moves nothing and is left out. With keysOnly and out given, the last pass writes
// the values to out (wrote). It returns the buffers that hold the sorted keys and payloads.
func (r *radix) passes(ctx context.Context, wide bool, counts []uint32, np int, x, keys, keys2, idx, idx2 driver.DevicePtr, keysOnly bool, out driver.DevicePtr) (driver.DevicePtr, driver.DevicePtr, bool, error) {
	var run []int
	for p := 0; p < np; p++ {
		trivial := false
		for _, c := range counts[p*256 : p*256+256] {
			if uint64(c) == r.n {
				trivial = true
				break
			}
		}
		if !trivial {
			run = append(run, p)
		}
	}
	if len(run) == 0 { // every key equal: one pass still makes the keys (and payloads)
		run = []int{0}
	}
	name := "gpn_radix_tile32"
	if wide {
		name = "gpn_radix_tile64"
	}
	if keysOnly {
		name += "k"
	}
	nb := (r.n + uint64(tileOf(wide, !keysOnly)) - 1) / uint64(tileOf(wide, !keysOnly))
	st := r.d.Stream()
	s := r.s
	kin, vin := keys, idx
	kout, vout := keys2, idx2
	if x != 0 { // the first pass reads the values and writes the keys where they would be
		kin, vin = 0, 0
		kout, vout = keys, idx
	}
	wrote := false
	for i, p := range run {
		if err := ctx.Err(); err != nil {
			return 0, 0, false, err
		}
		if err := driver.MemsetD32Async(r.status, 0, nb*512, st); err != nil {
			return 0, 0, false, fmt.Errorf("devsort: %w", err)
		}
		if err := driver.MemsetD32Async(r.next, 0, 1, st); err != nil {
			return 0, 0, false, fmt.Errorf("devsort: %w", err)
		}
		var xin, xout driver.DevicePtr
		if i == 0 {
			xin = x
		}
		if i == len(run)-1 && keysOnly && out != 0 {
			xout, wrote = out, true
		}
		cp := r.counts + driver.DevicePtr(p*256*4)
		kernel := name
		if xin != 0 {
			kernel += "x"
		}
		if err := launch(r.d, kernel, int(nb), tileThreads, kin, xin, vin, kout, xout, vout, r.n, int32(8*p), int32(s.code), b2i(s.desc), s.mask, cp, r.status, r.next); err != nil {
			return 0, 0, false, err
		}
		if kin == 0 { // after the first pass from the values: keys in keys, next into keys2
			kin, vin, kout, vout = keys, idx, keys2, idx2
			continue
		}
		kin, kout = kout, kin
		if !keysOnly {
			vin, vout = vout, vin
		}
	}
	return kin, vin, wrote, nil
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// grid returns the blocks of a grid-stride loop over n elements.
func grid(n int) int { return max(1, min((n+loopThreads-1)/loopThreads, 65536)) }

// launch runs sort.cu's kernel name on d's stream with the given arguments (DevicePtr,
// uint64, uint32 and int32 values).
func launch(d *cuda.Device, name string, blocks, threads int, args ...any) error {
	f, err := function(d, name)
	if err != nil {
		return err
	}
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case driver.DevicePtr:
			p := uint64(v)
			params[i] = unsafe.Pointer(&p)
		case uint64:
			params[i] = unsafe.Pointer(&v)
		case uint32:
			params[i] = unsafe.Pointer(&v)
		case int32:
			params[i] = unsafe.Pointer(&v)
		default:
			return fmt.Errorf("devsort: argument %d of %s has type %T", i, name, a)
		}
	}
	if err := f.Launch([3]uint32{uint32(blocks), 1, 1}, [3]uint32{uint32(threads), 1, 1}, 0, d.Stream(), params); err != nil {
		return fmt.Errorf("devsort: launch %s (%d blocks): %w", name, blocks, err)
	}
	return nil
}

var (
	modMu sync.Mutex
	mods  = map[*cuda.Device]*module{}
)

type module struct {
	mod   driver.Module
	funcs map[string]driver.Function
}

// function returns kernel name of the sort module on d, loading the module on first use. Call
// it on the device goroutine.
func function(d *cuda.Device, name string) (driver.Function, error) {
	modMu.Lock()
	defer modMu.Unlock()
	m := mods[d]
	if m == nil {
		ptx, err := sortPTX(kernels.FlavourFor(d.Info.Major, d.Info.Minor))
		if err != nil {
			return 0, err
		}
		mod, err := driver.ModuleLoadData(append(ptx, 0))
		if err != nil {
			return 0, fmt.Errorf("devsort: load the sort module: %w", err)
		}
		m = &module{mod: mod, funcs: map[string]driver.Function{}}
		mods[d] = m
	}
	if f, ok := m.funcs[name]; ok {
		return f, nil
	}
	f, err := m.mod.Function(name)
	if err != nil {
		return 0, fmt.Errorf("devsort: %w", err)
	}
	m.funcs[name] = f
	return f, nil
}

// sortPTX returns the sort module; GPUNOTES_KERNELS_PTX names a directory to read it from
// instead of the embedded copy, as for the device library.
func sortPTX(flavour string) ([]byte, error) {
	if dir := os.Getenv("GPUNOTES_KERNELS_PTX"); dir != "" {
		b, err := os.ReadFile(dir + "/sort_" + flavour + ".ptx")
		if err != nil {
			return nil, fmt.Errorf("device sort from GPUNOTES_KERNELS_PTX: %w", err)
		}
		return b, nil
	}
	return kernels.SortPTX(flavour)
}

// upload copies b to the device at p: whole float64 words through the device's pinned
// staging, the tail directly.
func upload(d *cuda.Device, p driver.DevicePtr, b []byte) error {
	w := len(b) / 8
	if w > 0 {
		if err := d.CopyToDevice(p, unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), w)); err != nil {
			return err
		}
	}
	if t := len(b) - 8*w; t > 0 {
		return driver.MemcpyHtoD(p+driver.DevicePtr(8*w), unsafe.Pointer(&b[8*w]), uint64(t))
	}
	return nil
}

// download copies the device bytes at p into b, after the work queued on the device's stream.
func download(d *cuda.Device, b []byte, p driver.DevicePtr) error {
	w := len(b) / 8
	if w > 0 {
		if err := d.CopyToHost(unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), w), p); err != nil {
			return err
		}
	}
	if t := len(b) - 8*w; t > 0 {
		if err := d.Stream().Synchronize(); err != nil {
			return err
		}
		return driver.MemcpyDtoH(unsafe.Pointer(&b[8*w]), p+driver.DevicePtr(8*w), uint64(t))
	}
	return nil
}
