package plan

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// CallStep is a kernel's library call (expr.Call): whoever runs a task computes the kernel's
// fused values over the task's region, as for an elementwise kernel, in float64 or complex128
// (the kernel's result instruction casts to one of them; sorts keep the values' dtype), then passes them through the call
// along Axis, where the region spans the whole axis. The output has the call's length along
// Axis (Call.OutLen) and dtype DType.
//
// A call with further operands (expr.NewCallRHS) reads them whole: each task's last Operands
// input blocks hold their values (Task.Operands), or where a GPU holds them (Held, a join
// of exactly the box read; see addOperands), which no kernel instruction reads.
type CallStep struct {
	expr.Call
	DType    dtype.DType
	Operands int `json:",omitempty"`
}

// Weighted reports whether c sums the weights of [value, weight] rows by value (a weighted
// bincount: float64 sums) rather than counting values (int64 counts).
func (c *CallStep) Weighted() bool { return c.Fn == expr.FnBincount && c.DType == dtype.Float64 }

// addOperands gives every task of a call stage the values of the call's further operands, as
// its last input blocks: the values, or with Options.HeldOperands an operand of floats that a
// device holds, where it holds it (opHeld).
func (st *Stage) addOperands(args []*expr.Node, done map[*expr.Node]dtype.Slice, opt Options) error {
	blocks := make([]Block, len(args))
	for i, a := range args {
		lo, hi := operandBox(st.Kernel.Call, a.Shape)
		if d, ok := opt.Kept[a]; ok {
			a = d // held on a device, as data
		}
		vals, ok := done[a]
		if !ok {
			if a.Kind != expr.KData {
				return fmt.Errorf("plan: operand %d of a call, of shape %s, was not computed before its use", i+1, expr.ShapeString(a.Shape))
			}
			if b, ok := opHeld(st.Kernel, a, lo, hi, opt); ok {
				blocks[i] = b
				continue
			}
			var err error
			if vals, err = a.Values(); err != nil {
				return err
			}
			if a.Buf != nil && !slices.Contains(st.HostOperands, a) {
				st.HostOperands = append(st.HostOperands, a)
			}
		}
		blocks[i] = Block{Origin: make([]int, len(a.Shape)), Shape: slices.Clone(a.Shape), Data: vals}
		if c := st.Kernel.Call; c != nil && c.Fn == expr.FnMatMul && len(a.Shape) == 2 && (c.Off != 0 || c.N != a.Shape[1]) {
			blocks[i] = panelBlock(vals, a.Shape, c.Off, c.N)
		}
	}
	for _, t := range st.Tasks {
		t.Inputs = append(t.Inputs, blocks...)
	}
	return nil
}

// operandBox returns the box [lo, hi] (inclusive) of an operand of shape that a call's tasks
// read: all of it, or for a product the panel of columns [Off, Off+N) of b.
func operandBox(c *CallStep, shape []int) (lo, hi []int) {
	lo, hi = make([]int, len(shape)), make([]int, len(shape))
	for d, n := range shape {
		hi[d] = n - 1
	}
	if c != nil && c.Fn == expr.FnMatMul && len(shape) == 2 && (c.Off != 0 || c.N != shape[1]) {
		lo[1], hi[1] = c.Off, c.Off+c.N-1
	}
	return lo, hi
}

// opHeld returns the block of an operand held on a device or kept by a cluster (Options.Held)
// that the call's tasks read there: exactly the box [lo, hi], joined from the chunks that hold
// it (a Held join, or a RefJoin; one piece where one chunk holds it), which whoever runs the
// tasks copies into one buffer of float64 elements first (a GPU) or joins in its memory. Only
// floats are read so (the device runners read float64 elements; 4-byte floats are widened as
// they are copied).
func opHeld(k *Kernel, a *expr.Node, lo, hi []int, opt Options) (Block, bool) {
	if a.Buf == nil || opt.Held == nil || !opt.HeldOperands || !a.DType.IsFloat() || slices.Contains(a.Shape, 0) {
		return Block{}, false
	}
	b, ok := opt.Held(k, a, lo, hi)
	if !ok {
		return Block{}, false
	}
	shape := make([]int, len(lo))
	for d := range lo {
		shape[d] = hi[d] - lo[d] + 1
	}
	switch {
	case b.Held != nil:
		h := *b.Held
		h.Join = &HeldJoin{Pieces: HeldPieces(&b)}
		return Block{Origin: slices.Clone(lo), Shape: shape, Held: &h}, true
	case b.Ref != "": // a chunk a cluster keeps: joined (cut) by the worker
		return Block{Origin: slices.Clone(lo), Shape: shape, RefJoin: &HeldJoin{Pieces: []HeldPiece{{Ref: b.Ref, Origin: b.Origin, Shape: b.Shape}}}}, true
	case b.RefJoin != nil:
		return Block{Origin: slices.Clone(lo), Shape: shape, RefJoin: b.RefJoin}, true
	}
	return Block{}, false
}

// panelBlock copies columns [off, off+n) of a row-major rows x cols matrix: the one panel of a
// product's operand that its tasks read, so that no task (or worker) is sent all of it.
func panelBlock(vals dtype.Slice, shape []int, off, n int) Block {
	rows, cols := shape[0], shape[1]
	out := dtype.Make(vals.DType(), rows*n)
	for r := range rows {
		dtype.Copy(out.Slice(r*n, (r+1)*n), vals.Slice(r*cols+off, r*cols+off+n))
	}
	return Block{Origin: []int{0, off}, Shape: []int{rows, n}, Data: out}
}

// Operands returns the values of a call task's further operands (CallStep.Operands),
// row-major; an operand held on a GPU (OperandBlocks' Held) has none here.
func (t *Task) Operands() []dtype.Slice {
	c := t.Kernel.Call
	if c == nil || c.Operands == 0 || len(t.Inputs) < c.Operands {
		return nil
	}
	out := make([]dtype.Slice, c.Operands)
	for i, b := range t.Inputs[len(t.Inputs)-c.Operands:] {
		out[i] = b.Data
	}
	return out
}

// OperandBlocks returns a call task's further operands' blocks (CallStep.Operands).
func (t *Task) OperandBlocks() []Block {
	c := t.Kernel.Call
	if c == nil || c.Operands == 0 || len(t.Inputs) < c.Operands {
		return nil
	}
	return t.Inputs[len(t.Inputs)-c.Operands:]
}

// InputDType returns the dtype a call's fused values are computed in.
func InputDType(in dtype.DType) dtype.DType {
	if in.Kind() == dtype.KindComplex {
		return dtype.Complex128
	}
	return dtype.Float64
}

// castForCall makes the kernel's result the dtype its call reads, and returns the result.
func (k *Kernel) castForCall(res int) int {
	want := InputDType(k.Instrs[res].DType)
	if k.Instrs[res].DType == want {
		return res
	}
	k.Instrs = append(k.Instrs, Instr{Code: Cast, DType: want, Args: []int{res}})
	return len(k.Instrs) - 1
}

// Elementwise returns a copy of a call kernel without its call: what computes the values the
// call reads.
func (k *Kernel) Elementwise() *Kernel {
	c := *k
	c.Call = nil
	return &c
}

// plainInput returns the instruction of the Input that a call kernel's result reads unchanged
// (through casts only) with the identity map, or -1: then a task's values are its input block.
func (k *Kernel) plainInput() int {
	i := k.Result
	// A sort reads its values in their own dtype: a cast (x.AsType(Int64)) changes them.
	keepCasts := k.Call != nil && k.Call.Fn.Sorts()
	for !keepCasts && i >= 0 && i < len(k.Instrs) && k.Instrs[i].Code == Cast && len(k.Instrs[i].Args) == 1 {
		a := k.Instrs[i].Args[0]
		if a < 0 || a >= len(k.Instrs) || dtype.Promote(k.Instrs[a].DType, k.Instrs[i].DType) != k.Instrs[i].DType {
			return -1 // a narrowing cast (x.AsType(Int32)) changes the values: the kernel computes them
		}
		i = a
	}
	if i < 0 || i >= len(k.Instrs) || k.Instrs[i].Code != Input || len(k.Instrs[i].Map) != len(k.Shape) {
		return -1
	}
	for d, m := range k.Instrs[i].Map {
		if m.Axis != d || m.Step != 1 || m.Off != 0 {
			return -1
		}
	}
	return i
}

// PlainInput reports whether a call kernel's values are an input read unchanged, so that a
// task's values are its input block (CallValues) and need no fused kernel.
func (k *Kernel) PlainInput() bool { return k.Call != nil && k.plainInput() >= 0 }

// CallValues returns a call task's values when its kernel reads an input unchanged and the
// task's block of it is in host memory: the block itself, row-major over the task's region.
func (t *Task) CallValues() (dtype.Slice, bool) {
	i := t.Kernel.plainInput()
	if i < 0 {
		return dtype.Slice{}, false
	}
	in := &t.Kernel.Instrs[i]
	if in.Slot < 0 || in.Slot >= len(t.Inputs) {
		return dtype.Slice{}, false
	}
	b := &t.Inputs[in.Slot]
	if b.Data.IsNil() || !slices.Equal(b.Origin, t.Offset) || !slices.Equal(b.Shape, t.Shape) {
		return dtype.Slice{}, false
	}
	return b.Data, true
}
