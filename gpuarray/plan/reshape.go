package plan

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Box is a box of an array: the elements from Origin on, Shape along each axis.
type Box struct {
	Origin []int
	Shape  []int
}

// ReshapeRead is a reshape of an array held off the host (Options.Held) whose tasks read the
// array's host copy instead of its chunks where they are held: the values went down to the
// host once and go up again with the tasks.
type ReshapeRead struct {
	Reshape *expr.Node // the reshape; its operand (Args[0]) is the held array
	// Why says why, where the planner knows: a task's block of the reshape is no box of the
	// array, or the chunk that holds it is no box of the reshape. "" when the hook refused
	// the block (the scheduler knows why, as for HostReads).
	Why string
}

// box returns the box of the array that b's values are (row-major over it): Source where b is
// a block of a reshape of the array, else b's own.
func (b *Block) box() (origin, shape []int) {
	if b.Source != nil {
		return b.Source.Origin, b.Source.Shape
	}
	return b.Origin, b.Shape
}

// reshapedBlock returns the block of the held array behind the reshape that leaf in reads
// for the box (origin, shape) of the reshape, read where it is held, as a block of the
// reshape (Block.Source keeps its box of the array); or why not ("" when the hook refused).
// A reshape keeps the row-major order, so a box of the reshape whose elements are, in order,
// a box of the array reads that box's values as they are held.
func reshapedBlock(opt Options, k *Kernel, in inputLeaf, origin, shape []int) (Block, bool, string) {
	arr := in.held
	ao, as, ok := sameOrderBox(in.shape, arr.Shape, origin, shape)
	if !ok {
		return Block{}, false, fmt.Sprintf("a task's block %s at %v of the reshape to %s is no box of the %s array (it starts or ends within a row of the array's trailing axes); chunks of the reshape that are whole rows of the array read in place",
			expr.ShapeString(shape), origin, expr.ShapeString(in.shape), expr.ShapeString(arr.Shape))
	}
	hi := make([]int, len(ao))
	for d := range hi {
		hi[d] = ao[d] + as[d] - 1
	}
	b, ok := opt.Held(k, arr, ao, hi)
	if !ok {
		return Block{}, false, ""
	}
	ro, rs, ok := sameOrderBox(arr.Shape, in.shape, b.Origin, b.Shape)
	if !ok {
		return Block{}, false, fmt.Sprintf("the chunk %s at %v of the %s array that holds a task's block is no box of the reshape to %s; chunks of whole rows of the reshape's trailing axes read in place",
			expr.ShapeString(b.Shape), b.Origin, expr.ShapeString(arr.Shape), expr.ShapeString(in.shape))
	}
	b.Source = &Box{Origin: b.Origin, Shape: b.Shape}
	b.Origin, b.Shape = ro, rs
	return b, true, ""
}

// sameOrderBox returns the box of an array of shape to whose elements, in row-major order,
// are the elements of the box (origin, shape) of an array of shape from, in row-major order,
// where both arrays list the same values row-major (one is a reshape of the other); false
// when there is no such box (or the box is empty).
func sameOrderBox(from, to, origin, shape []int) ([]int, []int, bool) {
	if expr.Size(shape) == 0 || len(origin) != len(from) || len(shape) != len(from) {
		return nil, nil, false
	}
	last := make([]int, len(origin))
	for d := range last {
		last[d] = origin[d] + shape[d] - 1
	}
	fs, ts := rowStrides64(from), rowStrides64(to)
	lo, hi := unravel(to, ts, linear(fs, origin)), unravel(to, ts, linear(fs, last))
	out := make([]int, len(to))
	for d := range out {
		if out[d] = hi[d] - lo[d] + 1; out[d] < 1 {
			return nil, nil, false
		}
	}
	if !slices.Equal(runs(fs, shape), runs(ts, out)) {
		return nil, nil, false
	}
	return lo, out, true
}

func linear(strides []int64, at []int) int64 {
	var l int64
	for d, s := range strides {
		l += s * int64(at[d])
	}
	return l
}

func unravel(shape []int, strides []int64, l int64) []int {
	at := make([]int, len(shape))
	for d, s := range strides {
		at[d] = int(l / s)
		l %= s
	}
	return at
}

// run is one loop of a box's row-major walk over an array: n steps of stride elements.
type run struct{ n, stride int64 }

// runs returns the loops of the row-major walk over a box of the given shape in an array of
// the given strides, innermost first, with axes of length 1 dropped and loops that continue
// each other merged: two boxes walk the same elements in the same order from the same first
// element when their runs are equal.
func runs(strides []int64, shape []int) []run {
	var out []run
	for d := len(shape) - 1; d >= 0; d-- {
		n := int64(shape[d])
		if n == 1 {
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k].n*out[k].stride == strides[d] {
			out[k].n *= n
			continue
		}
		out = append(out, run{n, strides[d]})
	}
	return out
}
