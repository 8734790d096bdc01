package plan

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// HeldJoin says a held block spans several chunks of an array held on one GPU (Held.Device):
// whoever runs the task first copies each piece's part of the block into one buffer on that
// device (PieceCopies) and reads the buffer as it would read a block held in one chunk.
type HeldJoin struct {
	Pieces []HeldPiece
}

// HeldPiece is one chunk of a held array: its device address (or for a Block.RefJoin the
// kept chunk's Ref) and its box in the array. The chunk's values are row-major over Shape, in
// the held format (Held.Narrow).
type HeldPiece struct {
	Ptr    uintptr `json:",omitempty"`
	Ref    string  `json:",omitempty"`
	Origin []int
	Shape  []int
}

// Refs returns the kept chunks a block reads: its Ref, or its RefJoin's pieces' Refs.
func (b *Block) Refs() []string {
	if b.Ref != "" {
		return []string{b.Ref}
	}
	if b.RefJoin == nil {
		return nil
	}
	out := make([]string, len(b.RefJoin.Pieces))
	for i, p := range b.RefJoin.Pieces {
		out[i] = p.Ref
	}
	return out
}

// JoinBytes returns the bytes of the buffer that whoever runs t fills to join its input
// block i (a Held join, or a RefJoin), 0 for a block read where it is: the block's elements
// in the held format (Held.Narrow: the dtype's own size; else 8-byte words, two for complex
// values), a further operand's as float64 words (what the device runners read). A worker
// joining a RefJoin on its host needs no more than that.
func (t *Task) JoinBytes(i int) int64 {
	b := &t.Inputs[i]
	if (b.Held == nil || b.Held.Join == nil) && b.RefJoin == nil {
		return 0
	}
	n := expr.Size(b.Shape)
	dt, ok := t.slotDType(i)
	switch {
	case !ok: // a further operand: floats, read as float64 words
		return 8 * n
	case b.Held != nil && b.Held.Narrow:
		return int64(dt.Size()) * n
	case dt.IsComplex():
		return 16 * n
	}
	return 8 * n
}

// slotDType returns the dtype of the source that input slot i holds, as the kernel's leaf (or
// search) reading it has it, and false when no instruction reads the slot.
func (t *Task) slotDType(i int) (dtype.DType, bool) {
	for _, in := range t.Kernel.Instrs {
		switch {
		case in.Code == Input && in.Slot == i:
			return in.DType, true
		case in.Code == Search && in.Slot == i:
			return in.Sorted, true
		}
	}
	return 0, false
}

// JoinValues returns the values of a block that joins pieces (its Held join's or RefJoin's),
// row-major over its Shape, from vals[i], piece i's values row-major over its chunk.
func JoinValues(b *Block, vals []dtype.Slice) (dtype.Slice, error) {
	pieces := HeldPieces(b)
	if b.RefJoin != nil {
		pieces = b.RefJoin.Pieces
	}
	if len(vals) != len(pieces) || len(vals) == 0 {
		return dtype.Slice{}, fmt.Errorf("plan: %d values for a block joined from %d chunks", len(vals), len(pieces))
	}
	for i, p := range pieces {
		if int64(vals[i].Len()) != expr.Size(p.Shape) {
			return dtype.Slice{}, fmt.Errorf("plan: %d values for a chunk of shape %s", vals[i].Len(), expr.ShapeString(p.Shape))
		}
	}
	out := dtype.Make(vals[0].DType(), int(expr.Size(b.Shape)))
	origin, shape := b.box()
	for _, c := range pieceCopies(origin, shape, pieces) {
		c = c.Collapse()
		src := dtype.Convert(vals[c.piece], out.DType())
		r := len(c.Shape)
		inner := int64(c.Shape[r-1])
		if c.SrcStrides[r-1] != 1 || c.DstStrides[r-1] != 1 {
			inner = 1
		}
		idx := make([]int, r)
		for n := int64(0); n < c.Elements(); n += inner {
			s, d := c.Src, c.Dst
			for k, x := range idx {
				s += int64(x) * c.SrcStrides[k]
				d += int64(x) * c.DstStrides[k]
			}
			dtype.Copy(out.Slice(int(d), int(d+inner)), src.Slice(int(s), int(s+inner)))
			k := r - 1
			if inner > 1 {
				k = r - 2
			}
			for ; k >= 0; k-- {
				if idx[k]++; idx[k] < c.Shape[k] {
					break
				}
				idx[k] = 0
			}
		}
	}
	return out, nil
}

// PieceCopy is the part of one held chunk that a block reads: Shape elements, the element at
// coordinates c (within Shape) going from the chunk's element Src + sum c[d]*SrcStrides[d] to
// the block's element Dst + sum c[d]*DstStrides[d] (row-major indexes, in elements).
type PieceCopy struct {
	Ptr        uintptr // the chunk's first element
	Shape      []int
	Src, Dst   int64
	SrcStrides []int64
	DstStrides []int64
	piece      int // the piece's index in its join
}

// HeldPieces returns the chunks a held block reads: its join's pieces, or the one chunk that
// holds it (its address is the block's first element, its box the block's).
func HeldPieces(b *Block) []HeldPiece {
	if b.Held == nil {
		return nil
	}
	if b.Held.Join != nil {
		return b.Held.Join.Pieces
	}
	origin, shape := b.box()
	return []HeldPiece{{Ptr: b.Held.Ptr, Origin: origin, Shape: shape}}
}

// PieceCopies returns the copies that fill a held block (row-major over its Shape, or its
// Source box of the array) from its pieces (HeldPieces), one per piece that meets it, in the
// pieces' order. Together they write every element of the block once when the pieces tile
// the array.
func PieceCopies(b *Block) []PieceCopy {
	pieces := HeldPieces(b)
	if b.Held == nil && b.RefJoin != nil {
		pieces = b.RefJoin.Pieces
	}
	origin, shape := b.box()
	return pieceCopies(origin, shape, pieces)
}

func pieceCopies(origin, shape []int, pieces []HeldPiece) []PieceCopy {
	var out []PieceCopy
	r := len(shape)
	dstStr := rowStrides64(shape)
	for pi, p := range pieces {
		if len(p.Origin) != r || len(p.Shape) != r {
			continue
		}
		c := PieceCopy{Ptr: p.Ptr, Shape: make([]int, r), SrcStrides: rowStrides64(p.Shape), DstStrides: dstStr, piece: pi}
		empty := false
		for d := range r {
			lo := max(origin[d], p.Origin[d])
			hi := min(origin[d]+shape[d], p.Origin[d]+p.Shape[d])
			if hi <= lo {
				empty = true
				break
			}
			c.Shape[d] = hi - lo
			c.Src += int64(lo-p.Origin[d]) * c.SrcStrides[d]
			c.Dst += int64(lo-origin[d]) * dstStr[d]
		}
		if !empty {
			out = append(out, c)
		}
	}
	return out
}

// Collapse returns c with its axes merged where both sides are contiguous across them and
// axes of length 1 dropped, so that a copy of whole rows is one run: the fewest axes that
// describe the same copy (at least one).
func (c PieceCopy) Collapse() PieceCopy {
	out := PieceCopy{Ptr: c.Ptr, Src: c.Src, Dst: c.Dst, piece: c.piece}
	for d, n := range c.Shape {
		if n == 1 {
			continue
		}
		k := len(out.Shape) - 1
		if k >= 0 && out.SrcStrides[k] == int64(n)*c.SrcStrides[d] && out.DstStrides[k] == int64(n)*c.DstStrides[d] {
			out.Shape[k] *= n
			out.SrcStrides[k], out.DstStrides[k] = c.SrcStrides[d], c.DstStrides[d]
			continue
		}
		out.Shape = append(out.Shape, n)
		out.SrcStrides = append(out.SrcStrides, c.SrcStrides[d])
		out.DstStrides = append(out.DstStrides, c.DstStrides[d])
	}
	if len(out.Shape) == 0 {
		out.Shape, out.SrcStrides, out.DstStrides = []int{1}, []int64{1}, []int64{1}
		if slices.Contains(c.Shape, 0) {
			out.Shape[0] = 0
		}
	}
	return out
}

// Elements returns the number of elements c copies.
func (c PieceCopy) Elements() int64 {
	n := int64(1)
	for _, s := range c.Shape {
		n *= int64(s)
	}
	return n
}

func rowStrides64(shape []int) []int64 {
	s := make([]int64, len(shape))
	st := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		s[d] = st
		st *= int64(shape[d])
	}
	return s
}
