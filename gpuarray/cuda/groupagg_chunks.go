package cuda

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
)

// GroupAggChunk is one chunk of a partitioned column in device memory for GroupAggChunks: N
// int64 group codes and N value words (int64, or float64 for a float column). Vals may equal
// Codes when the states need no values (a count of integer rows).
type GroupAggChunk struct {
	Codes, Vals driver.DevicePtr
	N           int64
}

// GroupAggChunks folds the rows of every chunk into one set of per-group tables on d (one
// kernel launch per chunk, all adding into the same tables, one download at the end), so a
// partitioned column costs one table and one copy back however many partitions it has. The
// chunks must be in d's memory and stay there (pinned) until it returns.
func GroupAggChunks(ctx context.Context, d *Device, groups int, float bool, states ptx.GroupStates, chunks []GroupAggChunk) (*GroupAggResult, error) {
	if groups <= 0 || len(states.List()) == 0 {
		return nil, fmt.Errorf("cuda: group aggregate of %d groups with states %d", groups, states)
	}
	a := GroupAggKernel(groups, float, states)
	var words []uint64
	err := d.Do(ctx, func() error {
		var err error
		words, err = d.groupAggChunks(ctx, a, chunks)
		return err
	})
	if err != nil {
		return nil, err
	}
	return groupAggResult(words, groups, float, states), nil
}

// groupAggChunks is GroupAggChunks on the device goroutine.
func (d *Device) groupAggChunks(ctx context.Context, a ptx.GroupAgg, chunks []GroupAggChunk) ([]uint64, error) {
	out, err := d.groupAggRun(ctx, a, chunks)
	if err != nil {
		return nil, err
	}
	defer d.pool.Free(out)
	words := len(a.States.List()) * a.Groups
	host := make([]uint64, words)
	if err := driver.MemcpyDtoH(unsafe.Pointer(&host[0]), out, uint64(words)*8); err != nil {
		return nil, fmt.Errorf("download group states: %w", err)
	}
	return host, nil
}

// groupAggRun runs kernel a over the chunks into tables it allocates (each state's run of
// Groups words after the other's) and returns them once the kernels are done, on the device
// goroutine; the caller frees them.
func (d *Device) groupAggRun(ctx context.Context, a ptx.GroupAgg, chunks []GroupAggChunk) (driver.DevicePtr, error) {
	states := a.States.List()
	words := len(states) * a.Groups
	fn, err := d.generated(a.Name(), func() (string, error) { return a.PTX(d.lib.Version(), d.lib.Target()) })
	if err != nil {
		return 0, err
	}
	out, err := d.pool.Alloc(uint64(words) * 8)
	if err != nil {
		return 0, fmt.Errorf("group aggregate tables (%d words): %w", words, err)
	}
	ok := false
	defer func() {
		if !ok {
			d.pool.Free(out)
		}
	}()
	// Each state's run of Groups words starts at its Init: zeros set on the device (many
	// groups make these tables large), the min and max extremes copied up.
	var init []uint64
	for j, st := range states {
		run := out + driver.DevicePtr(uint64(j*a.Groups)*8)
		v := st.Init()
		if v == 0 {
			if err := driver.MemsetD32Async(run, 0, uint64(a.Groups)*2, d.stream); err != nil {
				return 0, fmt.Errorf("group aggregate tables: %w", err)
			}
			continue
		}
		if init == nil || init[0] != v {
			init = make([]uint64, a.Groups)
			for k := range init {
				init[k] = v
			}
		}
		if err := driver.MemcpyHtoD(run, unsafe.Pointer(&init[0]), uint64(a.Groups)*8); err != nil {
			return 0, fmt.Errorf("group aggregate tables: %w", err)
		}
	}
	for i, c := range chunks {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		S := Slices(c.N)
		if S == 0 {
			continue
		}
		if err := d.launchWords(fn, a.Name(), uint32(S), uint64(c.Codes), uint64(c.Vals), uint64(c.N), uint64(out), uint64(S)); err != nil {
			return 0, fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	if err := d.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("kernel %s: %w", a.Name(), err)
	}
	ok = true
	return out, nil
}

// GroupAggChunksKept is GroupAggChunks with the tables left in d's memory: one allocation of
// groups words per state, in states.List() order, which the caller owns (d.Pool().Free gives
// each back). Float minima and maxima stay ordered words (ptx.FromOrderedKey).
func GroupAggChunksKept(ctx context.Context, d *Device, groups int, float bool, states ptx.GroupStates, chunks []GroupAggChunk) ([]driver.DevicePtr, error) {
	if groups <= 0 || len(states.List()) == 0 {
		return nil, fmt.Errorf("cuda: group aggregate of %d groups with states %d", groups, states)
	}
	a := GroupAggKernel(groups, float, states)
	var runs []driver.DevicePtr
	err := d.Do(ctx, func() error {
		out, err := d.groupAggRun(ctx, a, chunks)
		if err != nil {
			return err
		}
		// The first state's run starts the allocation: it keeps it; the others are copied
		// into their own, on the device.
		runs = []driver.DevicePtr{out}
		for j := 1; j < len(a.States.List()); j++ {
			p, err := d.pool.Alloc(uint64(a.Groups) * 8)
			if err == nil {
				err = driver.MemcpyDtoDAsync(p, out+driver.DevicePtr(uint64(j*a.Groups)*8), uint64(a.Groups)*8, d.stream)
				if err != nil {
					d.pool.Free(p)
				}
			}
			if err != nil {
				for _, q := range runs {
					d.pool.Free(q)
				}
				return fmt.Errorf("group aggregate tables kept: %w", err)
			}
			runs = append(runs, p)
		}
		if err := d.stream.Synchronize(); err != nil {
			for _, q := range runs {
				d.pool.Free(q)
			}
			return fmt.Errorf("kernel %s: %w", a.Name(), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}
