package plan

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Takes (expr.KTake, expr.KTakeAlong) read their operand at positions an integer array gives,
// which no affine map expresses. Order computes the operands first; the kernel then reads the
// take's result as an ordinary Input whose source is its own shape. Each task's block of it
// is either gathered on the host when the task is made (as cutBlock copies the box of any
// input), so cluster workers see ordinary blocks, or, with Options.LateGather, left as a
// Gather for the executor: a GPU gathers takes on the device before the fused kernel reads
// the block, the CPU executor gathers in LoadInputs inside the task.
//
// Searches (expr.KSearch) are an instruction of the fused kernel (Search): the values searched
// for are fused like any operand, the sorted array is computed first and every task reads it
// whole (inputLeaf.whole), in place where a device or a keeper holds it.

// Gather says how a take's result is read from its operand: element p of the result (shape
// Shape) is Src at p with p[Axis] replaced by Idx[p[Axis]], or, for Along, by Idx at p
// (Idx then has the result's shape). The tasks of a stage share one Gather.
type Gather struct {
	Src      dtype.Slice // the operand's values, row-major
	SrcShape []int
	Shape    []int   // the take's result
	Axis     int     // the indexed axis
	Along    bool    // KTakeAlong
	Idx      []int64 // indices, checked in range (negative ones resolved)
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
	if d, ok := l.kept[n]; ok {
		n = d // held on a device: its host copy
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

// search adds search node n read through map m: the values searched for (n.Args[1]) are
// fused and cast to the dtype the comparisons use (SearchDType); the sorted array (n.Args[0]:
// computed by an earlier stage, or data, perhaps held on a device) is an input that every task
// reads whole.
func (l *lowerer) search(n *expr.Node, m []expr.AxisMap) (int, error) {
	x := n.Args[0]
	in := inputLeaf{shape: x.Shape, whole: true}
	if x.Kind == expr.KData && x.Buf != nil && l.held {
		in.held = x
	} else {
		sv, err := l.valuesOf(x)
		if err != nil {
			return 0, err
		}
		in.data = sv
	}
	slot := len(l.inputs)
	l.inputs = append(l.inputs, in)
	key, err := l.emit(n.Args[1], m)
	if err != nil {
		return 0, err
	}
	if cmp := SearchDType(x.DType, n.Args[1].DType); l.k.Instrs[key].DType != cmp {
		key = l.add(Instr{Code: Cast, DType: cmp, Args: []int{key}})
	}
	return l.add(Instr{Code: Search, DType: n.DType, Args: []int{key}, Slot: slot, Sorted: x.DType, Right: n.Axes[0] == 1}), nil
}

// SearchDType returns the dtype in which a search of values of dtype v in a sorted array of
// dtype sorted compares them (numpy.searchsorted compares in their common dtype): int64 or
// uint64 where that is an integer dtype (exact, past 2^53 too), float64 otherwise (float32
// values widen exactly). The planner casts the values to it; the sorted array is converted
// as it is read.
func SearchDType(sorted, v dtype.DType) dtype.DType {
	switch p := dtype.Promote(sorted, v); {
	case p == dtype.Uint64:
		return dtype.Uint64
	case p.IsInteger():
		return dtype.Int64
	}
	return dtype.Float64
}

// wholeBlock is the block of an input that every task reads whole (a search's sorted array):
// its values, shared by the tasks, or where a device or a keeper holds them when one chunk
// holds them all. onHost says that a held array was read into host memory instead.
func wholeBlock(in *inputLeaf, k *Kernel, opt Options) (b Block, onHost bool, err error) {
	r := len(in.shape)
	origin, shape := make([]int, r), slices.Clone(in.shape)
	if in.held != nil {
		if expr.Size(shape) > 0 && opt.Held != nil {
			hi := make([]int, r)
			for d := range hi {
				hi[d] = shape[d] - 1
			}
			if b, ok := opt.Held(k, in.held, origin, hi); ok {
				return b, false, nil
			}
		}
		if in.data.IsNil() { // read on the host after all, once per stage
			vals, err := in.held.Values()
			if err != nil {
				return Block{}, false, err
			}
			in.data = vals
		}
		onHost = expr.Size(shape) > 0
	}
	return Block{Origin: origin, Shape: shape, Data: in.data}, onHost, nil
}

// Box gathers the values of the box of the take's result at origin with shape, row-major.
func (g *Gather) Box(origin, shape []int) dtype.Slice {
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
