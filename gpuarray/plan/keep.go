package plan

import (
	"context"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// Keeper is a scheduler that can keep the outputs of tasks where they ran, as a cluster keeps
// results on its workers, for later tasks to read there (Block.Ref). Persist uses it.
type Keeper interface {
	// Keep runs tasks that each compute one whole chunk (no reduction) and keeps each output
	// where it ran; kept[i] belongs to tasks[i]. It calls done(1) as each task finishes.
	Keep(ctx context.Context, tasks []*Task, done func(n int)) (kept []Kept, err error)
	// Holds reports whether this scheduler's tasks can read k where it is kept (k was kept by
	// the same cluster).
	Holds(k Kept) bool
}

// Kept is one chunk a Keeper keeps.
type Kept interface {
	// Ref names the chunk for the tasks that read it (Block.Ref).
	Ref() string
	// Where names what holds it now (a worker's name), or its state while it is recomputed.
	Where() string
	// Fetch returns its values (row-major over the chunk), recomputing them if their holder died.
	Fetch(ctx context.Context) (dtype.Slice, error)
	// Release lets the keeper drop it.
	Release()
}

// BlockRefs carries, from gpuarray.MapBlocksWith to a block runner that asks for it (a
// cluster's), the blocks that are chunks a Keeper keeps: Refs[b][i] names the kept chunk whose
// values are block b of array i, and the runner reads it where it is; "" where the block's
// values are given. Refs stays nil when no block is a kept chunk.
type BlockRefs struct {
	Refs [][]string
}

type blockRefsKey struct{}

// WithBlockRefs returns ctx asking MapBlocksWith to fill r instead of fetching kept chunks.
func WithBlockRefs(ctx context.Context, r *BlockRefs) context.Context {
	return context.WithValue(ctx, blockRefsKey{}, r)
}

// BlockRefsIn returns the BlockRefs ctx asks for (nil: none; the runner wants every value).
func BlockRefsIn(ctx context.Context) *BlockRefs {
	r, _ := ctx.Value(blockRefsKey{}).(*BlockRefs)
	return r
}

type alignedKey struct{}

// WithAlignedChunks returns ctx asking a Keeper to place the chunks it keeps by their index
// (Task.Index), the same way for every array: chunk i of each array persisted under ctx goes
// to one place, so that a later task reading chunk i of several of them (a frame's partition
// of every column) reads them where they are. A chunk task that reads kept chunks still runs
// where they are.
func WithAlignedChunks(ctx context.Context) context.Context {
	return context.WithValue(ctx, alignedKey{}, true)
}

// AlignedChunksIn reports whether ctx asks for aligned chunks (WithAlignedChunks).
func AlignedChunksIn(ctx context.Context) bool {
	v, _ := ctx.Value(alignedKey{}).(bool)
	return v
}
