package cuda

import (
	"context"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Weighted bincounts on the GPU: a task's [value, weight] rows (the fused kernel's values, left
// on the device) are summed by bin in a fixed order, so the bits are the same run to run and
// on any GPU. The task is cut into Slices(m) blocks of contiguous rows, as fused kernels cut
// theirs; thread t of a block adds the weights of rows lo+t, lo+t+256, … in that order into
// its own sums (in local memory); each warp then adds its lanes' sums by a fixed tree of
// shuffles, the block its warps' sums in warp order, and the host the blocks' sums pairwise
// in block order. The CPU adds each chunk's rows one after another: both are sums of the same
// weights, so a bin differs from the CPU's by at most about 2n ulp of the sum of its n
// weights' magnitudes.

// maxWeightedBins is the most bins the GPU sums weights into: each thread keeps its sums in
// local memory and each warp its sums in shared memory (8 warps of 8-byte sums: 48 KiB at
// 768 bins); more run on the host, which Runs says.
const maxWeightedBins = 768

// weightedRuns reports whether the GPU sums the weights of a weighted bincount into n bins,
// or why not.
func weightedRuns(n int) error {
	if n > maxWeightedBins {
		return fmt.Errorf("cuda: weighted bincounts of more than %d bins run on the host (%d bins)", maxWeightedBins, n)
	}
	return nil
}

// weightedFunction returns the linked weighted bincount kernel of bins bins (on the device
// goroutine).
func (d *Device) weightedFunction(bins int) (driver.Function, error) {
	return d.generated(ptx.WeightedName(bins), func() (string, error) { return ptx.WeightedPTX(d.lib.Version(), d.lib.Target(), bins), nil })
}

// weightedSums sums the weights of the m [value, weight] rows at rows (on d) by bin, in the
// fixed order of weightedPTX. It runs on the device goroutine (inside Do).
func (d *Device) weightedSums(rows driver.DevicePtr, m int64, bins int) ([]float64, error) {
	sums := make([]float64, bins)
	S := Slices(m)
	if S == 0 {
		return sums, nil
	}
	fn, err := d.weightedFunction(bins)
	if err != nil {
		return nil, err
	}
	words := S*bins + 2
	out, err := d.pool.Alloc(uint64(words) * 8)
	if err != nil {
		return nil, err
	}
	defer d.pool.Free(out)
	if err := driver.MemsetD32Async(out+driver.DevicePtr(S*bins*8), 0, 4, d.stream); err != nil {
		return nil, err
	}
	if err := d.launchWords(fn, ptx.WeightedName(bins), uint32(S), uint64(rows), uint64(m), uint64(out), uint64(S)); err != nil {
		return nil, err
	}
	if err := d.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", ptx.WeightedName(bins), err)
	}
	host, err := d.staging(uint64(words) * 8)
	if err != nil {
		return nil, err
	}
	if err := driver.MemcpyDtoH(unsafe.Pointer(&host[0]), out, uint64(words)*8); err != nil {
		return nil, fmt.Errorf("download weighted sums: %w", err)
	}
	if host[S*bins] != 0 {
		return nil, &CountError{Value: math.Float64frombits(host[S*bins+1]), Bins: bins}
	}
	return combineBlocks(host[:S*bins], S, bins), nil
}

// combineBlocks adds S blocks' sums of bins bins (block after block in words, float64 bits)
// pairwise in block order.
func combineBlocks(words []uint64, S, bins int) []float64 {
	sums := make([]float64, bins)
	col := make([]float64, S)
	for k := range sums {
		for b := range col {
			col[b] = math.Float64frombits(words[b*bins+k])
		}
		sums[k] = PairwiseSum(col)
	}
	return sums
}

// runWeighted runs weighted bincount tasks: each task's rows computed on the device of its
// run of tasks (left there), then summed there.
func runWeighted(ctx context.Context, devs []*Device, tasks []*plan.Task) ([]*plan.Output, error) {
	ek := tasks[0].Kernel.Elementwise()
	bins := tasks[0].Kernel.Call.N
	outs := make([]*plan.Output, len(tasks))
	err := eachDevice(devs, len(tasks), func(d *Device, lo, hi int) error {
		sub := make([]*plan.Task, hi-lo)
		for i := range sub {
			c := *tasks[lo+i]
			c.Kernel = ek
			sub[i] = &c
		}
		ptrs, free, err := RunPlanKeep(ctx, d, sub)
		if err != nil {
			return err
		}
		defer free()
		return d.Do(ctx, func() error {
			for i, t := range sub {
				sums, err := d.weightedSums(ptrs[i], int64(t.Shape[0]), bins)
				if err != nil {
					return fmt.Errorf("chunk %d: %w", t.Index, err)
				}
				outs[lo+i] = &plan.Output{Shape: []int{bins}, Data: dtype.OfFloat64(sums)}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}
