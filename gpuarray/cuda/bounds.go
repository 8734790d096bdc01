package cuda

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// Run boundaries of a sorted array on the device (issue 32, the unique family): a byte per
// element marking where the runs of equal values start or end, written beside the sorted
// values, so that Compact selects the unique values, their positions or their run ends with
// only the selection's length coming to the host.

// BoundsClass returns the class (ptx.BoundsClasses) in which the boundary kernels compare
// elements of dt kept on a GPU (narrow: in their own size), or "" for a dtype they do not
// compare (complex values).
func BoundsClass(dt dtype.DType, narrow bool) string {
	if narrow {
		switch {
		case dt == dtype.Float32:
			return "f32"
		case dt.Size() == 1:
			return "u8"
		case dt.Size() == 2:
			return "u16"
		case dt.Size() == 4:
			return "u32"
		}
		return ""
	}
	switch ptx.LaneOf(dt) {
	case ptx.LaneI:
		return "u64"
	case ptx.LaneF:
		return "f64"
	}
	return ""
}

// Bounds writes, on d, the run boundaries of the n sorted elements at src (of class cls,
// BoundsClass) into a new allocation of d's pool of n bytes (rounded up to whole words): 1
// where a run of equal values starts (last false) or ends (last true), 0 elsewhere. The caller
// owns the allocation (d's pool). Call it from any goroutine.
func (d *Device) Bounds(ctx context.Context, src driver.DevicePtr, cls string, n int64, last bool) (driver.DevicePtr, error) {
	if n == 0 {
		return 0, nil
	}
	blocks := (n + BlockSize - 1) / BlockSize
	if blocks > math.MaxInt32 {
		return 0, fmt.Errorf("bounds: %d blocks", blocks)
	}
	t0 := time.Now()
	var out driver.DevicePtr
	err := d.Do(ctx, func() error {
		name := ptx.BoundsName(cls, last)
		f, err := d.generated(name, func() (string, error) {
			s, _, err := ptx.BoundsPTX(d.lib.Version(), d.lib.Target(), cls, last)
			return s, err
		})
		if err != nil {
			return err
		}
		p, err := d.pool.Alloc(uint64((n + 7) &^ 7))
		if err != nil {
			return err
		}
		if err := d.launchWords(f, name, uint32(blocks), uint64(src), uint64(n), uint64(p)); err != nil {
			d.pool.Free(p)
			return err
		}
		out = p
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("run boundaries of %d elements on GPU %d: %w", n, d.Info.Index, err)
	}
	Trace("bounds: run boundaries of %d %s elements marked on GPU %d in %.4f s", n, cls, d.Info.Index, time.Since(t0).Seconds())
	return out, nil
}
