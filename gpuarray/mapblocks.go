package gpuarray

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// MapBlocks applies f to each block of the arrays, as dask's map_blocks: the arrays are
// broadcast to one shape and one chunk grid, and for every block f gets the blocks' values
// (float64, row-major, one slice per array, in order) and the block's shape, and returns the
// block's result: as many values, row-major. The result is a float64 array with the arrays'
// shape and chunks.
//
// It is the slow path, for what Elementwise cannot say: f is Go code declared in a cell and
// interpreted, called once per block on this process's CPU. MapBlocks computes its inputs
// first (with the defaults of SetDefaults), so it is not lazy and does not fuse, and it is
// not shipped to cluster workers. A block of the wrong length, or a panic in f, is an error
// of the result (see Err), naming the block.
func MapBlocks(f func(blocks [][]float64, shape []int) []float64, arrays ...*Array) *Array {
	if f == nil {
		return errArray(fmt.Errorf("MapBlocks: nil function"))
	}
	if len(arrays) == 0 {
		return errArray(fmt.Errorf("MapBlocks: no arrays"))
	}
	ns := make([]*expr.Node, len(arrays))
	for i, a := range arrays {
		if a == nil {
			return errArray(fmt.Errorf("MapBlocks: array %d is nil", i))
		}
		if err := a.Err(); err != nil {
			return errArray(fmt.Errorf("MapBlocks: array %d: %w", i, err))
		}
		ns[i] = a.n
	}
	shape, chunks, err := expr.BroadcastShapes(ns...)
	if err != nil {
		return errArray(fmt.Errorf("MapBlocks: %w", err))
	}
	vals := make([][]float64, len(arrays))
	for i, n := range ns {
		b, err := expr.BroadcastTo(n, shape, chunks)
		if err != nil {
			return errArray(fmt.Errorf("MapBlocks: array %d: %w", i, err))
		}
		if vals[i], err = (&Array{n: b}).ToSlice(); err != nil {
			return errArray(fmt.Errorf("MapBlocks: array %d: %w", i, err))
		}
	}
	out := make([]float64, len(vals[0]))
	// Walk the chunk grid: idx is the block's index along each axis.
	idx := make([]int, len(shape))
	starts := make([][]int, len(shape))
	for ax, cs := range chunks {
		starts[ax] = make([]int, len(cs))
		for j := 1; j < len(cs); j++ {
			starts[ax][j] = starts[ax][j-1] + cs[j-1]
		}
	}
	empty := len(out) == 0
	for !empty {
		bshape := make([]int, len(shape))
		size := 1
		for ax := range shape {
			bshape[ax] = chunks[ax][idx[ax]]
			size *= bshape[ax]
		}
		blocks := make([][]float64, len(vals))
		for i := range blocks {
			blocks[i] = make([]float64, size)
		}
		// copy in and out row by row of the block's last axis
		forBlockRows(shape, bshape, starts, idx, func(flat, local, n int) {
			for i, v := range vals {
				copy(blocks[i][local:local+n], v[flat:flat+n])
			}
		})
		res, err := callBlock(f, blocks, slices.Clone(bshape))
		if err != nil {
			return errArray(fmt.Errorf("MapBlocks: block %v: %w", idx, err))
		}
		if len(res) != size {
			return errArray(fmt.Errorf("MapBlocks: block %v of shape %v: f returned %d values, want %d", idx, bshape, len(res), size))
		}
		forBlockRows(shape, bshape, starts, idx, func(flat, local, n int) {
			copy(out[flat:flat+n], res[local:local+n])
		})
		// next block, last axis fastest
		ax := len(shape) - 1
		for ; ax >= 0; ax-- {
			if idx[ax]++; idx[ax] < len(chunks[ax]) {
				break
			}
			idx[ax] = 0
		}
		if ax < 0 {
			break
		}
	}
	return FromSlice(out, Shape(shape...), ChunkSizes(chunks...))
}

// callBlock calls the user's function, turning a panic into an error.
func callBlock(f func([][]float64, []int) []float64, blocks [][]float64, shape []int) (res []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("f panicked: %v", r)
		}
	}()
	return f(blocks, shape), nil
}

// forBlockRows calls fn for each row (along the last axis) of the block at chunk index idx of
// an array of shape: fn gets the row's flat offset in the array, in the block and its length.
func forBlockRows(shape, bshape []int, starts [][]int, idx []int, fn func(flat, local, n int)) {
	r := len(shape)
	if r == 0 {
		fn(0, 0, 1)
		return
	}
	rows := 1
	for _, d := range bshape[:r-1] {
		rows *= d
	}
	n := bshape[r-1]
	pos := make([]int, r-1) // position inside the block, row axes
	for row := 0; row < rows; row++ {
		flat := 0
		for ax := 0; ax < r; ax++ {
			p := starts[ax][idx[ax]]
			if ax < r-1 {
				p += pos[ax]
			}
			flat = flat*shape[ax] + p
		}
		fn(flat, row*n, n)
		for ax := r - 2; ax >= 0; ax-- {
			if pos[ax]++; pos[ax] < bshape[ax] {
				break
			}
			pos[ax] = 0
		}
	}
}
