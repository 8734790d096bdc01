package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// HeldJoinKeys is what JoinOnGPU joins: the key columns of the build and probe sides (1-d
// int32 or int64 arrays, categorical codes among them, of one length per side, as many on
// both), each looked up, when its entry of BuildTables or ProbeTables is not nil, in that
// table (a categorical's codes in a dictionary of both sides), joined with Mode. Parts > 0
// orders the output by the probe rows' hash partitions into Parts (those of
// dataframe/hashjoin.Partition over the codes), a piece per partition; otherwise it comes in
// probe row order, a piece per entry of Split (probe rows). BuildRows asks for an anti join's
// build rows (all -1).
type HeldJoinKeys struct {
	Build, Probe             []*Array
	BuildTables, ProbeTables [][]int64
	Mode                     JoinMode
	Parts                    int
	Split                    []int
	BuildRows                bool
}

// HeldJoinRows is JoinOnGPU's output: the probe and build rows of the output (int32, -1 for
// no row) held on the GPU, a chunk per non-empty piece (Build nil for semi joins, and for
// anti joins unless asked), Lens the rows of every piece, Where the GPU, and HostNote, when
// not "", a step that ran on the host (JoinPairs').
type HeldJoinRows struct {
	Probe, Build *Array
	Lens         []int
	Where        string
	HostNote     string
}

// heldOnOneGPU computes xs (1-d arrays) onto the GPUs of g with cfg, leaving them there, and
// returns their held nodes, the one GPU that holds them all and each one's element bytes;
// why, when not "", says why they cannot be read there (in host memory, on several GPUs, held
// in elements of neither 4 nor 8 bytes).
func heldOnOneGPU(cfg computeConfig, g *gpuSched, xs []*Array) (nodes []*expr.Node, dev *cuda.Device, units []int, why string, err error) {
	for _, x := range xs {
		if err := x.Err(); err != nil {
			return nil, nil, nil, "", err
		}
		if len(x.n.Shape) != 1 {
			return nil, nil, nil, fmt.Sprintf("an operand of shape %v", x.n.Shape), nil
		}
	}
	held := func(n *expr.Node) *gpuChunks {
		gc, _ := n.Buf.(*gpuChunks)
		return gc
	}
	nodes = make([]*expr.Node, len(xs))
	var todo []*Array
	var at []int
	for i, x := range xs {
		nodes[i] = x.n
		if held(x.n) == nil {
			todo, at = append(todo, x), append(at, i)
		}
	}
	if len(todo) > 0 {
		dc := cfg
		dc.toHost = false
		got, err := computeArrays(dc, todo)
		if err != nil {
			return nil, nil, nil, "", err
		}
		for j, a := range got {
			nodes[at[j]] = a.n
		}
	}
	units = make([]int, len(xs))
	for i, n := range nodes {
		gc := held(n)
		if gc == nil {
			return nil, nil, nil, "an operand is in host memory", nil
		}
		for _, d := range gc.devs {
			if dev == nil {
				dev = d
			}
			if d != dev {
				return nil, nil, nil, "the operands are on several GPUs", nil
			}
		}
		units[i] = 8 * cuda.Words(gc.dt)
		if gc.narrow {
			units[i] = gc.dt.Size()
		}
		if units[i] != 4 && units[i] != 8 {
			return nil, nil, nil, fmt.Sprintf("a %v operand held in elements of %d bytes", gc.dt, units[i]), nil
		}
	}
	if dev == nil {
		dev = g.devs[0]
	}
	return nodes, dev, units, "", nil
}

// JoinOnGPU is plumbing for package dataframe's Merge on a GPU with its keys held there: the
// key columns of k, computed with opts onto one GPU (OnGPU) and left there, are joined there
// (the key codes encoded from the held columns, HashJoin's table and probe, the output's
// int32 rows written there, cuda.Device.JoinHeld), and the output's rows stay there for
// TakeRowsAtOnGPU: neither the keys nor the pairs cross PCIe, only counts do. The pairs are
// HashJoin's, in its order (probe rows in order, each one's build rows in order) or in that of
// k.Parts' partitions. why, when not "", says why nothing was joined (not a GPU compute, a
// key that is not an int32 or int64 column held on the one GPU): the caller joins otherwise.
func JoinOnGPU(k HeldJoinKeys, opts ...ComputeOption) (res *HeldJoinRows, why string, err error) {
	if k.Mode < JoinInner || k.Mode > JoinAnti {
		return nil, "", fmt.Errorf("JoinOnGPU: mode %d", k.Mode)
	}
	if len(k.Build) == 0 || len(k.Build) != len(k.Probe) {
		return nil, "", fmt.Errorf("JoinOnGPU: %d build key columns, %d probe", len(k.Build), len(k.Probe))
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, "", err
	}
	g, ok := cfg.sched.(*gpuSched)
	if !ok || g == nil || len(g.devs) == 0 {
		return nil, "not a GPU compute", nil
	}
	xs := append(append([]*Array{}, k.Build...), k.Probe...)
	for _, x := range xs {
		if dt := x.DType(); dt != dtype.Int32 && dt != dtype.Int64 {
			return nil, fmt.Sprintf("a %v key (int32 and int64 keys are encoded on the GPU)", dt), nil
		}
	}
	nodes, dev, units, why, err := heldOnOneGPU(cfg, g, xs)
	if err != nil || why != "" {
		if err != nil {
			err = fmt.Errorf("JoinOnGPU: %w", err)
		}
		return nil, why, err
	}
	spec := &cuda.HeldJoinSpec{Mode: cuda.JoinMode(k.Mode), Parts: k.Parts, BuildRows: k.BuildRows}
	for _, s := range k.Split {
		spec.Split = append(spec.Split, int64(s))
	}
	var pinned []*gpuChunks
	defer func() {
		for _, gc := range pinned {
			gc.unpin()
		}
	}()
	for i, n := range nodes {
		gc := n.Buf.(*gpuChunks)
		if !gc.pin() {
			return nil, "", fmt.Errorf("JoinOnGPU: key %d was released", i)
		}
		pinned = append(pinned, gc)
		hk := cuda.HeldKey{Unit: units[i]}
		for c, r := range gc.grid.chunks[0] {
			hk.Pieces, hk.Rows = append(hk.Pieces, gc.ptr(c)), append(hk.Rows, int64(r))
		}
		if i < len(k.Build) {
			if i < len(k.BuildTables) {
				hk.Table = k.BuildTables[i]
			}
			spec.Build = append(spec.Build, hk)
		} else {
			if j := i - len(k.Build); j < len(k.ProbeTables) {
				hk.Table = k.ProbeTables[j]
			}
			spec.Probe = append(spec.Probe, hk)
		}
	}
	hj, err := dev.JoinHeld(cfg.ctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("JoinOnGPU: %w", err)
	}
	var total int64
	lens := make([]int, len(hj.Rows))
	for i, r := range hj.Rows {
		total += r
		lens[i] = int(r)
	}
	wrap := func(ps []driver.DevicePtr) ([]compactPiece, bool) {
		if ps == nil {
			return nil, false
		}
		out := make([]compactPiece, len(ps))
		for i, p := range ps {
			out[i] = compactPiece{dev: dev, ptr: p, count: hj.Rows[i]}
		}
		return out, true
	}
	proto, err := expr.NewData(dtype.Make(dtype.Int32, 0), []int{0}, [][]int{{0}})
	if err != nil {
		return nil, "", err
	}
	where := fmt.Sprintf("gpu %d", dev.Info.Index)
	res = &HeldJoinRows{Lens: lens, Where: where}
	pp, _ := wrap(hj.Probe)
	bp, withBuild := wrap(hj.Build)
	pn, err := compactedNode(proto, true, pp, total)
	if err != nil {
		freePieces(bp)
		return nil, "", fmt.Errorf("JoinOnGPU: %w", err)
	}
	res.Probe = &Array{n: pn, path: fmt.Sprintf("join rows: %d probe rows joined on %s from keys held there", total, where)}
	if withBuild {
		bn, err := compactedNode(proto, true, bp, total)
		if err != nil {
			return nil, "", fmt.Errorf("JoinOnGPU: %w", err)
		}
		res.Build = &Array{n: bn, path: fmt.Sprintf("join rows: %d build rows joined on %s from keys held there", total, where)}
	}
	if hj.HostOrdered > 0 {
		res.HostNote = fmt.Sprintf("build rows laid out in key order on the host (a key on %d rows, more than the %d the device orders)", hj.HostOrdered, cuda.MaxJoinRun)
	}
	return res, "", nil
}

// TakeRowsAtOnGPU is TakeRowsOnGPU at rows held on the GPU (JoinOnGPU's, int32 with -1 for no
// row, in range of every array of xs): each array, computed with opts and left on the GPU
// that holds the rows, is gathered there into a new array held there with the rows' chunks,
// zero where the row is -1. Nothing crosses PCIe. why, when not "", says why nothing was
// gathered (as TakeRowsOnGPU's, or rows not held on the GPU as int32).
func TakeRowsAtOnGPU(xs []*Array, rows *Array, opts ...ComputeOption) (out []*Array, why string, err error) {
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, "", err
	}
	g, ok := cfg.sched.(*gpuSched)
	if !ok || g == nil || len(g.devs) == 0 {
		return nil, "not a GPU compute", nil
	}
	if rows.DType() != dtype.Int32 || len(rows.n.Shape) != 1 {
		return nil, fmt.Sprintf("rows of %v and shape %v", rows.DType(), rows.n.Shape), nil
	}
	total := rows.n.Shape[0]
	if total == 0 {
		out = make([]*Array, len(xs))
		for i, x := range xs {
			r, err := compactedNode(x.n, false, nil, 0)
			if err != nil {
				return nil, "", fmt.Errorf("take rows on the GPU: %w", err)
			}
			out[i] = &Array{n: r, path: "take rows: no rows"}
		}
		return out, "", nil
	}
	ri, ok := rows.n.Buf.(*gpuChunks)
	if !ok || !ri.narrow {
		return nil, "rows not held on the GPU as int32", nil
	}
	nodes, dev, units, why, err := heldOnOneGPU(cfg, g, xs)
	if err != nil || why != "" {
		if err != nil {
			err = fmt.Errorf("take rows on the GPU: %w", err)
		}
		return nil, why, err
	}
	if len(ri.devs) == 0 || ri.devs[0] != dev {
		return nil, "the rows and the operands are on different GPUs", nil
	}
	if !ri.pin() {
		return nil, "", fmt.Errorf("take rows on the GPU: the rows were released")
	}
	defer ri.unpin()
	var idx []driver.DevicePtr
	var idxRows []int64
	for c, r := range ri.grid.chunks[0] {
		idx, idxRows = append(idx, ri.ptr(c)), append(idxRows, int64(r))
	}
	where := fmt.Sprintf("gpu %d", dev.Info.Index)
	out = make([]*Array, len(xs))
	for i, n := range nodes {
		gc := n.Buf.(*gpuChunks)
		if !gc.pin() {
			return nil, "", fmt.Errorf("take rows on the GPU: operand %d was released", i)
		}
		var srcs []driver.DevicePtr
		var srcRows []int64
		for c, r := range gc.grid.chunks[0] {
			srcs, srcRows = append(srcs, gc.ptr(c)), append(srcRows, int64(r))
		}
		ps, err := dev.GatherRows(cfg.ctx, srcs, srcRows, units[i], idx, idxRows)
		gc.unpin()
		if err != nil {
			return nil, "", fmt.Errorf("take rows on the GPU: %w", err)
		}
		pieces := make([]compactPiece, len(ps))
		for p, ptr := range ps {
			pieces[p] = compactPiece{dev: dev, ptr: ptr, count: idxRows[p]}
		}
		r, err := compactedNode(n, gc.narrow, pieces, int64(total))
		if err != nil {
			return nil, "", fmt.Errorf("take rows on the GPU: %w", err)
		}
		out[i] = &Array{n: r, path: fmt.Sprintf("take rows: %d rows gathered on %s at rows held there", total, where)}
	}
	return out, "", nil
}
