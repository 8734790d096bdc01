package plan

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/io/source"
)

// fileInput makes a file-backed node an input whose blocks the tasks read themselves. Where
// m steps over an axis (a strided slice), the input is the selection of the positions it
// reads, so that a task's box holds those and not the rows in between.
func (l *lowerer) fileInput(n *expr.Node, m []expr.AxisMap) int {
	m = slices.Clone(m)
	for d, am := range m {
		s := am.Step
		if am.Axis < 0 || s >= -1 && s <= 1 {
			continue
		}
		s = max(s, -s)
		r := ((am.Off % s) + s) % s // the residue of the stored indices read
		cnt := 0
		if r < n.Shape[d] {
			cnt = (n.Shape[d]-1-r)/s + 1
		}
		sel := *n
		sel.Shape = slices.Clone(n.Shape)
		sel.Shape[d] = cnt
		sel.Chunks = nil
		sel.File = n.File.Select(d, expr.Sel{Start: r, Step: s}, cnt)
		n = &sel
		m[d] = expr.AxisMap{Axis: am.Axis, Off: (am.Off - r) / s, Step: am.Step / s}
	}
	slot := l.input(dtype.Slice{}, n, m)
	l.inputs[len(l.inputs)-1].file = n.File
	return slot
}

// fileTake is the input of a take (not along) whose operand is a file-backed array: the file
// with the taken positions selected, so tasks read those rows only, not the whole file.
func (l *lowerer) fileTake(n *expr.Node, m []expr.AxisMap) (int, error) {
	x := n.Args[0]
	idx, err := l.takeIndices(n)
	if err != nil {
		return 0, err
	}
	ax := n.Axes[0]
	is := make([]int, len(idx))
	for i, v := range idx {
		is[i] = int(v)
	}
	sel := *x
	sel.Shape = slices.Clone(n.Shape)
	sel.Chunks = nil
	sel.File = x.File.Select(ax, expr.Sel{Idx: is}, len(is))
	return l.fileInput(&sel, m), nil
}

// fileBlock is the block of a file-backed input that a region reads: its box, to be read by
// the executor.
func fileBlock(in inputLeaf, off, shp []int) Block {
	origin, shape := box(in, off, shp)
	return Block{Origin: origin, Shape: shape, File: in.file}
}

// LoadInputs returns t with the blocks it reads from files read, and the blocks of takes
// left to the executor (Block.Gather) gathered (a copy of t: the planned task keeps no
// values, so a stage's tasks do not hold the whole file in memory). Executors call it first,
// on the machine that runs the task: a cluster worker reads the file itself.
func LoadInputs(ctx context.Context, t *Task) (*Task, error) {
	need := false
	for i := range t.Inputs {
		b := &t.Inputs[i]
		need = need || ((b.File != nil || b.Gather != nil) && b.Data.IsNil())
	}
	if !need {
		return t, nil
	}
	c := *t
	c.Inputs = slices.Clone(t.Inputs)
	for i := range c.Inputs {
		b := &c.Inputs[i]
		if b.Gather != nil && b.Data.IsNil() {
			b.Data, b.Gather = b.Gather.Box(b.Origin, b.Shape), nil
			continue
		}
		if b.File == nil || !b.Data.IsNil() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vals, err := ReadBlock(b)
		if err != nil {
			return nil, err
		}
		b.Data = vals
	}
	return &c, nil
}

// ReadBlock reads the values of a block whose File is set, row-major, in the file's dtype.
func ReadBlock(b *Block) (dtype.Slice, error) {
	if b.File == nil {
		return b.Data, nil
	}
	vals, err := source.Read(b.File, b.Origin, b.Shape)
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("input box at %v of shape %s: %w", b.Origin, expr.ShapeString(b.Shape), err)
	}
	return vals, nil
}
