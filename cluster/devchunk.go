package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// devChunk is one array chunk a GPU worker holds in its device's memory, in the fused
// kernel's words (cuda.EncodeWords) or, for float32, bools and integers of 1 to 4 bytes, in
// their own element size (cuda.Narrow, cuda.EncodeNarrow),
// row-major over shape: a persisted chunk, which the worker's kernels read in place
// (plan.Held).
type devChunk struct {
	d      *cuda.Device
	ptr    driver.DevicePtr
	allocs []driver.DevicePtr // what to give back to d's pool
	shape  []int
	dt     dtype.DType
	narrow bool // elements of their own size (cuda.Narrow(dt))
	// fallback says why the chunk was computed on the CPU and uploaded ("": on the GPU).
	fallback string
}

// words is how many 8-byte words the chunk takes (a narrow chunk's padding included).
func (c *devChunk) words() int64 {
	if c.narrow {
		return (expr.Size(c.shape)*int64(c.dt.Size()) + 7) / 8
	}
	return expr.Size(c.shape) * int64(cuda.Words(c.dt))
}

// Bytes is the device memory the chunk's values take.
func (c *devChunk) Bytes() uint64 { return uint64(c.words()) * 8 }

// Host copies the chunk to host memory as the one output of its chunk task.
func (c *devChunk) Host() (any, error) {
	w := make([]float64, c.words())
	if err := c.d.Do(context.Background(), func() error { return c.d.CopyToHost(w, c.ptr) }); err != nil {
		return nil, fmt.Errorf("copy a chunk of %s from GPU %d: %w", expr.ShapeString(c.shape), c.d.Info.Index, err)
	}
	var data dtype.Slice
	if c.narrow {
		data = cuda.DecodeNarrow(w, int(expr.Size(c.shape)), c.dt)
	} else {
		data = cuda.DecodeWords(w, c.dt)
	}
	return []*plan.Output{{Shape: slices.Clone(c.shape), Data: data, HostFallback: c.fallback}}, nil
}

// Free gives the chunk's memory back to the device's pool.
func (c *devChunk) Free() {
	_ = c.d.Do(context.Background(), func() error {
		for _, p := range c.allocs {
			c.d.Pool().Free(p)
		}
		return nil
	})
	c.allocs = nil
}

// uploadChunk puts the output of a chunk task (a host-held result, spilled earlier) in this
// worker's GPU memory; nil for other values.
func uploadChunk(v any) (devValue, error) {
	outs, ok := v.([]*plan.Output)
	if !ok || len(outs) != 1 || outs[0].Aux != nil || outs[0].Data.IsNil() {
		return nil, nil
	}
	dc, err := uploadOutput(outs[0])
	if err != nil {
		return nil, err
	}
	return dc, nil
}

func uploadOutput(o *plan.Output) (*devChunk, error) {
	d, err := cuda.Open(0)
	if err != nil {
		return nil, fmt.Errorf("open this worker's GPU: %w", err)
	}
	dc := &devChunk{d: d, shape: slices.Clone(o.Shape), dt: o.Data.DType(), fallback: o.HostFallback}
	if int64(o.Data.Len()) != expr.Size(o.Shape) {
		return nil, fmt.Errorf("a chunk of shape %s has %d values", expr.ShapeString(o.Shape), o.Data.Len())
	}
	w := cuda.EncodeWords(o.Data)
	if dc.narrow = cuda.Narrow(dc.dt); dc.narrow {
		w = cuda.EncodeNarrow(o.Data)
	}
	err = d.Do(context.Background(), func() error {
		p, err := d.Pool().Alloc(uint64(max(len(w), 1)) * 8)
		if err != nil {
			return err
		}
		dc.ptr, dc.allocs = p, []driver.DevicePtr{p}
		return d.CopyToDevice(p, w)
	})
	if err != nil {
		if dc.allocs != nil {
			dc.Free()
		}
		return nil, fmt.Errorf("put a chunk of %s on GPU %d: %w", expr.ShapeString(o.Shape), d.Info.Index, err)
	}
	return dc, nil
}

// keepOnDevice runs a persisted chunk's task on a GPU worker and leaves its output in device
// memory: the fused kernel writes it there; a kernel the GPU does not run whole (a call, a
// host fallback, said in the result's fallback) runs as any chunk task and its output is
// uploaded.
func keepOnDevice(ctx context.Context, spec []byte, inputs []any) (any, error) {
	var ts []*plan.Task
	if err := gob.NewDecoder(bytes.NewReader(spec)).Decode(&ts); err != nil {
		return nil, fmt.Errorf("decode chunk tasks: %w", err)
	}
	if len(ts) != 1 || ts[0].Kernel.Reduce != nil {
		return executeChunks(ctx, spec, inputs, true)
	}
	t := ts[0]
	if t.Kernel.Call == nil {
		if _, _, err := cuda.Lower(t.Kernel); err == nil {
			d, err := cuda.Open(0)
			if err != nil {
				return nil, fmt.Errorf("open this worker's GPU: %w", err)
			}
			reads, err := fillRefs(ts, inputs, d)
			if err != nil {
				return nil, fmt.Errorf("persisted inputs: %w", err)
			}
			if reads[0] != "" { // no output to carry it: the worker's log says it
				fmt.Fprintf(os.Stderr, "gpunotes worker: warning: host read: a persisted chunk's task read chunks kept on this GPU through host memory: %s\n", reads[0])
			}
			dt := t.Kernel.Instrs[t.Kernel.Result].DType
			run := cuda.RunPlanKeepOwned
			if cuda.Narrow(dt) {
				run = cuda.RunPlanKeepNarrow // in their own size, as the local GPU keeps them
			}
			ptrs, allocs, err := run(ctx, d, ts)
			if err != nil {
				return nil, err
			}
			return &devChunk{d: d, ptr: ptrs[0], allocs: allocs, shape: slices.Clone(t.Shape), dt: dt, narrow: cuda.Narrow(dt)}, nil
		}
	}
	v, err := executeChunks(ctx, spec, inputs, true)
	if err != nil {
		return nil, err
	}
	outs, ok := v.([]*plan.Output)
	if !ok || len(outs) != 1 {
		return v, nil
	}
	dc, err := uploadOutput(outs[0])
	if err != nil {
		// Kept in host memory instead: still correct, and the worker's log says why.
		fmt.Fprintf(os.Stderr, "gpunotes worker: warning: a persisted chunk stays in host memory: %v\n", err)
		return outs, nil
	}
	return dc, nil
}

// hostNote is why a GPU worker computed a kept chunk on its CPU ("" when it did not).
func hostNote(t *taskMsg, v any) string {
	if !t.Spec.Keep {
		return ""
	}
	switch v := v.(type) {
	case *devChunk:
		return v.fallback
	case []*plan.Output:
		for _, o := range v {
			if o != nil && o.HostFallback != "" {
				return o.HostFallback
			}
		}
	}
	return ""
}

// heldBlock reads a device-held chunk in place on d when every kernel input reading the
// block's slot wants the chunk's dtype (the words are read as they are), and the kernel is
// one whose calls, if any, read held blocks on the device (cuda.ReadsHeld: sorts, FFTs,
// products, matrix functions); other calls read their block from the host.
func heldBlock(t *plan.Task, slot int, c *devChunk, d *cuda.Device) bool {
	if d == nil || c.d != d || t.Kernel.Call != nil && !cuda.ReadsHeld(t.Kernel) {
		return false
	}
	for _, in := range t.Kernel.Instrs {
		if in.Code == plan.Input && in.Slot == slot && in.DType != c.dt || in.Code == plan.Search && in.Slot == slot && in.Sorted != c.dt {
			return false
		}
	}
	return true
}

// blockValues returns a MapBlocks input as float64 values: a block sent as values, or a kept
// chunk (one chunk task's output, or a chunk held on this worker's GPU, copied to the host).
func blockValues(v any) ([]float64, error) {
	if dv, ok := v.(devValue); ok {
		var err error
		if v, err = dv.Host(); err != nil {
			return nil, err
		}
	}
	switch v := v.(type) {
	case []float64:
		return v, nil
	case []*plan.Output:
		if len(v) != 1 {
			return nil, fmt.Errorf("a kept chunk of %d outputs", len(v))
		}
		return dtype.Convert(v[0].Data, dtype.Float64).Float64s(), nil
	}
	return nil, fmt.Errorf("a block of type %T", v)
}
