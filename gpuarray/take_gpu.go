package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TakeOnGPU is plumbing for package dataframe's GroupBy on a GPU (the rows of a key or value
// column in the order of a device argsort): x.Take(idx) for a 1-d int64 or float64 x and a
// 1-d int64 idx whose values are in range, both computed with opts and left on the GPU, then
// gathered there (cuda.Device.GatherHeld), the result left on that GPU in one chunk. A general
// GPU compute of a take reads its operand and indices on the host; this reads neither there.
// Where opts name no GPU, or an operand is held in narrow elements or on several GPUs, it
// returns the lazy x.Take(idx) and says why; why is "" when it gathered on the device.
func TakeOnGPU(x, idx *Array, opts ...ComputeOption) (out *Array, why string, err error) {
	if err := x.Err(); err != nil {
		return nil, "", err
	}
	if err := idx.Err(); err != nil {
		return nil, "", err
	}
	lazy := func(why string) (*Array, string, error) { return x.Take(idx), why, nil }
	cfg, err := configure(opts)
	if err != nil {
		return nil, "", err
	}
	g, ok := cfg.sched.(*gpuSched)
	switch {
	case !ok || g == nil || len(g.devs) == 0:
		return lazy("not a GPU compute")
	case len(x.n.Shape) != 1 || (x.n.DType != expr.Int64 && x.n.DType != expr.Float64):
		return lazy(fmt.Sprintf("a %v operand of shape %v", x.n.DType, x.n.Shape))
	case len(idx.n.Shape) != 1 || idx.n.DType != expr.Int64:
		return lazy(fmt.Sprintf("%v indices of shape %v", idx.n.DType, idx.n.Shape))
	}
	held := func(n *expr.Node) *gpuChunks {
		gc, _ := n.Buf.(*gpuChunks)
		return gc
	}
	nodes := []*expr.Node{x.n, idx.n}
	inputs := heldBelow(x.n, idx.n)
	var todo []*Array
	var at []int
	for i, n := range nodes {
		if held(n) == nil {
			todo, at = append(todo, &Array{n: n}), append(at, i)
		}
	}
	var mine []*gpuChunks // results of this compute, freed once gathered
	defer func() {
		for _, gc := range mine {
			gc.release()
		}
	}()
	if len(todo) > 0 {
		dc := cfg
		dc.toHost = false
		got, err := computeArrays(dc, todo)
		if err != nil {
			return nil, "", fmt.Errorf("take on the GPU: %w", err)
		}
		for j, a := range got {
			nodes[at[j]] = a.n
			if gc := held(a.n); gc != nil && !inputs[gc] {
				mine = append(mine, gc)
			}
		}
	}
	xg, ig := held(nodes[0]), held(nodes[1])
	if xg == nil || ig == nil {
		return lazy("an operand is in host memory")
	}
	if xg.narrow || ig.narrow {
		return lazy("an operand is held in narrow elements")
	}
	dev := xg.devs[0]
	for _, gc := range []*gpuChunks{xg, ig} {
		for _, d := range gc.devs {
			if d != dev {
				return lazy("the operands are on several GPUs")
			}
		}
	}
	if !xg.pin() {
		return nil, "", fmt.Errorf("take on the GPU: the operand was released")
	}
	defer xg.unpin()
	if !ig.pin() {
		return nil, "", fmt.Errorf("take on the GPU: the indices were released")
	}
	defer ig.unpin()
	pieces := func(gc *gpuChunks) (ps []driver.DevicePtr, rows []int64) {
		for i, r := range gc.grid.chunks[0] {
			ps, rows = append(ps, gc.ptr(i)), append(rows, int64(r))
		}
		return ps, rows
	}
	sp, sr := pieces(xg)
	ip, ir := pieces(ig)
	p, n, err := dev.GatherHeld(cfg.ctx, sp, sr, ip, ir)
	if err != nil {
		return nil, "", fmt.Errorf("take on the GPU: %w", err)
	}
	r, err := compactedNode(x.n, false, []compactPiece{{dev: dev, ptr: p, count: n}}, n)
	if err != nil {
		return nil, "", fmt.Errorf("take on the GPU: %w", err)
	}
	where := fmt.Sprintf("gpu %d", dev.Info.Index)
	return &Array{n: r, path: fmt.Sprintf("take: %d rows gathered on %s from operands held there", n, where)}, "", nil
}
