package plan

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Takes (expr.KTake, expr.KTakeAlong) read their operand at positions an integer array gives,
// which no affine map expresses; searches (expr.KSearch) read a sorted array at positions a
// binary search finds. Order computes the operands first; the kernel then reads the take's or
// search's result as an ordinary Input whose source is its own shape. Each task's block of it
// is either gathered on the host when the task is made (as cutBlock copies the box of any
// input), so cluster workers see ordinary blocks, or, with Options.LateGather, left as a
// Gather for the executor: a GPU gathers takes on the device before the fused kernel reads
// the block, the CPU executor gathers in LoadInputs inside the task.

// Gather says how a take's result is read from its operand: element p of the result (shape
// Shape) is Src at p with p[Axis] replaced by Idx[p[Axis]], or, for Along, by Idx at p
// (Idx then has the result's shape). For a search (Search 1: before equal values, 2: after)
// element p is instead where Keys at p goes in the ascending 1-d Src (NaN last). The tasks
// of a stage share one Gather.
type Gather struct {
	Src      dtype.Slice // the operand's values, row-major
	SrcShape []int
	Shape    []int   // the take's result
	Axis     int     // the indexed axis
	Along    bool    // KTakeAlong
	Idx      []int64 // indices, checked in range (negative ones resolved)
	Search   int     // KSearch: 1 left, 2 right
	Keys     dtype.Slice

	once       sync.Once
	sorted     []float64 // a search's Src as float64, made once
	keys       []float64
	sortedNaNs int // NaNs at the end of sorted
}

// takeInput adds the input leaf of take node n read through map m.
func (l *lowerer) takeInput(n *expr.Node, m []expr.AxisMap) (int, error) {
	x := n.Args[0]
	if n.Kind == expr.KTake && x.Kind == expr.KFile {
		return l.fileTake(n, m)
	}
	xv, err := l.valuesOf(x)
	if err != nil {
		return 0, err
	}
	idx, err := l.takeIndices(n)
	if err != nil {
		return 0, err
	}
	ax := n.Axes[0]
	slot := len(l.inputs)
	l.inputs = append(l.inputs, inputLeaf{data: xv, shape: n.Shape, m: m,
		gather: &Gather{Src: xv, SrcShape: x.Shape, Shape: n.Shape, Along: n.Kind == expr.KTakeAlong, Axis: ax, Idx: idx}})
	return l.add(Instr{Code: Input, DType: n.DType, Slot: slot, Src: append([]int(nil), n.Shape...), Map: m}), nil
}

// takeIndices returns the indices of take n (Args[1]), checked against the operand's axis,
// negative ones counted from its end.
func (l *lowerer) takeIndices(n *expr.Node) ([]int64, error) {
	iv, err := l.valuesOf(n.Args[1])
	if err != nil {
		return nil, err
	}
	ax := n.Axes[0]
	size := n.Args[0].Shape[ax]
	idx := make([]int64, iv.Len())
	for i := range idx {
		f := iv.Float(i)
		v := int64(f)
		if float64(v) != f {
			return nil, fmt.Errorf("plan: index %v at position %d is not an integer", f, i)
		}
		if v < 0 {
			v += int64(size)
		}
		if v < 0 || v >= int64(size) {
			return nil, fmt.Errorf("plan: index %v is out of bounds for axis %d with size %d", f, ax, size)
		}
		idx[i] = v
	}
	return idx, nil
}

// valuesOf returns the values of a node computed by an earlier stage, or of data.
func (l *lowerer) valuesOf(n *expr.Node) (dtype.Slice, error) {
	if v, ok := l.done[n]; ok {
		return v, nil
	}
	if n.Kind != expr.KData {
		return dtype.Slice{}, fmt.Errorf("plan: an operand of shape %s of an indexing operation was not computed before its use", expr.ShapeString(n.Shape))
	}
	return n.Values()
}

// gatherBlock is the block of a take's or search's result that a region reads, left for the
// executor to gather (Block.Gather).
func gatherBlock(in inputLeaf, off, shp []int) Block {
	origin, shape := box(in, off, shp)
	return Block{Origin: origin, Shape: shape, Gather: in.gather}
}

// cutGather gathers the box of a take's result that a region reads.
func cutGather(in inputLeaf, off, shp []int) Block {
	origin, shape := box(in, off, shp)
	return Block{Origin: origin, Shape: shape, Data: in.gather.Box(origin, shape)}
}

// searchInput adds the input leaf of search node n read through map m.
func (l *lowerer) searchInput(n *expr.Node, m []expr.AxisMap) (int, error) {
	sv, err := l.valuesOf(n.Args[0])
	if err != nil {
		return 0, err
	}
	kv, err := l.valuesOf(n.Args[1])
	if err != nil {
		return 0, err
	}
	slot := len(l.inputs)
	l.inputs = append(l.inputs, inputLeaf{data: sv, shape: n.Shape, m: m,
		gather: &Gather{Src: sv, SrcShape: n.Args[0].Shape, Shape: n.Shape, Search: 1 + n.Axes[0], Keys: kv}})
	return l.add(Instr{Code: Input, DType: n.DType, Slot: slot, Src: append([]int(nil), n.Shape...), Map: m}), nil
}

// Box gathers the values of the box of the take's result at origin with shape, row-major
// (for a search: the positions).
func (g *Gather) Box(origin, shape []int) dtype.Slice {
	if g.Search != 0 {
		return g.searchBox(origin, shape)
	}
	n := expr.Size(shape)
	out := dtype.Make(g.Src.DType(), int(n))
	if n == 0 {
		return out
	}
	r := len(shape)
	srcStrides := rowStrides(g.SrcShape)
	outStrides := rowStrides(g.Shape)
	// Positions first, then one typed copy: a per-element Copy costs more than the gather.
	pos := make([]int, r)
	at := make([]int, n)
	for o := range at {
		s, flat := 0, 0
		if g.Along {
			for d := 0; d < r; d++ {
				flat += (origin[d] + pos[d]) * outStrides[d]
			}
		}
		for d := 0; d < r; d++ {
			p := origin[d] + pos[d]
			if d == g.Axis {
				if g.Along {
					p = int(g.Idx[flat])
				} else {
					p = int(g.Idx[p])
				}
			}
			s += p * srcStrides[d]
		}
		at[o] = s
		for d := r - 1; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	dtype.Gather(out, g.Src, at)
	return out
}

// searchBox finds the positions of the keys in the box at origin with shape: a binary search
// each, in float64 (exact for integers up to 2^53), with NaN after every number.
func (g *Gather) searchBox(origin, shape []int) dtype.Slice {
	g.once.Do(func() {
		g.sorted, g.keys = g.Src.ToFloat64(), g.Keys.ToFloat64()
		for g.sortedNaNs < len(g.sorted) && math.IsNaN(g.sorted[len(g.sorted)-1-g.sortedNaNs]) {
			g.sortedNaNs++
		}
	})
	n := expr.Size(shape)
	out := make([]int64, n)
	r := len(shape)
	strides := rowStrides(g.Shape)
	pos := make([]int, r)
	nums := g.sorted[:len(g.sorted)-g.sortedNaNs] // NaNs sort last
	right := g.Search == 2
	for o := range out {
		flat := 0
		for d := 0; d < r; d++ {
			flat += (origin[d] + pos[d]) * strides[d]
		}
		v := g.keys[flat]
		switch {
		case math.IsNaN(v) && right:
			out[o] = int64(len(g.sorted))
		case math.IsNaN(v):
			out[o] = int64(len(nums))
		case right:
			out[o] = int64(sort.Search(len(nums), func(i int) bool { return nums[i] > v }))
		default:
			out[o] = int64(sort.Search(len(nums), func(i int) bool { return nums[i] >= v }))
		}
		for d := r - 1; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	return dtype.OfInt64(out)
}
