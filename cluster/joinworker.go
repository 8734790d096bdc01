package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Join task kinds (taskSpec.Kind); their joinSpec is gob-encoded in taskSpec.Chunk.
const (
	kindJoinPairs  = "join-pairs"  // join one partition's keys: the row pairs, kept
	kindJoinLen    = "join-len"    // the number of a partition's row pairs
	kindJoinGather = "join-gather" // one output column of a partition, gathered at the pairs
)

// joinSpec says what one join task does. A side's columns come as consecutive inputs, its
// pieces (the chunks joined into the partition) one after another for each column.
type joinSpec struct {
	How hashjoin.How
	// Pairs: the key columns of each side, as indexes among that side's inputs, their validity
	// columns (-1: none), the number of columns and of pieces per column of each side.
	LKeys, LValid, RKeys, RValid   []int
	LCols, RCols, LPieces, RPieces int
	// Gather: Side is the side gathered (0, 1); Valid gathers validity instead of values.
	// The inputs after the pairs are NSrc pieces of the column (none: a validity gathered
	// from a column without nulls, or a side that lacks the partition), then NFill pieces of
	// the other side's fill column when Fill.
	Side        int
	Valid, Fill bool
	NSrc, NFill int
	DType       dtype.DType
}

func encodeJoinSpec(s joinSpec) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return nil, fmt.Errorf("encode join task: %w", err)
	}
	return buf.Bytes(), nil
}

// joinTask runs a join task; resolve gives the values of its inputs.
func (w *worker) joinTask(ctx context.Context, t *taskMsg, resolve func(string) (any, error)) (any, error) {
	var sp joinSpec
	if err := gob.NewDecoder(bytes.NewReader(t.Spec.Chunk)).Decode(&sp); err != nil {
		return nil, fmt.Errorf("decode join task: %w", err)
	}
	in := make([]dtype.Slice, len(t.Spec.Inputs))
	start := 0
	if t.Spec.Kind != kindJoinPairs {
		start = 1 // the pairs, read below
	}
	for i := start; i < len(t.Spec.Inputs); i++ {
		v, err := resolve(t.Spec.Inputs[i])
		if err == nil {
			in[i], err = keptValues(v)
		}
		if err != nil {
			return nil, fmt.Errorf("join: input %d: %w", i, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The inputs, and the keys or the column built from them, are in memory meanwhile.
	var room uint64
	for _, s := range in {
		room += uint64(len(s.Bytes()))
	}
	w.store.reserve(2 * room)
	defer w.store.unreserve(2 * room)
	switch t.Spec.Kind {
	case kindJoinPairs:
		return joinPairs(sp, in)
	case kindJoinLen, kindJoinGather:
		if len(t.Spec.Inputs) == 0 {
			return nil, fmt.Errorf("%s task without its pairs", t.Spec.Kind)
		}
		v, err := resolve(t.Spec.Inputs[0])
		if err != nil {
			return nil, fmt.Errorf("join: pairs: %w", err)
		}
		outs, ok := v.([]*plan.Output)
		if !ok || len(outs) != 2 {
			return nil, fmt.Errorf("join: pairs are a %T", v)
		}
		li, ri := outs[0].Data.Int32s(), outs[1].Data.Int32s()
		if t.Spec.Kind == kindJoinLen {
			return []int64{int64(len(li))}, nil
		}
		idx := [2][]int32{li, ri}
		return joinGather(sp, idx[sp.Side], idx[1-sp.Side], in[1:])
	}
	return nil, fmt.Errorf("unknown join task kind %q", t.Spec.Kind)
}

// concatPieces joins pieces into one column (the first piece itself when it is the only one).
func concatPieces(pieces []dtype.Slice, dt dtype.DType) dtype.Slice {
	if len(pieces) == 1 {
		return pieces[0]
	}
	n := 0
	for _, p := range pieces {
		n += p.Len()
	}
	out := dtype.Make(dt, n)
	at := 0
	for _, p := range pieces {
		at += dtype.Copy(out.Slice(at, at+p.Len()), p)
	}
	return out
}

// sideColumns returns a side's ncols columns, each joined from its npieces pieces.
func sideColumns(in []dtype.Slice, ncols, npieces int) ([]dtype.Slice, error) {
	if len(in) < ncols*npieces {
		return nil, fmt.Errorf("%d inputs for %d columns of %d pieces", len(in), ncols, npieces)
	}
	cols := make([]dtype.Slice, ncols)
	for j := range cols {
		ps := in[j*npieces : (j+1)*npieces]
		if len(ps) == 0 {
			continue
		}
		cols[j] = concatPieces(ps, ps[0].DType())
	}
	return cols, nil
}

// joinPairs joins one partition's keys: the row pairs of the left and right pieces (-1 for
// a row the other side lacks), as hashjoin.Join orders them.
func joinPairs(sp joinSpec, in []dtype.Slice) ([]*plan.Output, error) {
	lc, err := sideColumns(in, sp.LCols, sp.LPieces)
	if err != nil {
		return nil, fmt.Errorf("join: left: %w", err)
	}
	rc, err := sideColumns(in[sp.LCols*sp.LPieces:], sp.RCols, sp.RPieces)
	if err != nil {
		return nil, fmt.Errorf("join: right: %w", err)
	}
	var li, ri []int32
	nl, nr := 0, 0
	if sp.LPieces > 0 && len(lc) > 0 {
		nl = lc[0].Len()
	}
	if sp.RPieces > 0 && len(rc) > 0 {
		nr = rc[0].Len()
	}
	if nl == 0 || nr == 0 {
		li, ri = unmatched(nl, nr, sp.How)
	} else {
		lk, err := shuffleKeys(lc, sp.LKeys, sp.LValid)
		if err != nil {
			return nil, fmt.Errorf("join: left: %w", err)
		}
		rk, err := shuffleKeys(rc, sp.RKeys, sp.RValid)
		if err != nil {
			return nil, fmt.Errorf("join: right: %w", err)
		}
		if li, ri, err = hashjoin.Join(lk, rk, sp.How); err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
	}
	if len(ri) != len(li) {
		// Semi and anti joins: left rows alone.
		ri = make([]int32, len(li))
		for i := range ri {
			ri[i] = -1
		}
	}
	out := func(v []int32) *plan.Output {
		s, _ := dtype.Of(v)
		return &plan.Output{Shape: []int{len(v)}, Data: s}
	}
	return []*plan.Output{out(li), out(ri)}, nil
}

// unmatched returns the row pairs of a join where a side has no rows.
func unmatched(nl, nr int, how hashjoin.How) (li, ri []int32) {
	switch how {
	case hashjoin.Left, hashjoin.Outer, hashjoin.Anti:
		for i := 0; i < nl; i++ {
			li, ri = append(li, int32(i)), append(ri, -1)
		}
	}
	if how == hashjoin.Right || how == hashjoin.Outer {
		for j := 0; j < nr; j++ {
			li, ri = append(li, -1), append(ri, int32(j))
		}
	}
	return li, ri
}

// joinGather gathers one output column of a partition: the side's column at idx, and where
// idx is -1, the fill column at other (Fill) or a zero value (null). For Valid, the output
// is the rows' validity: false where the row is missing or its value null.
func joinGather(sp joinSpec, idx, other []int32, in []dtype.Slice) ([]*plan.Output, error) {
	if len(in) != sp.NSrc+sp.NFill {
		return nil, fmt.Errorf("join: gather: %d inputs, want %d and %d", len(in), sp.NSrc, sp.NFill)
	}
	n := len(idx)
	var src, fill dtype.Slice
	hasSrc, hasFill := sp.NSrc > 0, sp.Fill && sp.NFill > 0
	if hasSrc {
		src = concatPieces(in[:sp.NSrc], in[0].DType())
	}
	if hasFill {
		fill = concatPieces(in[sp.NSrc:], in[sp.NSrc].DType())
	}
	var out dtype.Slice
	if sp.Valid {
		v := make([]bool, n)
		var sv, fv []bool
		if hasSrc {
			sv = src.Bools()
		}
		if hasFill {
			fv = fill.Bools()
		}
		for i, x := range idx {
			switch {
			case x >= 0:
				v[i] = sv == nil || sv[x]
			case sp.Fill && other[i] >= 0:
				v[i] = fv == nil || fv[other[i]]
			}
		}
		out, _ = dtype.Of(v)
	} else {
		dt := sp.DType
		out = dtype.Make(dt, n)
		sz := dt.Size()
		dst := out.Bytes()
		var sb, fb []byte
		if hasSrc {
			if src.DType() != dt {
				return nil, fmt.Errorf("join: gather: the column is %v, want %v", src.DType(), dt)
			}
			sb = src.Bytes()
		}
		if hasFill {
			if fill.DType() != dt {
				return nil, fmt.Errorf("join: gather: the fill column is %v, want %v", fill.DType(), dt)
			}
			fb = fill.Bytes()
		}
		for i, x := range idx {
			switch {
			case x >= 0 && sb != nil:
				copy(dst[i*sz:(i+1)*sz], sb[int(x)*sz:(int(x)+1)*sz])
			case x < 0 && fb != nil && other[i] >= 0:
				o := int(other[i])
				copy(dst[i*sz:(i+1)*sz], fb[o*sz:(o+1)*sz])
			}
		}
	}
	return []*plan.Output{{Shape: []int{n}, Data: out}}, nil
}
