package gpuarray

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Boolean masks on a GPU (issue 32): a mask's selection is compacted on the device where the
// mask and the masked values are held (cuda.Device.Compact: a count per segment, a device scan
// of the counts, a copy of the selected rows), so that Nonzero, Argwhere and a.Mask(m) leave
// their results on the GPU and only the selection's length comes to the host.

// maskCompacts says why a GPU compute would not compact mask node n (x.Mask(m)) on the
// device, or "" when it does: a 1-d boolean mask over x's first axis whose chunks are x's,
// with x in one chunk along its other axes, so that each chunk of the mask selects the rows of
// one chunk of x. It needs no GPU: the planning tests call it.
func maskCompacts(n *expr.Node) string {
	if n.Kind != expr.KMask {
		return "not a mask"
	}
	x, m := n.Args[0], n.Args[1]
	switch {
	case m.DType != dtype.Bool:
		return fmt.Sprintf("a mask of %v values is listed on the host", m.DType)
	case len(m.Shape) != 1:
		return "a mask over several axes is listed on the host"
	case expr.HasUnknown(x.Shape) || expr.HasUnknown(m.Shape):
		return "an operand's length is unknown"
	case len(x.Shape) == 0 || x.Shape[0] != m.Shape[0]:
		return "the mask is not over the array's first axis (internal)"
	case !slices.Equal(x.Chunks[0], m.Chunks[0]):
		return fmt.Sprintf("the mask's chunks %v are not the array's %v along its first axis", m.Chunks[0], x.Chunks[0])
	}
	for ax := 1; ax < len(x.Shape); ax++ {
		if len(x.Chunks[ax]) != 1 {
			return fmt.Sprintf("the array has %d chunks along axis %d", len(x.Chunks[ax]), ax)
		}
	}
	return ""
}

// maskCompact lets a GPU compute compact masks on the device: on by default,
// GPUNOTES_GPU_MASK_COMPACT=0 lists the positions on the host as before (maskCompactFrom). The
// stall bench/RESULTS.md described (a selection of a 20000² array never finishing) was the
// flattened mask's own stage assembled in host memory and uploaded again, which runKeptStage
// now keeps on the device; the gpuarray and dataframe GPU tests passed with it on (issue 32,
// bench/RESULTS.md).
var maskCompact = maskCompactFrom(os.Getenv("GPUNOTES_GPU_MASK_COMPACT"))

// maskCompactFrom is maskCompact's value for the variable's value v: off only for "0".
func maskCompactFrom(v string) bool { return v != "0" }

// takeMaskedOnDevice computes mask node n's operands on the GPUs, left there, and compacts its
// selection on the device (maskCompacts). It returns the selection as a node held on the GPUs;
// or nil and the mask's values when it computed them but could not compact on the device (the
// caller lists the positions on the host); or nil and no values when it did not try.
func takeMaskedOnDevice(cfg computeConfig, n *expr.Node) (*expr.Node, dtype.Slice, error) {
	g, ok := cfg.sched.(*gpuSched)
	if !ok || g == nil || len(g.devs) == 0 || !maskCompact {
		return nil, dtype.Slice{}, nil
	}
	if r, ok, err := uniqueMaskedOnDevice(cfg, g, n); ok || err != nil {
		return r, dtype.Slice{}, err
	}
	if maskCompacts(n) != "" {
		return nil, dtype.Slice{}, nil
	}
	x, m := n.Args[0], n.Args[1]
	held := func(a *expr.Node) *gpuChunks {
		gc, _ := a.Buf.(*gpuChunks)
		return gc
	}
	// Compute the operands not held on a GPU already, in one pass, their results left there.
	var todo []*Array
	for _, a := range []*expr.Node{x, m} {
		if held(a) == nil {
			todo = append(todo, &Array{n: a})
		}
	}
	got := map[*expr.Node]*expr.Node{x: x, m: m}
	var mine []*gpuChunks // results of this compute, freed once compacted
	inputs := heldBelow(x, m)
	if len(todo) > 0 {
		dc := cfg
		dc.toHost = false
		out, err := computeArrays(dc, todo)
		if err != nil {
			return nil, dtype.Slice{}, err
		}
		for i, a := range todo {
			got[a.n] = out[i].n
			if gc := held(out[i].n); gc != nil && !inputs[gc] {
				mine = append(mine, gc)
			}
		}
	}
	defer func() {
		for _, gc := range mine {
			gc.release()
		}
	}()
	xg, mg := held(got[x]), held(got[m])
	why := ""
	switch {
	case xg == nil || mg == nil:
		why = "an operand is in host memory"
	case !slices.Equal(xg.grid.chunks[0], mg.grid.chunks[0]) || len(xg.ptrs) != len(xg.grid.chunks[0]) || len(mg.ptrs) != len(mg.grid.chunks[0]):
		why = "the operands' chunks differ"
	default:
		for i := range xg.devs {
			if xg.devs[i] != mg.devs[i] {
				why = "the mask and the array are on different GPUs"
			}
		}
	}
	if why != "" {
		g.libStep("mask: not compacted on the device (" + why + ")")
		mv, err := got[m].Values()
		if err != nil {
			return nil, dtype.Slice{}, err
		}
		return nil, mv, nil
	}
	if !xg.pin() || !mg.pin() {
		return nil, dtype.Slice{}, fmt.Errorf("mask: an operand held on the GPU was released")
	}
	defer xg.unpin()
	defer mg.unpin()
	t0 := time.Now()
	row := expr.Size(x.Shape[1:])
	elem := int64(8 * cuda.Words(x.DType))
	if xg.narrow {
		elem = int64(x.DType.Size())
	}
	maskBytes := 8
	if mg.narrow {
		maskBytes = 1
	}
	pieces := make([]compactPiece, 0, len(xg.ptrs))
	var total int64
	fail := func(err error) (*expr.Node, dtype.Slice, error) {
		freePieces(pieces)
		return nil, dtype.Slice{}, fmt.Errorf("mask: %w", err)
	}
	for i, rows := range xg.grid.chunks[0] {
		d := xg.devs[i]
		p, c, err := d.Compact(cfg.ctx, mg.ptr(i), maskBytes, xg.ptr(i), elem, row, int64(rows))
		if err != nil {
			return fail(err)
		}
		pieces = append(pieces, compactPiece{dev: d, ptr: p, count: c})
		total += c
	}
	g.libStep(fmt.Sprintf("mask: %d of %d positions selected on the device (a device scan; only the selection's length came to the host) in %.3g s", total, m.Shape[0], time.Since(t0).Seconds()))
	r, err := compactedNode(x, xg.narrow, pieces, total)
	if err != nil {
		return nil, dtype.Slice{}, fmt.Errorf("mask: %w", err)
	}
	return r, dtype.Slice{}, nil
}

// compactPiece is the selection of one chunk compacted on the device: count rows at ptr
// (0 when none), owned by dev's pool.
type compactPiece struct {
	dev   *cuda.Device
	ptr   driver.DevicePtr
	count int64
}

// freePieces gives the pieces' allocations back to their pools.
func freePieces(pieces []compactPiece) {
	for _, p := range pieces {
		if p.ptr != 0 {
			freeOn(p.dev, []driver.DevicePtr{p.ptr})
		}
	}
}

// compactedNode returns the selection of x's rows compacted on the device in pieces (total
// rows in all, in order) as a node held on the GPUs that owns the pieces' allocations, a chunk
// per piece that selected anything; an empty array when none did. On error it has freed them.
func compactedNode(x *expr.Node, narrow bool, pieces []compactPiece, total int64) (*expr.Node, error) {
	fail := func(err error) (*expr.Node, error) {
		freePieces(pieces)
		return nil, err
	}
	shape := append([]int{int(total)}, x.Shape[1:]...)
	var chunks0 []int
	for _, p := range pieces {
		if p.count > 0 {
			chunks0 = append(chunks0, int(p.count))
		}
	}
	chunks := [][]int{chunks0}
	for _, s := range x.Shape[1:] {
		chunks = append(chunks, []int{s})
	}
	if total == 0 {
		chunks[0] = []int{0}
		r, err := expr.NewData(dtype.Make(x.DType, 0), shape, chunks)
		if err != nil {
			return fail(err)
		}
		return r, nil
	}
	gc := &gpuChunks{grid: newChunkGrid(shape, chunks), dt: x.DType, narrow: narrow, label: "on"}
	gc.idle.L = &gc.mu
	byDev := map[*cuda.Device]int{}
	at := 0
	for _, p := range pieces {
		if p.count == 0 {
			continue
		}
		off := make([]int, len(shape))
		off[0] = at
		at += int(p.count)
		gc.ptrs, gc.devs, gc.offs = append(gc.ptrs, p.ptr), append(gc.devs, p.dev), append(gc.offs, off)
		k, ok := byDev[p.dev]
		if !ok {
			k = len(gc.allocs)
			byDev[p.dev] = k
			gc.allocs = append(gc.allocs, devAllocs{dev: p.dev})
		}
		gc.allocs[k].ptrs = append(gc.allocs[k].ptrs, p.ptr)
	}
	gc.addCleanup()
	r, err := expr.NewBuffered(gc, shape, chunks)
	if err != nil {
		gc.freeNow()
		return nil, err
	}
	r.DType = x.DType
	return r, nil
}

// selectionHeld returns the result of a Compute on a GPU whose root, given, resolved to a
// selection compacted on the device (root: takeMaskedOnDevice's node): root itself, left on the
// GPUs with the scheduler's path; nil otherwise (a held array the caller copies to the host).
func selectionHeld(cfg computeConfig, given, root *expr.Node) *Array {
	g, ok := cfg.sched.(*gpuSched)
	if !ok || cfg.toHost || root == given {
		return nil
	}
	gc, ok := root.Buf.(*gpuChunks)
	if !ok {
		return nil
	}
	return &Array{n: root, path: g.path() + "; result kept on " + gc.Where()}
}
