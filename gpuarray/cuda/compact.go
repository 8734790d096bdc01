package cuda

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Device compaction (issue 32): the selection of a boolean mask held on a GPU, from values held
// there, written into a new allocation on that GPU. The mask is counted per segment
// (ptx.CompactSeg elements a thread), the counts scanned in place by the scan kernels (int64
// running sums), and each segment's selected elements copied in order from its offset: the
// selection's length comes back as one number, never as a host list of positions.

// CompactUnit returns the unit in bytes in which the compaction kernels copy an element of
// elemBytes bytes repeated row times (a selected row of a masked array), and how many units
// that is: the largest of 8, 4, 2 and 1 that divides the row's bytes.
func CompactUnit(elemBytes, row int64) (unit, words int64) {
	b := elemBytes * row
	unit = min(int64(1)<<bits.TrailingZeros64(uint64(b)|8), 8)
	return unit, b / unit
}

// Compact copies, on d, the rows of src (n rows of elemBytes*row bytes each, row-major) whose
// mask element is nonzero (mask: n elements of maskBytes bytes, 1 for narrow bools, 8 for
// words) into a new allocation of d's pool, in order, and returns it (0 when nothing is
// selected) with the number of rows selected. The caller owns out (d's pool). Call it from any
// goroutine.
func (d *Device) Compact(ctx context.Context, mask driver.DevicePtr, maskBytes int, src driver.DevicePtr, elemBytes, row, n int64) (out driver.DevicePtr, count int64, err error) {
	if n == 0 {
		return 0, 0, nil
	}
	unit, words := CompactUnit(elemBytes, row)
	t0 := time.Now()
	err = d.Do(ctx, func() error {
		fc, err := d.generated(ptx.CompactName(maskBytes, 0, false), func() (string, error) {
			s, _, err := ptx.CompactPTX(d.lib.Version(), d.lib.Target(), maskBytes, 0, false)
			return s, err
		})
		if err != nil {
			return err
		}
		fs, err := d.generated(ptx.CompactName(maskBytes, int(unit), true), func() (string, error) {
			s, _, err := ptx.CompactPTX(d.lib.Version(), d.lib.Target(), maskBytes, int(unit), true)
			return s, err
		})
		if err != nil {
			return err
		}
		segs := (n + ptx.CompactSeg - 1) / ptx.CompactSeg
		blocks := (segs + BlockSize - 1) / BlockSize
		if blocks > math.MaxInt32 {
			return fmt.Errorf("compact: %d blocks", blocks)
		}
		counts, err := d.pool.Alloc(uint64(segs) * 8)
		if err != nil {
			return err
		}
		defer d.pool.Free(counts)
		if err := d.launchWords(fc, ptx.CompactName(maskBytes, 0, false), uint32(blocks), uint64(mask), uint64(n), uint64(counts)); err != nil {
			return err
		}
		scan := &plan.CallStep{Call: expr.Call{Fn: expr.FnCumSum}, DType: dtype.Int64}
		// The segmented walk however few the counts (the thread-per-line walk would add them
		// one after another): integer sums give the same bits in any order.
		if err := d.scanWalk(scan, counts, scanLines{outer: 1, n: segs, inner: 1}, max(1, min(segs/256, scanWarps, MaxSlices))); err != nil {
			return fmt.Errorf("compact: scan of the counts: %w", err)
		}
		total := make([]float64, 1)
		if err := d.CopyToHost(total, counts+driver.DevicePtr((segs-1)*8)); err != nil {
			return err
		}
		count = int64(math.Float64bits(total[0]))
		if count == 0 {
			return nil
		}
		p, err := d.pool.Alloc(uint64((count*words*unit + 7) &^ 7))
		if err != nil {
			return err
		}
		if err := d.launchWords(fs, ptx.CompactName(maskBytes, int(unit), true), uint32(blocks), uint64(mask), uint64(n), uint64(counts), uint64(src), uint64(p), uint64(words)); err != nil {
			d.pool.Free(p)
			return err
		}
		if err := d.stream.Synchronize(); err != nil {
			d.pool.Free(p)
			return err
		}
		out = p
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("compact %d rows on GPU %d: %w", n, d.Info.Index, err)
	}
	Trace("compact: %d of %d rows selected on GPU %d in %.4f s (the length comes back as one number)", count, n, d.Info.Index, time.Since(t0).Seconds())
	return out, count, nil
}
