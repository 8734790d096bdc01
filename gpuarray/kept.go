package gpuarray

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// KeptChunks returns the chunks of a 1-D array persisted on k (a cluster: Persist(On(c))),
// in order, or nil when a is not such an array. It is plumbing for packages that move kept
// chunks between workers themselves (dataframe's cluster shuffle); the chunks stay owned by a.
func KeptChunks(a *Array, k plan.Keeper) []plan.Kept {
	if a == nil || a.err != nil || a.n == nil || len(a.n.Shape) != 1 {
		return nil
	}
	kc, ok := a.n.Buf.(*keptChunks)
	if !ok {
		return nil
	}
	for _, x := range kc.kept {
		if !k.Holds(x) {
			return nil
		}
	}
	// The chunks are listed in the order of their offsets (one axis: row order).
	idx := make([]int, len(kc.kept))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(x, y int) int { return kc.offs[x][0] - kc.offs[y][0] })
	out := make([]plan.Kept, len(idx))
	for j, i := range idx {
		out[j] = kc.kept[i]
	}
	return out
}

// FromKept returns the 1-D array of dtype dt whose chunks, of lengths lens, are kept by k
// (kept[i] holds chunk i): the result of work that k ran and kept itself, like a cluster's
// shuffle. The array owns the chunks: they are released with it (Release, or when it is
// garbage).
func FromKept(k plan.Keeper, dt DType, lens []int, kept []plan.Kept) (*Array, error) {
	if len(lens) != len(kept) || len(lens) == 0 {
		return nil, fmt.Errorf("gpuarray: FromKept: %d chunk lengths for %d chunks", len(lens), len(kept))
	}
	n := 0
	var tasks []*plan.Task
	for _, l := range lens {
		if l < 1 {
			return nil, fmt.Errorf("gpuarray: FromKept: a chunk of %d elements", l)
		}
		tasks = append(tasks, &plan.Task{Offset: []int{n}})
		n += l
	}
	node := &expr.Node{Shape: []int{n}, Chunks: [][]int{slices.Clone(lens)}, DType: dtype.DType(dt)}
	buf := newKeptChunks(k, node, tasks, kept)
	bn, err := expr.NewBuffered(buf, node.Shape, node.Chunks)
	if err != nil {
		buf.release()
		return nil, fmt.Errorf("gpuarray: FromKept: %w", err)
	}
	bn.DType = dtype.DType(dt)
	return &Array{n: bn}, nil
}
