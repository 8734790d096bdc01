package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TakeRowsOnGPU is plumbing for package dataframe's Merge on a GPU (the output columns of a
// join at its row pairs): rows, pieces of int32 rows in range of every array of xs with -1
// for "no row", is uploaded once to the GPU that holds xs, a piece at a time; each 1-d array
// of xs, computed with opts and left on that GPU (persisted, or a GPU compute's result), is
// gathered there at the rows into a new array held there with a chunk per non-empty piece, a
// zero element where the row is -1 (the caller marks those rows null). Index, when keepIndex,
// is the rows themselves held on the GPU as an int32 array of the same chunks (for a validity
// computed from them there); otherwise nil. Arrays held in elements of 4 bytes (int32, uint32,
// float32) and of 8 (int64, uint64, float64, datetimes) are gathered; why, when not "", says
// why nothing was gathered (not a GPU compute, an array held in other elements, on several
// GPUs or in host memory): the caller gathers on the host then.
func TakeRowsOnGPU(xs []*Array, rows [][]int32, keepIndex bool, opts ...ComputeOption) (out []*Array, index *Array, why string, err error) {
	var lens []int
	total := 0
	for _, p := range rows {
		if len(p) > 0 {
			lens = append(lens, len(p))
			total += len(p)
		}
	}
	for _, x := range xs {
		if err := x.Err(); err != nil {
			return nil, nil, "", err
		}
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, nil, "", err
	}
	g, ok := cfg.sched.(*gpuSched)
	if !ok || g == nil || len(g.devs) == 0 {
		return nil, nil, "not a GPU compute", nil
	}
	for _, x := range xs {
		if len(x.n.Shape) != 1 {
			return nil, nil, fmt.Sprintf("an operand of shape %v", x.n.Shape), nil
		}
	}
	held := func(n *expr.Node) *gpuChunks {
		gc, _ := n.Buf.(*gpuChunks)
		return gc
	}
	nodes := make([]*expr.Node, len(xs))
	var todo []*Array
	var at []int
	for i, x := range xs {
		nodes[i] = x.n
		if held(x.n) == nil {
			todo, at = append(todo, x), append(at, i)
		}
	}
	if len(todo) > 0 {
		// Computed onto the GPU, left there: the gathered arrays own nothing of theirs, and
		// the computed ones go when the last reference to them does.
		dc := cfg
		dc.toHost = false
		got, err := computeArrays(dc, todo)
		if err != nil {
			return nil, nil, "", fmt.Errorf("take rows on the GPU: %w", err)
		}
		for j, a := range got {
			nodes[at[j]] = a.n
		}
	}
	var dev *cuda.Device
	units := make([]int, len(xs))
	for i, n := range nodes {
		gc := held(n)
		if gc == nil {
			return nil, nil, "an operand is in host memory", nil
		}
		for _, d := range gc.devs {
			if dev == nil {
				dev = d
			}
			if d != dev {
				return nil, nil, "the operands are on several GPUs", nil
			}
		}
		units[i] = 8 * cuda.Words(gc.dt)
		if gc.narrow {
			units[i] = gc.dt.Size()
		}
		if units[i] != 4 && units[i] != 8 {
			return nil, nil, fmt.Sprintf("a %v operand held in elements of %d bytes", gc.dt, units[i]), nil
		}
	}
	if dev == nil {
		dev = g.devs[0]
	}
	idx, err := dev.UploadRows(cfg.ctx, rows)
	if err != nil {
		return nil, nil, "", fmt.Errorf("take rows on the GPU: %w", err)
	}
	idxRows := make([]int64, len(lens))
	for p, l := range lens {
		idxRows[p] = int64(l)
	}
	pieces := func(ps []driver.DevicePtr) []compactPiece {
		out := make([]compactPiece, len(ps))
		for p, ptr := range ps {
			out[p] = compactPiece{dev: dev, ptr: ptr, count: idxRows[p]}
		}
		return out
	}
	freeIdx := func() { freePieces(pieces(idx)) }
	out = make([]*Array, len(xs))
	where := fmt.Sprintf("gpu %d", dev.Info.Index)
	for i, n := range nodes {
		gc := held(n)
		if !gc.pin() {
			freeIdx()
			return nil, nil, "", fmt.Errorf("take rows on the GPU: operand %d was released", i)
		}
		var srcs []driver.DevicePtr
		var srcRows []int64
		for c, r := range gc.grid.chunks[0] {
			srcs, srcRows = append(srcs, gc.ptr(c)), append(srcRows, int64(r))
		}
		ps, err := dev.GatherRows(cfg.ctx, srcs, srcRows, units[i], idx, idxRows)
		gc.unpin()
		if err != nil {
			freeIdx()
			return nil, nil, "", fmt.Errorf("take rows on the GPU: %w", err)
		}
		r, err := compactedNode(n, gc.narrow, pieces(ps), int64(total))
		if err != nil {
			freeIdx()
			return nil, nil, "", fmt.Errorf("take rows on the GPU: %w", err)
		}
		out[i] = &Array{n: r, path: fmt.Sprintf("take rows: %d rows gathered on %s from operands held there", total, where)}
	}
	if !keepIndex {
		freeIdx()
		return out, nil, "", nil
	}
	proto, err := expr.NewData(dtype.Make(dtype.Int32, 0), []int{0}, [][]int{{0}})
	if err != nil {
		freeIdx()
		return nil, nil, "", fmt.Errorf("take rows on the GPU: %w", err)
	}
	r, err := compactedNode(proto, true, pieces(idx), int64(total))
	if err != nil {
		return nil, nil, "", fmt.Errorf("take rows on the GPU: %w", err)
	}
	return out, &Array{n: r, path: fmt.Sprintf("take rows: %d rows uploaded to %s", total, where)}, "", nil
}
