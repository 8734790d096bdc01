package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// MapBlocks applies f to each block of the arrays, as dask's map_blocks: the arrays are
// broadcast to one shape and one chunk grid, and for every block f gets the blocks' values
// (float64, row-major, one slice per array, in order) and the block's shape, and returns the
// block's result: as many values, row-major. The result is a float64 array with the arrays'
// shape and chunks.
//
// It is the slow path, for what Elementwise cannot say: f is Go code declared in a cell and
// interpreted, called once per block on this process's CPU. MapBlocks computes its inputs
// first (with the defaults of SetDefaults), so it is not lazy and does not fuse. On a cluster,
// c.MapBlocks("f", arrays...) ships f to the workers instead, one task per block. A block of
// the wrong length, or a panic in f, is an error of the result (see Err), naming the block.
func MapBlocks(f func(blocks [][]float64, shape []int) []float64, arrays ...*Array) *Array {
	if f == nil {
		return errArray(fmt.Errorf("MapBlocks: nil function"))
	}
	return MapBlocksWith(func(_ context.Context, blocks [][][]float64, shapes [][]int) ([][]float64, error) {
		out := make([][]float64, len(blocks))
		for b := range blocks {
			res, err := callBlock(f, blocks[b], shapes[b])
			if err != nil {
				return nil, &BlockError{b, err}
			}
			out[b] = res
		}
		return out, nil
	}, arrays)
}

// BlockRunner runs MapBlocksWith's function on every block: blocks[b] holds block b's values of
// each array (float64, row-major) and shapes[b] its shape, in the order of the chunk grid (the
// last axis fastest). It returns each block's values, row-major; an error may name a block by
// wrapping a *BlockError. A runner that asks for them (a plan.BlockRefs in the context of
// WithContext) gets an array persisted on the cluster it computes on as refs to its chunks
// (BlockRefs.Refs[b][i]), with blocks[b][i] nil: it reads them where they are kept.
type BlockRunner func(ctx context.Context, blocks [][][]float64, shapes [][]int) ([][]float64, error)

// BlockError is a BlockRunner's error about block Block (its position in the runner's list).
type BlockError struct {
	Block int
	Err   error
}

func (e *BlockError) Error() string { return fmt.Sprintf("block %d: %v", e.Block, e.Err) }

// Unwrap returns the block's error.
func (e *BlockError) Unwrap() error { return e.Err }

// MapBlocksWith is MapBlocks with the calls left to run (cluster's Client.MapBlocks runs them
// as tasks on its workers). The inputs are computed with opts added to the defaults, and their
// blocks are all handed to run at once.
func MapBlocksWith(run BlockRunner, arrays []*Array, opts ...ComputeOption) *Array {
	if run == nil {
		return errArray(fmt.Errorf("MapBlocks: nil block runner"))
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
	cfg, err := configure(opts)
	if err != nil {
		return errArray(fmt.Errorf("MapBlocks: %w", err))
	}
	shape, chunks, err := expr.BroadcastShapes(ns...)
	if err != nil {
		return errArray(fmt.Errorf("MapBlocks: %w", err))
	}
	// A runner that reads kept chunks where they are (a cluster's) gets the chunks of arrays
	// persisted there as refs instead of values.
	br := plan.BlockRefsIn(cfg.ctx)
	keeper, _ := cfg.sched.(plan.Keeper)
	kept := make([]*keptChunks, len(arrays))
	var keptAt []map[string]int // per array: chunk offset -> index in kept[i].kept
	if br != nil && keeper != nil {
		keptAt = make([]map[string]int, len(arrays))
		for i, n := range ns {
			if kc, at := keptBlocks(n, shape, chunks, keeper); kc != nil {
				defer kc.unpin()
				kept[i], keptAt[i] = kc, at
			}
		}
	}
	vals := make([][]float64, len(arrays))
	for i, n := range ns {
		if kept[i] != nil {
			continue
		}
		b, err := expr.BroadcastTo(n, shape, chunks)
		if err != nil {
			return errArray(fmt.Errorf("MapBlocks: array %d: %w", i, err))
		}
		if vals[i], err = (&Array{n: b}).ToSlice(opts...); err != nil {
			return errArray(fmt.Errorf("MapBlocks: array %d: %w", i, err))
		}
	}
	starts := make([][]int, len(shape))
	for ax, cs := range chunks {
		starts[ax] = make([]int, len(cs))
		for j := 1; j < len(cs); j++ {
			starts[ax][j] = starts[ax][j-1] + cs[j-1]
		}
	}
	// The chunk grid, last axis fastest: each block's index, shape and input values.
	var idxs, shapes [][]int
	var blocks [][][]float64
	var refs [][]string
	out := make([]float64, expr.Size(shape))
	idx := make([]int, len(shape))
	for empty := len(out) == 0; !empty; {
		bshape := make([]int, len(shape))
		size := 1
		for ax := range shape {
			bshape[ax] = chunks[ax][idx[ax]]
			size *= bshape[ax]
		}
		in := make([][]float64, len(vals))
		var ref []string
		for i := range in {
			if kept[i] != nil {
				if ref == nil {
					ref = make([]string, len(vals))
				}
				off := make([]int, len(shape))
				for ax := range shape {
					off[ax] = starts[ax][idx[ax]]
				}
				ref[i] = kept[i].kept[keptAt[i][fmt.Sprint(off)]].Ref()
				continue
			}
			in[i] = make([]float64, size)
		}
		forBlockRows(shape, bshape, starts, idx, func(flat, local, n int) {
			for i, v := range vals {
				if v != nil {
					copy(in[i][local:local+n], v[flat:flat+n])
				}
			}
		})
		idxs, shapes, blocks = append(idxs, slices.Clone(idx)), append(shapes, bshape), append(blocks, in)
		refs = append(refs, ref)
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
	var res [][]float64
	if len(blocks) > 0 {
		callShapes := make([][]int, len(shapes))
		for b := range shapes {
			callShapes[b] = slices.Clone(shapes[b])
		}
		if br != nil && slices.ContainsFunc(kept, func(k *keptChunks) bool { return k != nil }) {
			br.Refs = refs
		}
		if res, err = run(cfg.ctx, blocks, callShapes); err != nil {
			var be *BlockError
			if errors.As(err, &be) && be.Block >= 0 && be.Block < len(idxs) {
				return errArray(fmt.Errorf("MapBlocks: block %v: %w", idxs[be.Block], be.Err))
			}
			return errArray(fmt.Errorf("MapBlocks: %w", err))
		}
		if len(res) != len(blocks) {
			return errArray(fmt.Errorf("MapBlocks: %d results for %d blocks", len(res), len(blocks)))
		}
	}
	for b, r := range res {
		size := 1
		for _, d := range shapes[b] {
			size *= d
		}
		if len(r) != size {
			return errArray(fmt.Errorf("MapBlocks: block %v of shape %v: f returned %d values, want %d", idxs[b], shapes[b], len(r), size))
		}
		forBlockRows(shape, shapes[b], starts, idxs[b], func(flat, local, n int) {
			copy(out[flat:flat+n], r[local:local+n])
		})
	}
	return FromSlice(out, Shape(shape...), ChunkSizes(chunks...))
}

// keptBlocks returns n's chunks when n is an array persisted on k whose chunks are exactly the
// blocks of MapBlocks (same shape and chunks), pinned until the caller unpins them, with the
// index of each chunk by its offset; nil otherwise.
func keptBlocks(n *expr.Node, shape []int, chunks [][]int, k plan.Keeper) (*keptChunks, map[string]int) {
	kc, ok := n.Buf.(*keptChunks)
	if !ok || !slices.Equal(n.Shape, shape) || !slices.EqualFunc(n.Chunks, chunks, slices.Equal) {
		return nil, nil
	}
	for _, x := range kc.kept {
		if !k.Holds(x) {
			return nil, nil
		}
	}
	if !kc.pin() {
		return nil, nil
	}
	at := make(map[string]int, len(kc.offs))
	for j, off := range kc.offs {
		at[fmt.Sprint(off)] = j
	}
	return kc, at
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
