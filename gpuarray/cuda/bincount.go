package cuda

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"slices"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Bincounts on the GPU (expr.FnBincount of a 1-d array: a histogram's counts). The fused
// kernel that computes a task's values (a histogram's bin numbers) counts them as it goes
// (Spec.Reduce RCount, ptxgen_count.go): each block into its counters in shared memory, added
// to the task's counts in device memory at the end. No value is stored. The counts are
// integers, so the order of the additions changes no bit: the result equals the CPU's for
// any chunking and any timing. Weighted sums (rows of [value, weight]) depend on that order:
// they are added in a fixed one (wbincount.go).

// bincountRuns reports whether the GPU counts a bincount kernel (or sums its weights), or why
// not.
func bincountRuns(k *plan.Kernel) error {
	if k.Call.Weighted() {
		return weightedRuns(k.Call.N)
	}
	return nil
}

// CountError is a value that a counting kernel cannot count: not an integer in [0, Bins).
type CountError struct {
	Task  int // the task, in the order given to Count
	Value float64
	Bins  int
}

func (e *CountError) Error() string {
	v := e.Value
	switch {
	case v < 0:
		return fmt.Sprintf("bincount: the value %v is negative", v)
	case v != math.Trunc(v):
		return fmt.Sprintf("bincount: the value %v is not an integer", v)
	}
	return fmt.Sprintf("bincount: the value %v is not below the length %d", v, e.Bins)
}

// countSpec lowers the elementwise kernel k (float words: floatWords) into a kernel that
// counts its values into bins counters.
func countSpec(k *plan.Kernel, bins int) (*Spec, []int, error) {
	s, leaves, err := Lower(k)
	if err != nil {
		return nil, nil, err
	}
	c := *s
	c.Nodes = slices.Clone(s.Nodes)
	// Tiles serve stores and sums in element order; a count needs no order, so transposed
	// inputs are read through their strides.
	c.Tile, c.Mirror = false, nil
	for i := range c.Nodes {
		c.Nodes[i].Transposed = false
	}
	c.Reduce, c.Bins = RCount, bins
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	if err := dryRun(&c); err != nil {
		return nil, nil, err
	}
	return &c, leaves, nil
}

// Count runs the counting kernel s (Reduce RCount) for every task on d, in one pass over each
// task's elements, and returns each task's s.Bins counts. A value that is not an integer in
// [0, Bins) fails the run with a *CountError.
func (d *Device) Count(ctx context.Context, s *Spec, tasks []Task) ([][]int64, error) {
	if s.Reduce != RCount {
		return nil, fmt.Errorf("cuda: Count of a kernel that reduces by %v", s.Reduce)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ct := make([]Task, len(tasks))
	for i := range tasks {
		if err := tasks[i].validate(s); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
		if m := tasks[i].Elements(); m >= 1<<47 {
			return nil, fmt.Errorf("task %d: %d elements to count, want fewer than 2^47", i, m)
		}
		ct[i] = collapsed(tasks[i])
	}
	out := make([][]int64, len(tasks))
	if err := d.Do(ctx, func() error { return d.runCounts(ctx, s, ct, out) }); err != nil {
		return nil, err
	}
	return out, nil
}

// runCounts is Count on the device goroutine: launches of up to MaxTasksPerLaunch tasks, each
// task's Bins+2 output words (counts, flag, value) zeroed before.
func (d *Device) runCounts(ctx context.Context, s *Spec, tasks []Task, out [][]int64) error {
	fn, err := d.kernel(s)
	if err != nil {
		return err
	}
	name := "gpn_fused_" + s.Key()
	R, L := s.Rank, s.Leaves()
	W := ptx.DescWords(R, L)
	keys := randomKeys(s)
	var keyArgs []uint64
	for _, l := range ptx.KeyLeaves(s) {
		keyArgs = append(keyArgs, keys[l])
	}
	per := s.Bins + 2
	for first := 0; first < len(tasks); first += MaxTasksPerLaunch {
		if err := ctx.Err(); err != nil {
			return err
		}
		count := min(MaxTasksPerLaunch, len(tasks)-first)
		gridX := 0
		for k := range count {
			gridX = max(gridX, Slices(tasks[first+k].Elements()))
		}
		if gridX == 0 { // only empty tasks
			for k := range count {
				out[first+k] = make([]int64, s.Bins)
			}
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
			w[R+1] = uint64(k * per)
			for l := 0; l < L; l++ {
				if err := up.leaf(w[R+2+l*(R+2):], t, l, keys); err != nil {
					up.release()
					return err
				}
			}
		}
		words, err := d.launchCounts(fn, up, desc, count*per, [3]uint32{uint32(gridX), uint32(count), 1}, keyArgs)
		up.release()
		if err != nil {
			return fmt.Errorf("kernel %s (grid %dx%d, %d tasks): %w", name, gridX, count, count, err)
		}
		for k := range count {
			w := words[k*per : (k+1)*per]
			if w[s.Bins] != 0 {
				return &CountError{Task: first + k, Value: math.Float64frombits(w[s.Bins+1]), Bins: s.Bins}
			}
			c := make([]int64, s.Bins)
			for i := range c {
				c[i] = int64(w[i])
			}
			out[first+k] = c
		}
	}
	return nil
}

// launchCounts uploads the descriptors, zeroes n output words, launches fn over grid and
// returns the output words (in the device's staging buffer: read them before the next run).
func (d *Device) launchCounts(fn driver.Function, up *uploads, desc []uint64, n int, grid [3]uint32, keyArgs []uint64) ([]uint64, error) {
	dp, err := up.alloc(uint64(len(desc) * 8))
	if err != nil {
		return nil, err
	}
	if err := driver.MemcpyHtoD(dp, unsafe.Pointer(&desc[0]), uint64(len(desc)*8)); err != nil {
		return nil, fmt.Errorf("upload task descriptors: %w", err)
	}
	outBytes := uint64(n) * 8
	op, err := up.alloc(outBytes)
	if err != nil {
		return nil, err
	}
	if err := driver.MemsetD32Async(op, 0, outBytes/4, d.stream); err != nil {
		return nil, err
	}
	descArg, outArg := uint64(dp), uint64(op)
	params := []unsafe.Pointer{unsafe.Pointer(&descArg), unsafe.Pointer(&outArg)}
	for i := range keyArgs {
		params = append(params, unsafe.Pointer(&keyArgs[i]))
	}
	if err := fn.Launch(grid, [3]uint32{BlockSize, 1, 1}, 0, d.stream, params); err != nil {
		return nil, err
	}
	if err := d.stream.Synchronize(); err != nil {
		return nil, err
	}
	host, err := d.staging(outBytes)
	if err != nil {
		return nil, err
	}
	if err := driver.MemcpyDtoH(unsafe.Pointer(&host[0]), op, outBytes); err != nil {
		return nil, fmt.Errorf("download counts: %w", err)
	}
	return host[:n], nil
}

// runBincounts runs bincount tasks: each task's values computed and counted by one fused
// kernel on the device of its run of tasks.
func runBincounts(ctx context.Context, devs []*Device, tasks []*plan.Task) ([]*plan.Output, error) {
	if tasks[0].Kernel.Call.Weighted() {
		return runWeighted(ctx, devs, tasks)
	}
	ek := floatWords(tasks[0].Kernel.Elementwise())
	nbins := tasks[0].Kernel.Call.N
	s, leaves, err := countSpec(ek, nbins)
	if err != nil {
		return nil, err
	}
	outs := make([]*plan.Output, len(tasks))
	err = eachDevice(devs, len(tasks), func(d *Device, lo, hi int) error {
		gts := make([]Task, hi-lo)
		cache := gatherCache{}
		for i := range gts {
			c := *tasks[lo+i]
			c.Kernel = ek
			var err error
			if gts[i], err = lowerTask(&c, leaves, s.Leaves(), cache); err != nil {
				return err
			}
		}
		s, err := heldOn([]*Device{d}, s, gts)
		if err != nil {
			return err
		}
		counts, err := d.Count(ctx, s, gts)
		if ce := (*CountError)(nil); errors.As(err, &ce) {
			return fmt.Errorf("chunk %d: %w", tasks[lo+ce.Task].Index, ce)
		} else if err != nil {
			return err
		}
		for i, c := range counts {
			outs[lo+i] = &plan.Output{Shape: []int{nbins}, Data: dtype.OfInt64(c)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// floatWords returns k, or for a result outside the float lane (integers: the usual input of
// a bincount) k with its result cast to float64, so that the counting kernel reads float64
// words; the cast is exact below 2^53, and larger values are flagged as out of range either way.
func floatWords(k *plan.Kernel) *plan.Kernel {
	if ptx.LaneOf(k.Instrs[k.Result].DType) == ptx.LaneF {
		return k
	}
	c := *k
	c.Instrs = append(slices.Clone(k.Instrs), plan.Instr{Code: plan.Cast, DType: dtype.Float64, Args: []int{k.Result}})
	c.Result = len(c.Instrs) - 1
	return &c
}
