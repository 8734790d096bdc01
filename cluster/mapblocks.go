package cluster

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// MapBlocks is gpuarray.MapBlocks with the function run on the workers, one task per block:
// fn names a top-level func of a cell (or is a Source) of type
// func(blocks [][]float64, shape []int) []float64, shipped as Submit ships functions. The
// inputs are computed on the cluster first; the blocks go to the workers with their tasks and
// the results come back into a float64 array of the inputs' shape and chunks. A task's error,
// a panic in fn or a block of the wrong length is an error of the result, naming the block.
// Like gpuarray.MapBlocks it is eager: it returns when every block is done.
func (c *Client) MapBlocks(fn any, arrays ...*gpuarray.Array) *gpuarray.Array {
	run := func(ctx context.Context, blocks [][][]float64, shapes [][]int) ([][]float64, error) {
		fs := make([]*Future, len(blocks))
		for b := range blocks {
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
	return gpuarray.MapBlocksWith(run, arrays, gpuarray.On(c))
}
