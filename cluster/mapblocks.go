package cluster

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// MapBlocks is gpuarray.MapBlocks with the function run on the workers, one task per block:
// fn names a top-level func of a cell (or is a Source) of type
// func(blocks [][]float64, shape []int) []float64, shipped as Submit ships functions. The
// inputs are computed on the cluster first; the blocks go to the workers with their tasks and
// the results come back into a float64 array of the inputs' shape and chunks. A task's error,
// a panic in fn or a block of the wrong length is an error of the result, naming the block.
// Like gpuarray.MapBlocks it is eager: it returns when every block is done. An array persisted
// on this cluster with the blocks as its chunks is not fetched: each block's task runs on the
// worker holding its chunk and reads it there.
func (c *Client) MapBlocks(fn any, arrays ...*gpuarray.Array) *gpuarray.Array {
	br := &plan.BlockRefs{}
	run := func(ctx context.Context, blocks [][][]float64, shapes [][]int) ([][]float64, error) {
		fs := make([]*Future, len(blocks))
		for b := range blocks {
			if br.Refs != nil && br.Refs[b] != nil {
				fs[b] = c.submitBlock(fn, blocks[b], br.Refs[b], shapes[b])
				continue
			}
			fs[b] = c.Submit(fn, blocks[b], shapes[b])
		}
		// Released once read (or on an error), so the workers drop the blocks' results.
		defer func() {
			for _, f := range fs {
				f.Release()
			}
		}()
		out := make([][]float64, len(blocks))
		for b, f := range fs {
			v, err := f.Result(ctx)
			if err != nil {
				return nil, &gpuarray.BlockError{Block: b, Err: err}
			}
			r, ok := v.([]float64)
			if !ok {
				return nil, &gpuarray.BlockError{Block: b, Err: fmt.Errorf("fn returned %T, want []float64", v)}
			}
			out[b] = r
		}
		return out, nil
	}
	return gpuarray.MapBlocksWith(run, arrays, gpuarray.On(c), gpuarray.WithContext(plan.WithBlockRefs(cellContext(), br)))
}

// submitBlock submits fn(blocks, shape) for one block of MapBlocks whose inputs are values or
// kept chunks (refs[i] != ""): a "blocks" task that depends on the kept chunks, so that it runs
// where they are, and that the worker calls with their values in place of the refs.
func (c *Client) submitBlock(fn any, vals [][]float64, refs []string, shape []int) *Future {
	src, name, err := resolveFunc(fn)
	if err != nil {
		return c.newFuture(nil, fmt.Errorf("cluster: %w", err))
	}
	t := &task{key: c.s.newKey(name), maxRetries: c.retries, refs: 1, priority: c.priority}
	t.spec = taskSpec{Kind: "blocks", Source: src, Func: name}
	for i, v := range vals {
		if refs[i] != "" {
			keptMu.Lock()
			d := kept[keptID{c.s, refs[i]}]
			keptMu.Unlock()
			if d == nil {
				return c.newFuture(nil, fmt.Errorf("cluster: array %d's chunk %s is not held by this cluster (released?)", i, refs[i]))
			}
			t.deps = append(t.deps, d)
			t.spec.Args = append(t.spec.Args, arg{Ref: refs[i]})
			continue
		}
		b, err := encodeValue(v)
		if err != nil {
			return c.newFuture(nil, fmt.Errorf("cluster: array %d: %w", i, err))
		}
		t.spec.Args = append(t.spec.Args, arg{Val: b})
	}
	b, err := encodeValue(shape)
	if err != nil {
		return c.newFuture(nil, fmt.Errorf("cluster: %w", err))
	}
	t.spec.Args = append(t.spec.Args, arg{Val: b})
	if err := c.s.add([]*task{t}); err != nil {
		return c.newFuture(nil, fmt.Errorf("cluster: %w", err))
	}
	return c.newFuture(t, nil)
}
