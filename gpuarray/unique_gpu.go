package gpuarray

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
	"weak"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// The unique family on a GPU (issue 32): its masks mark the first (or the last) element of each
// run of equal values of the sorted array. The lazy mask is a join of a constant and the sorted
// neighbours' comparison, whose chunks are not the sorted values', so the general device
// compaction (maskCompacts) does not take it. A GPU compute instead keeps the sorted values on
// the device, marks the runs' boundaries there (cuda.Device.Bounds, a byte per element) and
// compacts with those marks (cuda.Device.Compact): the unique values, their first positions and
// their runs' ends stay on the GPU, and only the selection's length comes to the host.

// runBounds says that a mask node marks the runs of sorted node s: their first elements, or
// their last ones (last).
type runBounds struct {
	s    *expr.Node
	last bool
}

// boundsOf maps the masks uniqueSorted made to what they mark. Its keys do not keep the masks
// alive; a mask's entry goes when the mask is collected.
var boundsOf = struct {
	sync.Mutex
	m map[weak.Pointer[expr.Node]]runBounds
}{m: map[weak.Pointer[expr.Node]]runBounds{}}

// markRunBounds records that mask node m marks the runs of sorted node s (see runBounds).
func markRunBounds(m, s *expr.Node, last bool) {
	k := weak.Make(m)
	boundsOf.Lock()
	boundsOf.m[k] = runBounds{s: s, last: last}
	boundsOf.Unlock()
	runtime.AddCleanup(m, func(k weak.Pointer[expr.Node]) {
		boundsOf.Lock()
		delete(boundsOf.m, k)
		boundsOf.Unlock()
	}, k)
}

// runBoundsOf returns what mask node m marks, if uniqueSorted made it.
func runBoundsOf(m *expr.Node) (runBounds, bool) {
	boundsOf.Lock()
	defer boundsOf.Unlock()
	b, ok := boundsOf.m[weak.Make(m)]
	return b, ok
}

// uniqueCompacts says why a GPU compute would not select mask node n (x.Mask(m)) with run
// boundaries marked on the device, or "" when it does: m marks the runs of a sorted 1-d array
// in one chunk (uniqueSorted's masks) over x's first axis, x in one chunk along its other
// axes, of a dtype whose values the boundary kernels compare. It needs no GPU: the planning
// tests call it.
func uniqueCompacts(n *expr.Node) string {
	if n.Kind != expr.KMask {
		return "not a mask"
	}
	x, m := n.Args[0], n.Args[1]
	b, ok := runBoundsOf(m)
	switch {
	case !ok:
		return "not a mask of the unique family"
	case expr.HasUnknown(x.Shape) || expr.HasUnknown(b.s.Shape):
		return "an operand's length is unknown"
	case len(b.s.Shape) != 1 || len(b.s.Chunks[0]) != 1:
		return "the sorted values are not in one chunk"
	case len(x.Shape) == 0 || x.Shape[0] != b.s.Shape[0]:
		return "the mask is not over the array's first axis (internal)"
	case cuda.BoundsClass(b.s.DType, narrowStore && cuda.Narrow(b.s.DType)) == "":
		return fmt.Sprintf("runs of %v values are marked on the host", b.s.DType)
	}
	for ax := 1; ax < len(x.Shape); ax++ {
		if len(x.Chunks[ax]) != 1 {
			return fmt.Sprintf("the array has %d chunks along axis %d", len(x.Chunks[ax]), ax)
		}
	}
	return ""
}

// uniqueMaskedOnDevice selects mask node n of the unique family on the device (see
// uniqueCompacts): it computes the sorted values and x on the GPUs, left there, marks the
// runs' boundaries beside the sorted values and compacts x's chunks with them. ok is false,
// with no error, when it did not select n (the caller goes on as for any mask).
func uniqueMaskedOnDevice(cfg computeConfig, g *gpuSched, n *expr.Node) (r *expr.Node, ok bool, err error) {
	if uniqueCompacts(n) != "" {
		return nil, false, nil
	}
	x := n.Args[0]
	b, _ := runBoundsOf(n.Args[1])
	held := func(a *expr.Node) *gpuChunks {
		gc, _ := a.Buf.(*gpuChunks)
		return gc
	}
	var todo []*Array
	for _, a := range []*expr.Node{b.s, x} {
		if held(a) == nil && !slices.ContainsFunc(todo, func(t *Array) bool { return t.n == a }) {
			todo = append(todo, &Array{n: a})
		}
	}
	got := map[*expr.Node]*expr.Node{x: x, b.s: b.s}
	var mine []*gpuChunks // results of this compute, freed once compacted
	defer func() {
		for _, gc := range mine {
			gc.release()
		}
	}()
	inputs := heldBelow(b.s, x)
	if len(todo) > 0 {
		dc := cfg
		dc.toHost = false
		out, err := computeArrays(dc, todo)
		if err != nil {
			return nil, true, fmt.Errorf("unique: %w", err)
		}
		for i, a := range todo {
			got[a.n] = out[i].n
			if gc := held(out[i].n); gc != nil && !inputs[gc] {
				mine = append(mine, gc)
			}
		}
	}
	sg, xg := held(got[b.s]), held(got[x])
	why := ""
	switch {
	case sg == nil || xg == nil:
		why = "an operand is in host memory"
	case len(sg.ptrs) != 1:
		why = "the sorted values are in several chunks"
	case len(xg.ptrs) != len(xg.grid.chunks[0]):
		why = "the array is in several chunks along an axis other than its first"
	case cuda.BoundsClass(b.s.DType, sg.narrow) == "":
		why = fmt.Sprintf("runs of %v values are marked on the host", b.s.DType)
	default:
		for _, d := range xg.devs {
			if d != sg.devs[0] {
				why = "the sorted values and the array are on different GPUs"
			}
		}
	}
	if why != "" {
		g.libStep("unique: not selected on the device (" + why + ")")
		return nil, false, nil
	}
	if !sg.pin() {
		return nil, true, fmt.Errorf("unique: the sorted values held on the GPU were released")
	}
	defer sg.unpin()
	if xg != sg {
		if !xg.pin() {
			return nil, true, fmt.Errorf("unique: an operand held on the GPU was released")
		}
		defer xg.unpin()
	}
	t0 := time.Now()
	d := sg.devs[0]
	marks, err := d.Bounds(cfg.ctx, sg.ptr(0), cuda.BoundsClass(b.s.DType, sg.narrow), int64(b.s.Shape[0]), b.last)
	if err != nil {
		return nil, true, fmt.Errorf("unique: %w", err)
	}
	defer freeOn(d, []driver.DevicePtr{marks})
	row := expr.Size(x.Shape[1:])
	elem := int64(8 * cuda.Words(x.DType))
	if xg.narrow {
		elem = int64(x.DType.Size())
	}
	pieces := make([]compactPiece, 0, len(xg.ptrs))
	var total int64
	for i, rows := range xg.grid.chunks[0] {
		at := driver.DevicePtr(xg.grid.bounds[0][i]) // a byte of marks per row
		p, c, err := d.Compact(cfg.ctx, marks+at, 1, xg.ptr(i), elem, row, int64(rows))
		if err != nil {
			freePieces(pieces)
			return nil, true, fmt.Errorf("unique: %w", err)
		}
		pieces = append(pieces, compactPiece{dev: d, ptr: p, count: c})
		total += c
	}
	what := "first"
	if b.last {
		what = "last"
	}
	g.libStep(fmt.Sprintf("unique: %d runs' %s elements of %d selected on the device (run boundaries marked there, a device scan; only the selection's length came to the host) in %.3g s", total, what, b.s.Shape[0], time.Since(t0).Seconds()))
	r, err = compactedNode(x, xg.narrow, pieces, total)
	if err != nil {
		return nil, true, fmt.Errorf("unique: %w", err)
	}
	return r, true, nil
}

// heldBelow returns the arrays held on GPUs that the graphs of nodes read: a compute's result
// that is one of them (a view the planner resolved to the held array itself) is not the
// compute's own, and must not be released with its intermediates.
func heldBelow(nodes ...*expr.Node) map[*gpuChunks]bool {
	out := map[*gpuChunks]bool{}
	seen := map[*expr.Node]bool{}
	var walk func(n *expr.Node)
	walk = func(n *expr.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if gc, ok := n.Buf.(*gpuChunks); ok {
			out[gc] = true
		}
		for _, a := range n.Args {
			walk(a)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return out
}
