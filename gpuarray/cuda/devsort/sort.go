package devsort

import (
	"context"
	"fmt"
	"math/bits"
	"os"
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
	cuda.RegisterDeviceCalls(runHost, runDevice, driver.Load, func(fn expr.CallFn) bool { return fn.Sorts() })
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

// Launch shape of the radix passes (sort.cu's RT, RIPT) and of the scan (SCAN_T).
const (
	radixThreads = 256
	radixTile    = radixThreads * 8
	scanThreads  = 1024
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

func runDevice(ctx context.Context, d *cuda.Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, _ []dtype.Slice) (dtype.Slice, []int, error) {
	var out dtype.Slice
	err := d.Do(ctx, func() error {
		n := 1
		for _, s := range shape {
			n *= s
		}
		if n == 0 {
			out = dtype.Make(c.DType, int(expr.Size(c.OutShape(shape))))
			return nil
		}
		x := ptr
		if dt != dtype.Float64 { // the fused values stand for float32 or bool values: convert
			kind := 0
			switch dt {
			case dtype.Float32:
			case dtype.Bool:
				kind = 1
			default:
				return fmt.Errorf("devsort: fused values of dtype %v", dt)
			}
			var err error
			if x, err = d.Pool().Alloc(uint64(n * dt.Size())); err != nil {
				return fmt.Errorf("devsort: input buffer: %w", err)
			}
			defer d.Pool().Free(x)
			if err := launch(d, "gpn_sort_narrow", grid(n), loopThreads, x, ptr, uint64(n), int32(kind)); err != nil {
				return err
			}
		}
		var err error
		out, err = sortOn(ctx, d, c, x, dt, shape)
		return err
	})
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	return out, c.OutShape(shape), nil
}

// sortOn sorts the block at x (dtype dt, row-major, shape) on d's goroutine and downloads the
// result.
func sortOn(ctx context.Context, d *cuda.Device, c *plan.CallStep, x driver.DevicePtr, dt dtype.DType, shape []int) (dtype.Slice, error) {
	l, err := fft.Split(shape, c.Axis)
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("devsort: %w", err)
	}
	n := l.Count() * l.N
	if n > maxElems {
		return dtype.Slice{}, fmt.Errorf("devsort: a block of %d values is more than a GPU sort takes (%d): chunk the other axes smaller", n, maxElems)
	}
	code, keyBits, err := typeCode(dt)
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("devsort: %w", err)
	}
	s := &sorter{d: d, c: c, l: l, x: x, dt: dt, code: code, keyBits: keyBits, t0: time.Now(),
		arg:  c.Fn == expr.FnArgsort || c.Fn == expr.FnArgsortDesc,
		desc: c.Fn == expr.FnSortDesc || c.Fn == expr.FnArgsortDesc,
		mask: ^uint64(0)}
	if keyBits < 64 {
		s.mask = uint64(1)<<keyBits - 1
	}
	defer s.free()
	odt := dt // a sort keeps the dtype (the CPU's converts to c.DType after, as here)
	if s.arg {
		odt = dtype.Int64
	}
	s.klen = l.N
	if len(c.Keep) > 0 { // only the positions a quantile reads come back
		s.klen = len(c.Keep)
		kp := make([]uint32, s.klen)
		for i, p := range c.Keep {
			if p < 0 || p >= l.N {
				return dtype.Slice{}, fmt.Errorf("devsort: position %d kept of lines of %d", p, l.N)
			}
			kp[i] = uint32(p)
		}
		if s.keep, err = s.alloc("kept positions", 4*uint64(s.klen)); err != nil {
			return dtype.Slice{}, err
		}
		if err := driver.MemcpyHtoD(s.keep, unsafe.Pointer(&kp[0]), 4*uint64(s.klen)); err != nil {
			return dtype.Slice{}, fmt.Errorf("devsort: %w", err)
		}
	}
	m := l.Count() * s.klen
	if s.res, err = s.alloc("result", uint64(m*odt.Size())); err != nil {
		return dtype.Slice{}, err
	}
	how := "line by line"
	if l.N >= shortLine && l.N <= radixTile {
		err = s.lines()
	} else {
		how = "in global passes"
		err = s.global(ctx)
	}
	if err != nil {
		return dtype.Slice{}, err
	}
	// The host's result is made while the device sorts: Go zeroes reused heap memory, about
	// 0.1 s for 800 MB, which would otherwise come before the first launch.
	out := dtype.Make(odt, m)
	if traced {
		if err := d.Stream().Synchronize(); err != nil {
			return dtype.Slice{}, fmt.Errorf("devsort: %w", err)
		}
		cuda.Trace("devsort: %v of %d %v values (%d lines) %s on the device in %.3g s (%.3g s of it allocating)", c.Fn, n, dt, l.Count(), how, time.Since(s.t0).Seconds(), s.allocated.Seconds())
	}
	if err := download(d, out.Bytes(), s.res); err != nil {
		return dtype.Slice{}, fmt.Errorf("devsort: download: %w", err)
	}
	if out.DType() != c.DType {
		out = dtype.Convert(out, c.DType)
	}
	return out, nil
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
	dt           dtype.DType
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
	nb := (n + radixTile - 1) / radixTile
	perTile := 256 * 4 * uint64(nb) // the histogram passes' per-tile counts
	if !scanPasses {
		perTile = 4
	}
	var keys, keys2, idx, idx2, counts, totals, special driver.DevicePtr
	var err error
	for _, b := range []struct {
		p    *driver.DevicePtr
		what string
		size uint64
	}{{&keys, "keys", kb * un}, {&keys2, "keys", kb * un}, {&idx, "payloads", 4 * un}, {&idx2, "payloads", 4 * un},
		{&counts, "digit counts", perTile}, {&totals, "digit totals", 256 * 4}, {&special, "flag", 4}} {
		if *b.p, err = s.alloc(b.what, b.size); err != nil {
			return err
		}
	}
	if err := driver.MemsetD32Async(special, 0, 1, d.Stream()); err != nil {
		return fmt.Errorf("devsort: %w", err)
	}
	k1, k2, i1, i2 := keys, keys2, idx, idx2
	var k32, k64 driver.DevicePtr
	if wide {
		k64 = keys
	} else {
		k32 = keys
	}
	if err := launch(d, "gpn_sort_keys", grid(n), loopThreads, k32, k64, idx, s.x, un, int32(s.code), b2i(s.desc), s.mask, special); err != nil {
		return err
	}
	// One line and only the values: the keys alone carry them, unless a NaN or a -0 (whose keys
	// are shared with other bit patterns) needs its original bits back.
	keysOnly := false
	if !s.arg && l.Count() == 1 {
		if err := d.Stream().Synchronize(); err != nil {
			return fmt.Errorf("devsort: %v keys: %w", s.dt, err)
		}
		var sp uint32
		if err := driver.MemcpyDtoH(unsafe.Pointer(&sp), special, 4); err != nil {
			return fmt.Errorf("devsort: %w", err)
		}
		keysOnly = sp == 0
	}
	r := radix{d: d, n: un, nb: uint32(nb), counts: counts, totals: totals, sweep: !scanPasses}
	if r.sweep {
		if r.ahead, err = s.alloc("digit counts", 8*256*4); err != nil {
			return err
		}
		if r.status, err = s.alloc("tile status", 256*8*uint64(nb)); err != nil {
			return err
		}
		if r.next, err = s.alloc("tile counter", 4); err != nil {
			return err
		}
	}
	if keys, idx, err = r.passes(ctx, wide, s.keyBits, keys, idx, keys2, idx2, keysOnly); err != nil {
		return err
	}
	if lines := l.Count(); lines > 1 {
		// The lines one after another: stable passes over each payload's line number.
		if err := launch(d, "gpn_sort_segkeys", grid(n), loopThreads, keys, idx, un, uint64(l.N), uint64(l.Inner)); err != nil {
			return err
		}
		if keys, idx, err = r.passes(ctx, false, bits.Len(uint(lines-1)), keys, idx, other(keys, k1, k2), other(idx, i1, i2), false); err != nil {
			return err
		}
	}
	m := l.Count() * s.klen
	if keysOnly {
		k32, k64 = keys, 0
		if wide {
			k32, k64 = 0, keys
		}
		return launch(d, "gpn_sort_unkeys", grid(m), loopThreads, s.res, k32, k64, s.keep, uint64(m), int32(s.code), b2i(s.desc), s.mask)
	}
	return launch(d, "gpn_sort_out", grid(m), loopThreads, s.res, s.x, idx, uint64(l.Count()), uint64(l.N), uint64(l.Inner), s.keep, uint64(s.klen), int32(s.dt.Size()), b2i(s.arg))
}

// other returns whichever of a and b p is not.
func other(p, a, b driver.DevicePtr) driver.DevicePtr {
	if p == a {
		return b
	}
	return a
}

// scanPasses (GPUNOTES_DEVSORT_SCAN=1) sorts in passes of a histogram, a scan and a scatter
// each instead of one look-back scatter per pass: the older path, kept for comparing timings.
// The look-back reads the keys once a pass instead of twice (predicted 1.3-1.5x); measured on
// an H100 it is 1.06x faster on a median's 4e8 values in 10000 lines and even on 1e8 float64
// (0.0186 against 0.0177 s), so the passes are bound by the ranking, not by memory.
var scanPasses = os.Getenv("GPUNOTES_DEVSORT_SCAN") == "1"

// radix runs the passes of one sort.
type radix struct {
	d              *cuda.Device
	n              uint64
	nb             uint32
	counts, totals driver.DevicePtr // histogram-and-scan passes: per-tile counts, digit totals
	sweep          bool             // one look-back scatter per pass (gpn_radix_onesweep)
	ahead          driver.DevicePtr // look-back: every pass's digit counts, counted up front
	status, next   driver.DevicePtr // look-back: the tiles' published counts, the tile counter
}

// passes sorts stably by the low nbits of the keys (8 a pass), moving the payloads with them
// unless keysOnly, between the buffers given; it returns those that hold the result.
func (r radix) passes(ctx context.Context, wide bool, nbits int, keys, idx, keys2, idx2 driver.DevicePtr, keysOnly bool) (driver.DevicePtr, driver.DevicePtr, error) {
	w := "32"
	if wide {
		w = "64"
	}
	np := (nbits + 7) / 8
	if r.sweep {
		if err := driver.MemsetD32Async(r.ahead, 0, uint64(np)*256, r.d.Stream()); err != nil {
			return 0, 0, fmt.Errorf("devsort: %w", err)
		}
		if err := launch(r.d, "gpn_radix_counts"+w, min(int(r.nb), 2048), radixThreads, keys, r.n, int32(np), r.ahead); err != nil {
			return 0, 0, err
		}
	}
	for p := 0; p < np; p++ {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		shift := 8 * p
		var err error
		switch {
		case !r.sweep && keysOnly:
			err = r.pass(wide, shift, keys, 0, keys2, 0)
		case !r.sweep:
			err = r.pass(wide, shift, keys, idx, keys2, idx2)
		default:
			if err = driver.MemsetD32Async(r.status, 0, uint64(r.nb)*512, r.d.Stream()); err == nil {
				err = driver.MemsetD32Async(r.next, 0, 1, r.d.Stream())
			}
			if err != nil {
				return 0, 0, fmt.Errorf("devsort: %w", err)
			}
			counts := r.ahead + driver.DevicePtr(p*256*4)
			if keysOnly {
				err = launch(r.d, "gpn_radix_onesweep"+w+"k", int(r.nb), radixThreads, keys, keys2, r.n, int32(shift), counts, r.status, r.next)
			} else {
				err = launch(r.d, "gpn_radix_onesweep"+w, int(r.nb), radixThreads, keys, idx, keys2, idx2, r.n, int32(shift), counts, r.status, r.next)
			}
		}
		if err != nil {
			return 0, 0, err
		}
		keys, keys2 = keys2, keys
		if !keysOnly {
			idx, idx2 = idx2, idx
		}
	}
	return keys, idx, nil
}

// pass moves keys (and payloads, unless vin is 0) from kin to kout ordered stably by the digit
// at shift.
func (r radix) pass(wide bool, shift int, kin, vin, kout, vout driver.DevicePtr) error {
	w := "32"
	if wide {
		w = "64"
	}
	if err := launch(r.d, "gpn_radix_hist"+w, int(r.nb), radixThreads, kin, r.n, int32(shift), r.counts, r.nb); err != nil {
		return err
	}
	if err := launch(r.d, "gpn_radix_scan", 256, scanThreads, r.counts, r.nb, r.totals); err != nil {
		return err
	}
	if vin == 0 {
		return launch(r.d, "gpn_radix_scatter"+w+"k", int(r.nb), radixThreads, kin, kout, r.n, int32(shift), r.counts, r.totals, r.nb)
	}
	return launch(r.d, "gpn_radix_scatter"+w, int(r.nb), radixThreads, kin, vin, kout, vout, r.n, int32(shift), r.counts, r.totals, r.nb)
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
