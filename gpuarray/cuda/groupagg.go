package cuda

import (
	"context"
	"fmt"
	"math"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
)

// Group aggregation on the GPU over dense group codes: a row's group is an int64 code in
// [0, groups) (a categorical's codes, a small-range integer less its minimum, several such keys
// combined mixed-radix); a code outside skips the row (a null key). One generated kernel
// (ptx.GroupAgg) per value column folds the rows into per-group states (count, sum, sum of
// squares, min, max) in device memory: per-block shared-memory tables when the groups are
// few, global atomics otherwise. Integer states are exact and equal to the CPU's bit for bit;
// float sums are added in the order the atomics take, within about n ulp of the sum of the
// group's n magnitudes of a sequential sum.

// GroupAggData is a column of group codes and one value column in device memory.
type GroupAggData struct {
	d     *Device
	codes driver.DevicePtr
	vals  driver.DevicePtr
	n     int64
	float bool
}

// GroupAggResult holds the per-group states a kernel kept (nil where not asked for). Min and
// max of a group with no valid value are not set: Count is 0 there.
type GroupAggResult struct {
	Count      []int64
	SumI       []int64
	SumF       []float64
	SumSq      []float64
	MinI, MaxI []int64
	MinF, MaxF []float64
}

// UploadGroupAggData copies codes and one value column (ints, or floats when ints is nil) to
// d. Free releases them.
func UploadGroupAggData(ctx context.Context, d *Device, codes []int64, ints []int64, floats []float64) (*GroupAggData, error) {
	n := len(codes)
	g := &GroupAggData{d: d, n: int64(n), float: ints == nil}
	var src unsafe.Pointer
	switch {
	case ints != nil && len(ints) == n:
		if n > 0 {
			src = unsafe.Pointer(&ints[0])
		}
	case ints == nil && len(floats) == n:
		if n > 0 {
			src = unsafe.Pointer(&floats[0])
		}
	default:
		return nil, fmt.Errorf("cuda: group aggregate of %d codes and %d ints, %d floats", n, len(ints), len(floats))
	}
	err := d.Do(ctx, func() error {
		bytes := uint64(max(n, 1)) * 8
		var err error
		if g.codes, err = d.pool.Alloc(bytes); err != nil {
			return err
		}
		if g.vals, err = d.pool.Alloc(bytes); err != nil {
			d.pool.Free(g.codes)
			return err
		}
		if n == 0 {
			return nil
		}
		if err := driver.MemcpyHtoD(g.codes, unsafe.Pointer(&codes[0]), uint64(n)*8); err != nil {
			return fmt.Errorf("upload group codes: %w", err)
		}
		if err := driver.MemcpyHtoD(g.vals, src, uint64(n)*8); err != nil {
			return fmt.Errorf("upload group values: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Free releases g's device memory.
func (g *GroupAggData) Free(ctx context.Context) error {
	return g.d.Do(ctx, func() error {
		g.d.pool.Free(g.codes)
		g.d.pool.Free(g.vals)
		return nil
	})
}

// GroupAggKernel is the kernel that folds a column into groups groups (shared-memory tables
// where they fit).
func GroupAggKernel(groups int, float bool, states ptx.GroupStates) ptx.GroupAgg {
	a := ptx.GroupAgg{Groups: groups, Float: float, States: states}
	a.Shared = a.SharedFits()
	return a
}

// Aggregate folds g's rows into groups groups, keeping states.
func (g *GroupAggData) Aggregate(ctx context.Context, groups int, states ptx.GroupStates) (*GroupAggResult, error) {
	var words []uint64
	err := g.d.Do(ctx, func() error {
		var err error
		words, err = g.d.groupAgg(GroupAggKernel(groups, g.float, states), g.codes, g.vals, g.n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return groupAggResult(words, groups, g.float, states), nil
}

// groupAgg runs kernel a over n rows at codes and vals (device memory, on the device
// goroutine) and returns its output words.
func (d *Device) groupAgg(a ptx.GroupAgg, codes, vals driver.DevicePtr, n int64) ([]uint64, error) {
	states := a.States.List()
	words := len(states) * a.Groups
	init := make([]uint64, words)
	for j, st := range states {
		if v := st.Init(); v != 0 {
			for k := 0; k < a.Groups; k++ {
				init[j*a.Groups+k] = v
			}
		}
	}
	S := Slices(n)
	if S == 0 {
		return init, nil
	}
	fn, err := d.generated(a.Name(), func() (string, error) { return a.PTX(d.lib.Version(), d.lib.Target()) })
	if err != nil {
		return nil, err
	}
	out, err := d.pool.Alloc(uint64(words) * 8)
	if err != nil {
		return nil, err
	}
	defer d.pool.Free(out)
	if err := driver.MemcpyHtoD(out, unsafe.Pointer(&init[0]), uint64(words)*8); err != nil {
		return nil, fmt.Errorf("group aggregate tables: %w", err)
	}
	if err := d.launchWords(fn, a.Name(), uint32(S), uint64(codes), uint64(vals), uint64(n), uint64(out), uint64(S)); err != nil {
		return nil, err
	}
	if err := d.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", a.Name(), err)
	}
	host := make([]uint64, words)
	if err := driver.MemcpyDtoH(unsafe.Pointer(&host[0]), out, uint64(words)*8); err != nil {
		return nil, fmt.Errorf("download group states: %w", err)
	}
	return host, nil
}

// groupAggResult splits a kernel's output words into its states.
func groupAggResult(words []uint64, groups int, float bool, states ptx.GroupStates) *GroupAggResult {
	r := &GroupAggResult{}
	ints := func(w []uint64) []int64 {
		o := make([]int64, len(w))
		for i, x := range w {
			o[i] = int64(x)
		}
		return o
	}
	floats := func(w []uint64) []float64 {
		o := make([]float64, len(w))
		for i, x := range w {
			o[i] = math.Float64frombits(x)
		}
		return o
	}
	keys := func(w []uint64) []float64 {
		o := make([]float64, len(w))
		for i, x := range w {
			o[i] = ptx.FromOrderedKey(int64(x))
		}
		return o
	}
	for j, st := range states.List() {
		w := words[j*groups : (j+1)*groups]
		switch {
		case st == ptx.GroupCount:
			r.Count = ints(w)
		case st == ptx.GroupSum && float:
			r.SumF = floats(w)
		case st == ptx.GroupSum:
			r.SumI = ints(w)
		case st == ptx.GroupSumSq:
			r.SumSq = floats(w)
		case st == ptx.GroupMin && float:
			r.MinF = keys(w)
		case st == ptx.GroupMin:
			r.MinI = ints(w)
		case st == ptx.GroupMax && float:
			r.MaxF = keys(w)
		case st == ptx.GroupMax:
			r.MaxI = ints(w)
		}
	}
	return r
}
