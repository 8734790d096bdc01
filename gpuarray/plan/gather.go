package plan

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Takes (expr.KTake, expr.KTakeAlong) read their operand at positions an integer array gives,
// which no affine map expresses. Order computes the operand and the indices first; the kernel
// then reads the take's result as an ordinary Input whose source is the take's own shape, and
// each task's block of it is gathered on the host when the task is made (as cutBlock copies
// the box of any input). So the CPU, the GPU and cluster workers see ordinary kernels and
// blocks; only the gather itself runs on the host.

// gather says how an input leaf's values are gathered from its operand.
type gather struct {
	along bool    // KTakeAlong: idx has the result's shape; else idx is 1-d along axis
	axis  int     // the indexed axis
	idx   []int64 // indices, in range (negative ones resolved)
	src   []int   // the operand's shape; inputLeaf.data holds its values
}

// takeInput adds the input leaf of take node n read through map m.
func (l *lowerer) takeInput(n *expr.Node, m []expr.AxisMap) (int, error) {
	x, ix := n.Args[0], n.Args[1]
	xv, err := l.valuesOf(x)
	if err != nil {
		return 0, err
	}
	iv, err := l.valuesOf(ix)
	if err != nil {
		return 0, err
	}
	ax := n.Axes[0]
	size := x.Shape[ax]
	idx := make([]int64, iv.Len())
	for i := range idx {
		f := iv.Float(i)
		v := int64(f)
		if float64(v) != f {
			return 0, fmt.Errorf("plan: index %v at position %d is not an integer", f, i)
		}
		if v < 0 {
			v += int64(size)
		}
		if v < 0 || v >= int64(size) {
			return 0, fmt.Errorf("plan: index %v is out of bounds for axis %d with size %d", f, ax, size)
		}
		idx[i] = v
	}
	slot := len(l.inputs)
	l.inputs = append(l.inputs, inputLeaf{data: xv, shape: n.Shape, m: m,
		gather: &gather{along: n.Kind == expr.KTakeAlong, axis: ax, idx: idx, src: x.Shape}})
	return l.add(Instr{Code: Input, DType: n.DType, Slot: slot, Src: append([]int(nil), n.Shape...), Map: m}), nil
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

// cutGather gathers the box of a take's result that a region reads.
func cutGather(in inputLeaf, off, shp []int) Block {
	g := in.gather
	origin, shape := box(in, off, shp)
	b := Block{Origin: origin, Shape: shape}
	n := expr.Size(shape)
	b.Data = dtype.Make(in.data.DType(), int(n))
	if n == 0 {
		return b
	}
	r := len(shape)
	srcStrides := rowStrides(g.src)
	outStrides := rowStrides(in.shape)
	pos := make([]int, r)
	for o := 0; o < int(n); o++ {
		s, flat := 0, 0
		for d := 0; d < r; d++ {
			flat += (origin[d] + pos[d]) * outStrides[d]
		}
		for d := 0; d < r; d++ {
			p := origin[d] + pos[d]
			if d == g.axis {
				if g.along {
					p = int(g.idx[flat])
				} else {
					p = int(g.idx[p])
				}
			}
			s += p * srcStrides[d]
		}
		dtype.Copy(b.Data.Slice(o, o+1), in.data.Slice(s, s+1))
		for d := r - 1; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	return b
}
