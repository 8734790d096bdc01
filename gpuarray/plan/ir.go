package plan

import (
	"encoding/json"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Code is an instruction kind.
type Code uint8

// Instruction kinds (see the package documentation).
const (
	Const Code = iota
	Random
	Range
	Input
	Unary
	Binary
	Where
	Cast
	Search
)

var codeNames = [...]string{"const", "random", "range", "input", "unary", "binary", "where", "cast", "search"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "code?"
}

// Leaf reports whether instructions of kind c read a source through a Map.
func (c Code) Leaf() bool { return c == Random || c == Range || c == Input }

// Instr is one instruction of a Kernel.
type Instr struct {
	Code  Code
	DType expr.DType
	Op    expr.Op        `json:",omitempty"` // Unary, Binary
	Args  []int          `json:",omitempty"` // operands: indexes of earlier instructions
	Value float64        `json:",omitempty"` // Const
	Rand  expr.RandSpec  `json:",omitempty"` // Random
	Start float64        `json:",omitempty"` // Range
	Step  float64        `json:",omitempty"` // Range
	Stop  float64        `json:",omitempty"` // Range, with Exact
	Exact bool           `json:",omitempty"` // Range
	Slot  int            `json:",omitempty"` // Input; Search: the sorted operand's whole block
	Src   []int          `json:",omitempty"` // leaves: the source array's shape
	Map   []expr.AxisMap `json:",omitempty"` // leaves: one per source axis
	// Search: where the value Args[0] goes in the ascending 1-d block at Slot, of dtype
	// Sorted, compared in Args[0]'s dtype (SearchDType: float64 with NaN last, or int64 or
	// uint64 exactly): before equal values, or after them with Right (numpy.searchsorted).
	// The result is int64.
	Sorted expr.DType `json:",omitempty"`
	Right  bool       `json:",omitempty"`
	// Alias, for an Input, is 1 + the index of an earlier Input instruction that reads the
	// same array through another map (x and x.T), 0 for none.
	Alias int `json:",omitempty"`
}

// Linear returns the source's row-major linear index of a leaf as base + sum coef[k]*o[k]
// over the rank axes of the iteration space.
func (in *Instr) Linear(rank int) (base int64, coef []int64) {
	return affine(in.Src, nil, in.Map, rank)
}

// LinearIn is Linear for a leaf reading a block of its source that starts at origin and has
// shape (an Input leaf reading Task.Inputs[Slot]).
func (in *Instr) LinearIn(b *Block, rank int) (base int64, coef []int64) {
	return affine(b.Shape, b.Origin, in.Map, rank)
}

func affine(shape, origin []int, m []expr.AxisMap, rank int) (int64, []int64) {
	coef := make([]int64, rank)
	var base int64
	stride := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		off := int64(m[d].Off)
		if origin != nil {
			off -= int64(origin[d])
		}
		base += stride * off
		if m[d].Axis >= 0 {
			coef[m[d].Axis] += stride * int64(m[d].Step)
		}
		stride *= int64(shape[d])
	}
	return base, coef
}

// Reduction is a kernel's reduction.
type Reduction struct {
	Red  expr.Red
	Axes []int // reduced axes of the iteration space, ascending
}

// Kernel is a fused computation over an iteration space.
type Kernel struct {
	Shape  []int // the iteration space
	Instrs []Instr
	Result int        // the instruction that is stored or reduced
	Reduce *Reduction `json:",omitempty"`
	Call   *CallStep  `json:",omitempty"` // the result goes through a library call (call.go)
}

// Key returns a stable identity of the kernel (its JSON text), for caches of compiled code.
func (k *Kernel) Key() string {
	b, err := json.Marshal(k)
	if err != nil {
		return ""
	}
	return string(b)
}

// Reduced reports which axes of the iteration space the kernel reduces.
func (k *Kernel) Reduced() []bool {
	r := make([]bool, len(k.Shape))
	if k.Reduce != nil {
		for _, a := range k.Reduce.Axes {
			r[a] = true
		}
	}
	return r
}

// Block is the part of a materialized input that a task reads: the box of the source array
// starting at Origin with Shape, row-major, in Data, or in a device's memory (Held).
type Block struct {
	Origin []int
	Shape  []int
	Data   dtype.Slice
	Held   *Held `json:",omitempty"`
	// Ref, when set, names a chunk that a Keeper keeps (Kept.Ref) whose values are the
	// block's: whoever runs the task fills Data from it first.
	Ref string `json:",omitempty"`
	// RefJoin, when set, says the block spans several chunks that a Keeper keeps: its pieces'
	// Refs name them, and whoever runs the task joins their parts first (where its GPU holds
	// them all, into a Held join; else on the host, JoinValues).
	RefJoin *HeldJoin `json:",omitempty"`
	// File, when set, is the file-backed array whose box the block is: whoever runs the
	// task reads Data from it first (LoadInputs).
	File *expr.File `json:",omitempty"`
	// Gather, when set, says how the block's values are gathered from a take's operand
	// (Options.LateGather): a GPU gathers them on the device, others with LoadInputs.
	Gather *Gather `json:",omitempty"`
	// Source, when set, is the box of the array whose values the block holds, for a block of
	// a reshape of a held array: Origin and Shape are the block's box of the reshape, which
	// lists the same elements in the same order. Joins (Held.Join, RefJoin) copy this box of
	// their pieces.
	Source *Box `json:",omitempty"`
}

// Held places a block's values, row-major as Data would hold them, in a GPU's memory: an array
// held there (a GPU product's result, say) read in place. Only a scheduler for that device
// asks for such blocks (Options.Held).
type Held struct {
	Device int     // the GPU's index
	Ptr    uintptr // device address of the block's first element
	// Narrow says the values are in their dtype's own size (float32, bool and integers of 1
	// to 4 bytes persisted on the GPU: cuda.Narrow) instead of the fused kernels' 8-byte words.
	Narrow bool `json:",omitempty"`
	// Join, when set, says the block spans several chunks held on Device (Ptr is the first
	// one's address): they are copied into one buffer there before the task reads it.
	Join *HeldJoin `json:",omitempty"`
}

// Task computes one chunk of a stage: the region of the iteration space at Offset with Shape.
type Task struct {
	Stage  int // the stage's number within one Compute
	Index  int // the chunk's row-major number in the stage's chunk grid
	Kernel *Kernel
	Offset []int
	Shape  []int
	Inputs []Block `json:",omitempty"` // one per Input slot
}

// Size returns the number of elements of the task's region.
func (t *Task) Size() int64 { return expr.Size(t.Shape) }

// ReadsHeld reports whether one of tasks reads a block held on a GPU (Block.Held).
func ReadsHeld(tasks []*Task) bool {
	for _, t := range tasks {
		for _, b := range t.Inputs {
			if b.Held != nil {
				return true
			}
		}
	}
	return false
}

// Bytes estimates the memory a task holds while it runs: inputs, and output or partials. A
// block joined from several chunks (JoinBytes) counts the buffer its join fills; one read
// from a file or gathered late (Options.LateGather), the values the task reads or gathers.
func (t *Task) Bytes() int64 {
	var n int64
	for i, b := range t.Inputs {
		n += int64(len(b.Data.Bytes()))
		if b.File != nil || b.Gather != nil { // read or gathered inside the task
			n += 8 * expr.Size(b.Shape)
		}
		n += t.JoinBytes(i)
	}
	if t.Kernel.Reduce == nil {
		n += 8 * t.Size()
	} else {
		p := int64(1)
		red := t.Kernel.Reduced()
		for k, d := range t.Shape {
			if !red[k] {
				p *= int64(d)
			}
		}
		n += 3 * 8 * p
	}
	return n
}

// Output is what a task returns.
type Output struct {
	Shape []int       // the region's shape; reduced axes have length 1
	Data  dtype.Slice // stored values in the result's dtype, or the first partial
	Aux   [][]float64 `json:",omitempty"` // further partials (see the package documentation)
	// HostFallback, from a GPU cluster worker that ran the task on its CPU because its GPU
	// does not run the kernel, says why; HostSeconds is how long the task took there. The
	// client reports both (Path, a warning), as a local GPU compute does.
	HostFallback string  `json:",omitempty"`
	HostSeconds  float64 `json:",omitempty"`
	// HostRead, from a GPU cluster worker, says why the task read chunks kept on that
	// worker's GPU through its host memory (copied down, then up again with the task); the
	// client reports it in Path, as a local GPU reports its host reads.
	HostRead string `json:",omitempty"`
	// Lib names the library that ran the task's call where there is a choice, like "solve on
	// the CPU with OpenBLAS 0.3.21 (LAPACK)"; the client reports it in Path.
	Lib string `json:",omitempty"`
}
