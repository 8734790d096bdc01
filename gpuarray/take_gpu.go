package gpuarray

import (
	"fmt"
	"os"
	"slices"

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
	cfg, err := configure(opts)
	if err != nil {
		return nil, "", err
	}
	return gatherOnGPU(cfg, x, idx, false)
}

// takeGathers says why a GPU compute would not gather take node n on the device
// (resolveTakes), or "" when it tries: x.Take(idx) of a 1-d int64 or float64 x by 1-d int64
// indices, neither of them plain host data (a take of positions listed on the host, a mask's
// fallback, is gathered where its tasks run). It needs no GPU: the planning tests call it.
func takeGathers(n *expr.Node) string {
	if n.Kind != expr.KTake || len(n.Args) != 2 {
		return "not a take"
	}
	x, idx := n.Args[0], n.Args[1]
	hostData := func(a *expr.Node) bool { return a.Kind == expr.KData && a.Buf == nil }
	switch {
	case len(x.Shape) != 1 || (x.DType != expr.Int64 && x.DType != expr.Float64):
		return fmt.Sprintf("a %v operand of shape %s", x.DType, expr.ShapeString(x.Shape))
	case len(idx.Shape) != 1 || idx.DType != expr.Int64:
		return fmt.Sprintf("%v indices of shape %s", idx.DType, expr.ShapeString(idx.Shape))
	case expr.HasUnknown(x.Shape) || expr.HasUnknown(idx.Shape):
		return "an operand's length is unknown"
	case hostData(x) || hostData(idx):
		return "an operand is in host memory"
	}
	return ""
}

// resolveTakes rebuilds root's graph with each take that a GPU compute gathers on the device
// (takeGathers, gatherOnGPU: operands computed and left there, the indices' range checked
// there, the gather there) replaced by its result, held there (issue 32: a general take read
// its operand and its indices on the host, 3.37 s for a 1e8 take on an H200 against CuPy's
// 5.1 ms). The others are left to the planner; where gatherOnGPU tried and gave up (indices
// out of range), Path says why.
func resolveTakes(cfg computeConfig, root *expr.Node) (*expr.Node, error) {
	g, ok := cfg.sched.(*gpuSched)
	if !ok || g == nil || len(g.devs) == 0 || !takeGather {
		return root, nil
	}
	return rewriteGraph(root, func(n *expr.Node) (*expr.Node, error) {
		// A take takeGathers leaves to the planner gets no note here: the planner's own
		// (a host gather is named and warned) says where it ran.
		if n.Kind != expr.KTake || takeGathers(n) != "" {
			return nil, nil
		}
		r, why, err := gatherOnGPU(cfg, &Array{n: n.Args[0]}, &Array{n: n.Args[1]}, true)
		if err != nil {
			return nil, err
		}
		if why != "" {
			g.libStep("take: gathered where its tasks run (" + why + ")")
			return nil, nil
		}
		g.libStep(r.path)
		return r.n, nil
	})
}

// takeGather lets GPU computes gather takes on the device (resolveTakes): on by default,
// GPUNOTES_GPU_TAKE_GATHER=0 leaves them to the planner (host gathers), to compare.
var takeGather = os.Getenv("GPUNOTES_GPU_TAKE_GATHER") != "0"

// gatherOnGPU is TakeOnGPU for cfg. With asTake (a take of a compute, resolveTakes) the
// indices' smallest and largest values are computed on the device first, and indices outside
// [0, len(x)) (negative ones, or out of bounds: the host path resolves or reports them) leave
// the lazy take; the result keeps the indices' chunks.
func gatherOnGPU(cfg computeConfig, x, idx *Array, asTake bool) (out *Array, why string, err error) {
	lazy := func(why string) (*Array, string, error) { return x.Take(idx), why, nil }
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
	if asTake && ig.grid.shape[0] > 0 {
		dc := cfg
		dc.toHost = true
		ia := &Array{n: nodes[1]}
		r, err := computeArrays(dc, []*Array{ia.Min(), ia.Max()})
		if err != nil {
			return nil, "", fmt.Errorf("take on the GPU: the indices' range: %w", err)
		}
		lo, err := r[0].n.Values()
		if err != nil {
			return nil, "", fmt.Errorf("take on the GPU: the indices' range: %w", err)
		}
		hi, err := r[1].n.Values()
		if err != nil {
			return nil, "", fmt.Errorf("take on the GPU: the indices' range: %w", err)
		}
		if l, h := lo.Int64s()[0], hi.Int64s()[0]; l < 0 || h >= int64(xg.grid.shape[0]) {
			return lazy(fmt.Sprintf("indices in [%d, %d], outside [0, %d)", l, h, xg.grid.shape[0]))
		}
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
	// A take in a compute keeps the chunks of its indices (the lazy take's), as later
	// stages that pair it with other columns of those chunks expect: one gather per index
	// chunk. TakeOnGPU's callers take one piece.
	var ps []compactPiece
	var n int64
	groups := [][2]int{{0, len(ip)}}
	if asTake {
		if slices.Contains(ir, 0) {
			return lazy("an empty index chunk")
		}
		groups = groups[:0]
		for i := range ip {
			groups = append(groups, [2]int{i, i + 1})
		}
	}
	for _, gr := range groups {
		p, k, err := dev.GatherHeld(cfg.ctx, sp, sr, ip[gr[0]:gr[1]], ir[gr[0]:gr[1]])
		if err != nil {
			freePieces(ps)
			return nil, "", fmt.Errorf("take on the GPU: %w", err)
		}
		ps, n = append(ps, compactPiece{dev: dev, ptr: p, count: k}), n+k
	}
	r, err := compactedNode(x.n, false, ps, n)
	if err != nil {
		return nil, "", fmt.Errorf("take on the GPU: %w", err)
	}
	where := fmt.Sprintf("gpu %d", dev.Info.Index)
	return &Array{n: r, path: fmt.Sprintf("take: %d rows gathered on %s from operands held there", n, where)}, "", nil
}
