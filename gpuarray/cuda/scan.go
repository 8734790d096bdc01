package cuda

import (
	"context"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Cumulative sums and products on the GPU (expr.FnCumSum, FnCumProd, and FnProd, the product
// along an axis). The planner brings the scanned axis into one chunk; a task's values are
// computed by the fused kernel in the result's dtype and left on the device, then scanned there
// in place by a generated kernel, line by line (a line: the elements along the axis at one
// index of the other axes), with the CPU's ops (Go's integer wrap-around, float32 and complex64
// rounding after each op, complex products as Go computes them).
//
// Three walks:
//   - many lines (at least scanMinLines) or short ones (below scanMinLong): one thread per
//     line, in order, as the CPU does, so every dtype gives the CPU's bits; contiguous lines
//     (along the last axis) go through shared-memory tiles (ptx.ScanTilePTX) so that the
//     reads are coalesced, still a thread per line in the CPU's order;
//   - few long lines: each line is cut into segments, one warp per segment scanning 32
//     elements at a time (a shuffle scan); the segments' totals are chained on the host in
//     segment order and each segment is scanned again from its carry. Integers give the CPU's
//     bits (wrapping addition and multiplication are associative); floats are summed in
//     another fixed order, within (n-1)*eps*sum|x| of the exact running sum, as the CPU's are,
//     so within 2*(n-1)*eps*sum|x| of the CPU's (n the line's length so far); products within
//     2*(n-1)*eps relative.

const (
	scanMinLines = 1 << 14
	scanMinLong  = 1 << 16
	// scanWarps is the number of warps the segmented walk aims at, and scanMinSeg the fewest
	// elements a segment holds.
	scanWarps  = 1 << 13
	scanMinSeg = 1 << 10
)

// scanTiles lets a running scan of contiguous lines (along the last axis) go through
// shared-memory tiles (ptx.ScanTilePTX); GPUNOTES_GPU_SCAN_TILES=0 walks them a thread per line,
// for comparisons.
var scanTiles = os.Getenv("GPUNOTES_GPU_SCAN_TILES") != "0"

// scanLines is a block's shape seen by a scan along an axis: outer × n × inner, the axis in the
// middle.
type scanLines struct{ outer, n, inner int64 }

func linesOf(shape []int, axis int) scanLines {
	l := scanLines{outer: 1, n: int64(shape[axis]), inner: 1}
	for k, d := range shape {
		switch {
		case k < axis:
			l.outer *= int64(d)
		case k > axis:
			l.inner *= int64(d)
		}
	}
	return l
}

func (l scanLines) lines() int64 { return l.outer * l.inner }

// segments returns how many segments each line is cut into: 0 for the thread-per-line walk.
func (l scanLines) segments() int64 {
	if l.lines() >= scanMinLines || l.n < scanMinLong {
		return 0
	}
	return max(1, min((scanWarps+l.lines()-1)/l.lines(), l.n/scanMinSeg, MaxSlices))
}

// scanOp is the op of a scan of fn (FnCumSum: addition, else multiplication).
func scanOp(fn expr.CallFn) expr.Op {
	if fn == expr.FnCumSum {
		return expr.OpAdd
	}
	return expr.OpMul
}

// scanFunction returns the linked scan kernel (on the device goroutine).
func (d *Device) scanFunction(dt dtype.DType, op expr.Op, seg bool) (driver.Function, error) {
	return d.generated(ptx.ScanName(dt, op, seg), func() (string, error) {
		text, _, err := ptx.ScanPTX(d.lib.Version(), d.lib.Target(), dt, op, seg)
		return text, err
	})
}

// launchScan launches scan kernel f over threads threads with u64 arguments args.
func (d *Device) launchScan(f driver.Function, name string, threads int64, args ...uint64) error {
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	blocks := (threads + BlockSize - 1) / BlockSize
	if blocks > math.MaxInt32 {
		return fmt.Errorf("kernel %s: %d blocks", name, blocks)
	}
	if err := f.Launch([3]uint32{uint32(blocks), 1, 1}, [3]uint32{BlockSize, 1, 1}, 0, d.stream, params); err != nil {
		return fmt.Errorf("kernel %s (%d blocks): %w", name, blocks, err)
	}
	if err := d.stream.Synchronize(); err != nil {
		return fmt.Errorf("kernel %s: %w", name, err)
	}
	return nil
}

// scan runs call c (a scan) on the words at buf, dtype c.DType, row-major over shape, in place,
// and returns the result's words (the running values, or FnProd's line totals). It runs on the
// device goroutine.
func (d *Device) scan(c *plan.CallStep, buf driver.DevicePtr, shape []int) ([]float64, error) {
	l := linesOf(shape, c.Axis)
	w := int64(Words(c.DType))
	if l.lines()*l.n == 0 {
		return nil, nil
	}
	if c.Fn == expr.FnProd {
		return d.scanTotals(c, buf, shape)
	}
	if err := d.scanInPlace(c, buf, shape); err != nil {
		return nil, err
	}
	out := make([]float64, l.lines()*l.n*w)
	return out, d.CopyToHost(out, buf)
}

// scanInPlace runs a running scan c (not FnProd) on the words at buf, dtype c.DType, row-major
// over shape, in place, and leaves the result there: the segments' carries are chained on the
// host (a few words per segment), the values never leave the device. It runs on the device
// goroutine.
func (d *Device) scanInPlace(c *plan.CallStep, buf driver.DevicePtr, shape []int) error {
	if c.Fn == expr.FnProd {
		return fmt.Errorf("cuda: %v gives line totals, not a running scan (internal)", c.Fn)
	}
	l := linesOf(shape, c.Axis)
	if l.lines()*l.n == 0 {
		return nil
	}
	return d.scanWalk(c, buf, l, l.segments())
}

// scanWalk is scanInPlace with the walk chosen by the caller: segs segments a line (0: a thread
// per line).
func (d *Device) scanWalk(c *plan.CallStep, buf driver.DevicePtr, l scanLines, segs int64) error {
	w := int64(Words(c.DType))
	op := scanOp(c.Fn)
	if segs == 0 && l.inner == 1 && scanTiles {
		// Contiguous lines: a block scans BlockSize of them through shared-memory tiles, so its
		// reads and writes are coalesced (a thread per line strides by a whole line).
		name := ptx.ScanTileName(c.DType, op)
		f, err := d.generated(name, func() (string, error) {
			text, _, err := ptx.ScanTilePTX(d.lib.Version(), d.lib.Target(), c.DType, op)
			return text, err
		})
		if err != nil {
			return err
		}
		blocks := (l.lines() + ptx.ScanTileLines - 1) / ptx.ScanTileLines
		return d.launchScan(f, name, blocks*BlockSize, uint64(buf), uint64(l.lines()), uint64(l.n))
	}
	f, err := d.scanFunction(c.DType, op, segs > 0)
	if err != nil {
		return err
	}
	name := ptx.ScanName(c.DType, op, segs > 0)
	if segs == 0 {
		return d.launchScan(f, name, l.lines(), uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), 0, 0)
	}
	nseg := l.lines() * segs
	tout, err := d.pool.Alloc(uint64(nseg * w * 8))
	if err != nil {
		return err
	}
	defer d.pool.Free(tout)
	args := []uint64{uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), uint64(segs)}
	if err := d.launchScan(f, name, nseg*32, append(args, 0, uint64(tout), 0)...); err != nil {
		return err
	}
	tots := make([]float64, nseg*w)
	if err := d.CopyToHost(tots, tout); err != nil {
		return err
	}
	carries, _ := chainSegments(c.DType, op, tots, l.lines(), segs)
	if err := d.CopyToDevice(tout, carries); err != nil {
		return err
	}
	return d.launchScan(f, name, nseg*32, append(args, uint64(tout), 0, 1)...)
}

// scanTotals runs FnProd (the product along an axis) on the words at buf and returns each
// line's total's words. It runs on the device goroutine.
func (d *Device) scanTotals(c *plan.CallStep, buf driver.DevicePtr, shape []int) ([]float64, error) {
	l := linesOf(shape, c.Axis)
	w := int64(Words(c.DType))
	op := scanOp(c.Fn)
	segs := l.segments()
	f, err := d.scanFunction(c.DType, op, segs > 0)
	if err != nil {
		return nil, err
	}
	name := ptx.ScanName(c.DType, op, segs > 0)
	if segs == 0 {
		tot, err := d.pool.Alloc(uint64(l.lines() * w * 8))
		if err != nil {
			return nil, err
		}
		defer d.pool.Free(tot)
		if err := d.launchScan(f, name, l.lines(), uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), uint64(tot), 1); err != nil {
			return nil, err
		}
		out := make([]float64, l.lines()*w)
		return out, d.CopyToHost(out, tot)
	}
	nseg := l.lines() * segs
	tout, err := d.pool.Alloc(uint64(nseg * w * 8))
	if err != nil {
		return nil, err
	}
	defer d.pool.Free(tout)
	args := []uint64{uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), uint64(segs)}
	if err := d.launchScan(f, name, nseg*32, append(args, 0, uint64(tout), 0)...); err != nil {
		return nil, err
	}
	tots := make([]float64, nseg*w)
	if err := d.CopyToHost(tots, tout); err != nil {
		return nil, err
	}
	_, totals := chainSegments(c.DType, op, tots, l.lines(), segs)
	return totals, nil
}

// chainSegments chains each of lines lines' segs segment totals (tots, words of dt, segment
// order within each line) in order: the carry into segment s is carry[s-1] op total[s-1]
// (none into segment 0). It returns the carries (segment 0's words left zero) and each line's
// total.
func chainSegments(dt dtype.DType, op expr.Op, tots []float64, lines, segs int64) (carries, totals []float64) {
	w := int64(Words(dt))
	carries = make([]float64, lines*segs*w)
	totals = make([]float64, lines*w)
	for ln := range lines {
		acc := tots[ln*segs*w : (ln*segs+1)*w]
		for s := int64(1); s < segs; s++ {
			at := (ln*segs + s) * w
			copy(carries[at:at+w], acc)
			acc = hostScanOp(dt, op, acc, tots[at:at+w])
		}
		copy(totals[ln*w:(ln+1)*w], acc)
	}
	return carries, totals
}

// hostScanOp returns x op y for one value of dt in its words (as the kernel computes it).
func hostScanOp(dt dtype.DType, op expr.Op, x, y []float64) []float64 {
	mul := op == expr.OpMul
	switch ptx.LaneOf(dt) {
	case ptx.LaneI:
		a, b := int64(math.Float64bits(x[0])), int64(math.Float64bits(y[0]))
		if mul {
			return []float64{math.Float64frombits(uint64(a * b))}
		}
		return []float64{math.Float64frombits(uint64(a + b))}
	case ptx.LaneC:
		a, b := complex(x[0], x[1]), complex(y[0], y[1])
		var c complex128
		switch {
		case dt == dtype.Complex64 && mul:
			c = complex128(complex64(a) * complex64(b))
		case dt == dtype.Complex64:
			c = complex128(complex64(a) + complex64(b))
		case mul:
			c = a * b
		default:
			c = a + b
		}
		return []float64{real(c), imag(c)}
	}
	switch {
	case dt == dtype.Float32 && mul:
		return []float64{float64(float32(x[0]) * float32(y[0]))}
	case dt == dtype.Float32:
		return []float64{float64(float32(x[0]) + float32(y[0]))}
	case mul:
		return []float64{x[0] * y[0]}
	}
	return []float64{x[0] + y[0]}
}

// scanRuns reports whether the GPU scans values of dt (the dtypes a scan's result takes).
func scanRuns(dt dtype.DType) error {
	switch dt {
	case dtype.Int64, dtype.Uint64, dtype.Float32, dtype.Float64, dtype.Complex64, dtype.Complex128:
		return nil
	}
	return fmt.Errorf("cuda: scans of %v values (internal: the result of a scan is int64, uint64, a float or a complex dtype)", dt)
}

// runScans runs scan tasks: each task's values computed in the result's dtype by the fused
// kernel and left on its GPU (tasks dealt to devs in contiguous runs), scanned there, and
// brought back one task at a time, so that one block is held at once.
func runScans(ctx context.Context, devs []*Device, tasks []*plan.Task) ([]*plan.Output, error) {
	call := tasks[0].Kernel.Call
	if err := scanRuns(call.DType); err != nil {
		return nil, err
	}
	ek := castResult(tasks[0].Kernel.Elementwise(), call.DType)
	outs := make([]*plan.Output, len(tasks))
	err := eachDevice(devs, len(tasks), func(d *Device, lo, hi int) error {
		for i := lo; i < hi; i++ {
			t := *tasks[i]
			t.Kernel = ek
			ptrs, free, err := RunPlanKeep(ctx, d, []*plan.Task{&t})
			if err != nil {
				return err
			}
			var words []float64
			err = d.Do(ctx, func() error {
				var err error
				words, err = d.scan(call, ptrs[0], tasks[i].Shape)
				return err
			})
			free()
			if err != nil {
				return fmt.Errorf("%v of chunk %d: %w", call.Fn, tasks[i].Index, err)
			}
			outs[i] = &plan.Output{Shape: call.OutShape(tasks[i].Shape), Data: DecodeWords(words, call.DType)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// castResult returns k with its result cast to dt (k itself when it has that dtype).
func castResult(k *plan.Kernel, dt dtype.DType) *plan.Kernel {
	if k.Instrs[k.Result].DType == dt {
		return k
	}
	c := *k
	c.Instrs = append(slices.Clone(k.Instrs), plan.Instr{Code: plan.Cast, DType: dt, Args: []int{k.Result}})
	c.Result = len(c.Instrs) - 1
	return &c
}
