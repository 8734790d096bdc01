package cuda

import (
	"context"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Bincount totals on the device (issue 32): every task of an unweighted bincount stage counts
// into one set of counters in device memory, so the chunks' counts are summed where they are
// counted (integer additions: the bits are the CPU's whatever their order) and the result, the
// whole bincount, stays on the GPU as one allocation. Nothing is assembled on the host; only
// the out-of-range flag comes back.

// CountsTotal says why CountTotal would not count the tasks of bincount kernel k into one
// device array, or "" when it does: an unweighted bincount whose fused values lower to a
// counting kernel. It needs no GPU: tests of the planning decisions call it.
func CountsTotal(k *plan.Kernel) string {
	if k == nil || k.Call == nil || k.Call.Fn.String() != "bincount" {
		return "not a bincount"
	}
	if k.Call.Weighted() {
		return "weighted sums depend on the order of their additions (added in a fixed one, on the host)"
	}
	if _, _, err := countSpec(floatWords(k.Elementwise()), k.Call.N); err != nil {
		return err.Error()
	}
	return ""
}

// CountTotal runs the bincount tasks (one kernel, CountsTotal "") on d, every task counting into
// the same k.Call.N int64 counters, and returns them: a new allocation of d's pool of N words
// in the format the GPU keeps int64 arrays in, owned by the caller. A value that is not an
// integer in [0, N) fails the run with a *CountError (its Task is -1: the counters are shared).
func CountTotal(ctx context.Context, d *Device, tasks []*plan.Task) (driver.DevicePtr, error) {
	if len(tasks) == 0 {
		return 0, fmt.Errorf("cuda: CountTotal of no tasks")
	}
	k := tasks[0].Kernel
	if why := CountsTotal(k); why != "" {
		return 0, fmt.Errorf("%w: %s", ErrNotKept, why)
	}
	ek := floatWords(k.Elementwise())
	bins := k.Call.N
	s, leaves, err := countSpec(ek, bins)
	if err != nil {
		return 0, err
	}
	gts := make([]Task, len(tasks))
	cache := gatherCache{}
	for i := range gts {
		c := *tasks[i]
		c.Kernel = ek
		if gts[i], err = lowerTask(&c, leaves, s.Leaves(), cache); err != nil {
			return 0, err
		}
	}
	if s, err = heldOn([]*Device{d}, s, gts); err != nil {
		return 0, err
	}
	if err := s.Validate(); err != nil {
		return 0, err
	}
	for i := range gts {
		if err := gts[i].validate(s); err != nil {
			return 0, fmt.Errorf("task %d: %w", i, err)
		}
		if m := gts[i].Elements(); m >= 1<<47 {
			return 0, fmt.Errorf("task %d: %d elements to count, want fewer than 2^47", i, m)
		}
		gts[i] = collapsed(gts[i])
	}
	t0 := time.Now()
	var out driver.DevicePtr
	err = d.Do(ctx, func() error {
		p, err := d.countTotal(ctx, s, gts)
		out = p
		return err
	})
	if err != nil {
		return 0, err
	}
	Trace("bincount: %d chunks counted into one array of %d on GPU %d in %.4f s, left there", len(tasks), bins, d.Info.Index, time.Since(t0).Seconds())
	return out, nil
}

// countTotal is CountTotal on the device goroutine: the counters (Bins words, then the flag and
// the value, as runCounts lays out one task's) zeroed once, and launches of up to
// MaxTasksPerLaunch tasks whose descriptors all point at them.
func (d *Device) countTotal(ctx context.Context, s *Spec, tasks []Task) (driver.DevicePtr, error) {
	fn, err := d.kernel(s)
	if err != nil {
		return 0, err
	}
	per := s.Bins + 2
	out, err := d.pool.Alloc(uint64(per) * 8)
	if err != nil {
		return 0, err
	}
	fail := func(err error) (driver.DevicePtr, error) {
		d.pool.Free(out)
		return 0, err
	}
	if err := driver.MemsetD32Async(out, 0, uint64(per)*2, d.stream); err != nil {
		return fail(err)
	}
	R, L := s.Rank, s.Leaves()
	W := ptx.DescWords(R, L)
	keys := randomKeys(s)
	var keyArgs []uint64
	for _, l := range ptx.KeyLeaves(s) {
		keyArgs = append(keyArgs, keys[l])
	}
	for first := 0; first < len(tasks); first += MaxTasksPerLaunch {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		count := min(MaxTasksPerLaunch, len(tasks)-first)
		gridX := 0
		for k := range count {
			gridX = max(gridX, Slices(tasks[first+k].Elements()))
		}
		if gridX == 0 {
			continue
		}
		up := newUploads(d)
		desc := make([]uint64, W*count)
		for k := range count {
			t := &tasks[first+k]
			w := desc[k*W : (k+1)*W]
			for j, dim := range t.Dims {
				w[j] = uint64(dim)
			}
			w[R] = uint64(Slices(t.Elements()))
			w[R+1] = 0 // every task's counts go to the same counters
			for l := 0; l < L; l++ {
				if err := up.leaf(w[R+2+l*(R+2):], t, l, keys); err != nil {
					up.release()
					return fail(err)
				}
			}
		}
		err := d.launchCountsInto(fn, up, desc, out, [3]uint32{uint32(gridX), uint32(count), 1}, keyArgs)
		if err == nil {
			// The next launch's descriptors are copied from the host outside the stream's order.
			err = d.stream.Synchronize()
		}
		up.release()
		if err != nil {
			return fail(fmt.Errorf("kernel gpn_fused_%s (grid %dx%d): %w", s.Key(), gridX, count, err))
		}
	}
	flag := make([]float64, 2)
	if err := d.CopyToHost(flag, out+driver.DevicePtr(s.Bins*8)); err != nil {
		return fail(err)
	}
	if math.Float64bits(flag[0]) != 0 {
		return fail(&CountError{Task: -1, Value: flag[1], Bins: s.Bins})
	}
	return out, nil
}

// launchCountsInto uploads the descriptors and launches counting kernel fn over grid, its
// counts added to the words at out (launchCounts without the zeroing and the download).
func (d *Device) launchCountsInto(fn driver.Function, up *uploads, desc []uint64, out driver.DevicePtr, grid [3]uint32, keyArgs []uint64) error {
	dp, err := up.alloc(uint64(len(desc) * 8))
	if err != nil {
		return err
	}
	if err := driver.MemcpyHtoD(dp, unsafe.Pointer(&desc[0]), uint64(len(desc)*8)); err != nil {
		return fmt.Errorf("upload task descriptors: %w", err)
	}
	descArg, outArg := uint64(dp), uint64(out)
	params := []unsafe.Pointer{unsafe.Pointer(&descArg), unsafe.Pointer(&outArg)}
	for i := range keyArgs {
		params = append(params, unsafe.Pointer(&keyArgs[i]))
	}
	return fn.Launch(grid, [3]uint32{BlockSize, 1, 1}, 0, d.stream, params)
}
