package dataframe

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/internal/hostview"
)

// The host's direct-address join: a merge on one integer or categorical key whose right side's
// key values span at most a few times its rows (db-benchmark's ids, dictionary codes) looks
// every left row up in one table of the right side's first row per key value, with no hashing
// and no partitioning, then writes the output columns block by block of left rows straight
// from the sides' values: no row-pair arrays, no index copies. Its output is broadcastJoin's
// (the left partitions in order, left rows in order, a key's right rows in order), so a
// broadcast merge gives the same frame either way.

// denseSpanPerRow bounds a direct-address table: at most this many slots per right row (plus
// denseSpanSlack), as hashjoin's own dense tables.
const (
	denseSpanPerRow = 4
	denseSpanSlack  = 1024
	denseBlockRows  = 1 << 19 // left rows per probe and gather task
	// denseRowMajorRows is the smallest right side whose columns are gathered row-major.
	denseRowMajorRows = 1 << 16
)

// denseTable is the right side's rows by key: first[v-lo] is the first right row of key value
// v (-1 for none), next the following row of the same key (nil when every key has one row).
type denseTable struct {
	first []int32
	lo    int64
	next  []int32
}

// hostViewOf is hostOf for a merge, which only reads its sides: values that are already Go
// memory on the host are read in place (internal/hostview), others copied; rows are not read
// (a merge numbers its output rows anew).
func hostViewOf(t *table) *hostTable {
	ht := &hostTable{lens: partLens(t)}
	for _, c := range t.cols {
		h := &hostCol{name: c.name, dt: c.dt, heap: c.heap}
		if v, ok := hostview.Values(c.arr); ok {
			h.vals = v
		} else {
			return nil
		}
		if c.valid != nil {
			v, ok := hostview.Values(c.valid)
			if !ok || v.DType() != dtype.Bool {
				return nil
			}
			h.valid = v.Bools()
		}
		ht.cols = append(ht.cols, h)
	}
	return ht
}

// toHostView materializes t and returns its host view (hostViewOf), or a copy (hostOf) where
// some values are not in host memory; n is its number of rows.
func (rc *runCtx) toHostView(t *table) (ht *hostTable, n int, err error) {
	c, err := rc.materialize(t)
	if err != nil {
		return nil, 0, err
	}
	if ht = hostViewOf(c); ht == nil {
		if ht, err = hostOf(c); err != nil {
			return nil, 0, err
		}
		return ht, len(ht.rows), nil
	}
	if c.rows.Err() != nil {
		return nil, 0, c.rows.Err()
	}
	if sh := c.rows.Shape(); len(sh) == 1 {
		n = sh[0]
	}
	return ht, n, nil
}

// denseKey is one side's key column for a direct-address join: int32 or int64 values (or
// categorical codes), no nulls.
type denseKey struct {
	i32 []int32
	i64 []int64
}

func (k denseKey) len() int { return max(len(k.i32), len(k.i64)) }

func denseKeyOf(h *hostCol) (denseKey, bool) {
	if h.valid != nil && !allTrue(h.valid) {
		return denseKey{}, false
	}
	switch h.vals.DType() {
	case dtype.Int32:
		return denseKey{i32: h.vals.Int32s()}, true
	case dtype.Int64:
		return denseKey{i64: h.vals.Int64s()}, true
	}
	return denseKey{}, false
}

// minMax returns the range of k's values, its blocks in parallel.
func (k denseKey) minMax() (lo, hi int64) {
	n := k.len()
	nb := (n + denseBlockRows - 1) / denseBlockRows
	los, his := make([]int64, nb), make([]int64, nb)
	forBlocks(nb, func(b int) {
		s, e := b*denseBlockRows, min(n, (b+1)*denseBlockRows)
		if k.i32 != nil {
			los[b], his[b] = minMaxOf(k.i32[s:e])
		} else {
			los[b], his[b] = minMaxOf(k.i64[s:e])
		}
	})
	lo, hi = los[0], his[0]
	for b := range los {
		lo, hi = min(lo, los[b]), max(hi, his[b])
	}
	return lo, hi
}

func minMaxOf[T int32 | int64](x []T) (int64, int64) {
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return int64(lo), int64(hi)
}

// buildDense returns the table of the right side's keys k over values [lo, lo+size).
func buildDense(k denseKey, lo int64, size int) *denseTable {
	t := &denseTable{first: make([]int32, size), lo: lo}
	fillInt32(t.first, -1)
	n := k.len()
	key := func(j int) int64 {
		if k.i32 != nil {
			return int64(k.i32[j])
		}
		return k.i64[j]
	}
	first := t.first
	dup := false
	if k.i32 != nil {
		dup = placeFirst(first, k.i32, lo)
	} else {
		dup = placeFirst(first, k.i64, lo)
	}
	if !dup {
		return t
	}
	// A key on several rows: chain them in row order.
	fillInt32(first, -1)
	t.next = make([]int32, n)
	tail := make([]int32, size)
	for j := 0; j < n; j++ {
		t.next[j] = -1
		d := key(j) - lo
		if first[d] < 0 {
			first[d] = int32(j)
		} else {
			t.next[tail[d]] = int32(j)
		}
		tail[d] = int32(j)
	}
	return t
}

// placeFirst sets first[k[j]-lo] = j for every row j and reports whether a key was on two
// rows (first is then to be rebuilt).
func placeFirst[T int32 | int64](first []int32, k []T, lo int64) bool {
	for j, x := range k {
		d := int64(x) - lo
		if first[d] >= 0 {
			return true
		}
		first[d] = int32(j)
	}
	return false
}

func fillInt32(s []int32, v int32) {
	forBlocks((len(s)+denseBlockRows-1)/denseBlockRows, func(b int) {
		p := s[b*denseBlockRows : min(len(s), (b+1)*denseBlockRows)]
		for i := range p {
			p[i] = v
		}
	})
}

// forBlocks runs fn(0..n-1) on GOMAXPROCS goroutines.
func forBlocks(n int, fn func(b int)) {
	w := min(n, runtime.GOMAXPROCS(0))
	if w <= 1 {
		for b := 0; b < n; b++ {
			fn(b)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b := int(next.Add(1) - 1)
				if b >= n {
					return
				}
				fn(b)
			}
		}()
	}
	wg.Wait()
}

// denseJoinPlan returns the direct-address table of a one-key merge's right side and the left
// side's probe values, or ok false where the keys do not fit one (several keys, strings,
// floats, nulls in a key, values spanning too many slots).
func denseJoinPlan(lc, rc []*hostCol, nr int) (t *denseTable, probe denseKey, ok bool) {
	if len(lc) != 1 || nr == 0 {
		return nil, denseKey{}, false
	}
	l, r := lc[0], rc[0]
	lk, okl := denseKeyOf(l)
	rk, okr := denseKeyOf(r)
	if !okl || !okr || lk.len() == 0 {
		return nil, denseKey{}, false
	}
	switch kind, _ := keyKind(l.dt, r.dt); {
	case l.dt == Category && r.dt == Category:
		return denseCategories(l, r, lk, rk)
	case kind == "int" && l.dt != Category && r.dt != Category:
	default:
		return nil, denseKey{}, false
	}
	lo, hi := rk.minMax()
	if hi-lo < 0 || uint64(hi-lo) >= uint64(denseSpanPerRow*nr+denseSpanSlack) {
		return nil, denseKey{}, false
	}
	return buildDense(rk, lo, int(hi-lo)+1), lk, true
}

// denseCategories is denseJoinPlan for categorical keys: the table is indexed by the left
// side's codes, each the right rows of the same string (through the right side's codes).
func denseCategories(l, r *hostCol, lk, rk denseKey) (*denseTable, denseKey, bool) {
	if lk.i32 == nil || rk.i32 == nil || l.heap == nil || r.heap == nil {
		return nil, denseKey{}, false
	}
	rt := buildDense(rk, 0, r.heap.len())
	if l.heap == r.heap {
		return rt, lk, true
	}
	codes := make(map[string]int32, r.heap.len())
	for c := 0; c < r.heap.len(); c++ {
		s := r.heap.at(int64(c))
		if _, dup := codes[s]; dup {
			return nil, denseKey{}, false
		}
		codes[s] = int32(c)
	}
	first := make([]int32, l.heap.len())
	for c := range first {
		first[c] = -1
		if rc, ok := codes[l.heap.at(int64(c))]; ok {
			first[c] = rt.first[rc]
		}
	}
	return &denseTable{first: first, next: rt.next}, lk, true
}

// denseBlock is one block of left rows [s, e) of one partition, and its output rows.
type denseBlock struct {
	part, s, e int
	out, at    int // output rows, first output row
	unmatched  int // left rows without a match
}

// denseJoin joins the left rows (partitions of lens) with t and writes the output columns of
// plan; how is Inner, Left, Semi or Anti.
func denseJoin(lh *hostTable, nl, nr int, t *denseTable, probe denseKey, how hashjoin.How, plan []outCol, rh *hostTable) (*hostTable, error) {
	var blocks []denseBlock
	at := 0
	lens := lh.lens
	if len(lens) == 0 {
		lens = []int{nl}
	}
	for p, n := range lens {
		for s := 0; s < n; s += denseBlockRows {
			blocks = append(blocks, denseBlock{part: p, s: at + s, e: at + min(n, s+denseBlockRows)})
		}
		at += n
	}
	m := makeNoZero(dtype.Int32, nl).Int32s() // the first right row of every left row's key, -1 for none
	forBlocks(len(blocks), func(b int) {
		blk := &blocks[b]
		if probe.i32 != nil {
			probeBlock(t, probe.i32, m, blk, how)
		} else {
			probeBlock(t, probe.i64, m, blk, how)
		}
	})
	partOut := make([]int, len(lens))
	total, unmatched := 0, 0
	for b := range blocks {
		blocks[b].at = total
		total += blocks[b].out
		unmatched += blocks[b].unmatched
		partOut[blocks[b].part] += blocks[b].out
	}
	out := &hostTable{cols: make([]*hostCol, len(plan))}
	for _, n := range partOut {
		if n > 0 {
			out.lens = append(out.lens, n)
		}
	}
	// Every left row once and in order (a left join on unique right keys, an inner or semi
	// join where every left row matches, an anti join where none does): the output's left
	// columns are the left side's, shared as pandas' left join shares them (arrays are never
	// written), not copied.
	unique := t.next == nil || how == hashjoin.Semi || how == hashjoin.Anti
	keepLeft := total == nl && (how == hashjoin.Left && unique || (how == hashjoin.Inner && unique || how == hashjoin.Semi) && unmatched == 0 ||
		how == hashjoin.Anti && unmatched == nl)
	sides := [2]*hostTable{lh, rh}
	srcs := make([]*hostCol, len(plan))
	shared := make([]bool, len(plan))
	ownValid := make([]bool, len(plan)) // the column's validity is gathered (not shared nor matched)
	var matched []bool                  // whether each output row's left row has a match (a left join on unique keys)
	for k, oc := range plan {
		src, err := sides[oc.side].col(oc.src)
		if err != nil {
			return nil, err
		}
		if oc.coalesce != "" {
			return nil, fmt.Errorf("merge: column %q: no coalesced keys in a direct-address join", oc.name)
		}
		srcs[k] = src
		if oc.side == 0 && keepLeft && src.vals.Len() == nl && (src.valid == nil || len(src.valid) == nl) {
			out.cols[k] = &hostCol{name: oc.name, dt: src.dt, heap: src.heap, vals: src.vals, valid: src.valid}
			shared[k] = true
			continue
		}
		c := &hostCol{name: oc.name, dt: src.dt, heap: src.heap, vals: makeNoZero(src.vals.DType(), total)}
		switch {
		case oc.side == 1 && how == hashjoin.Left && unmatched > 0 && t.next == nil && src.valid == nil:
			// Null exactly where the left row has no match: one validity for all such columns.
			if matched == nil {
				matched = makeNoZero(dtype.Bool, total).Bools()
			}
			c.valid, ownValid[k] = matched, false
		case src.valid != nil || (oc.side == 1 && (how == hashjoin.Anti || how == hashjoin.Left && unmatched > 0)):
			c.valid, ownValid[k] = makeNoZero(dtype.Bool, total).Bools(), true
		}
		out.cols[k] = c
	}
	if matched != nil {
		forBlocks(len(blocks), func(b int) {
			blk := blocks[b]
			for i, r := range m[blk.s:blk.e] {
				matched[blk.at+i] = r >= 0
			}
		})
	}
	g := denseGather{t: t, m: m, how: how}
	// A left join on unique keys reads its right columns through copies with a zero (null)
	// row in front, so that a left row without a match needs no branch: row r+1, 0 for none.
	var shifted []dtype.Slice
	var shiftedValid [][]bool
	if how == hashjoin.Left && t.next == nil && nr < denseRowMajorRows {
		shifted, shiftedValid = make([]dtype.Slice, len(plan)), make([][]bool, len(plan))
		for k, oc := range plan {
			if oc.side == 1 {
				shifted[k], shiftedValid[k] = shiftRight(srcs[k], ownValid[k])
			}
		}
	}
	// Right-side validity where a right column has none but unmatched left rows give nulls.
	var allValid []bool
	if how == hashjoin.Left && unmatched > 0 && shifted == nil {
		allValid = make([]bool, nr)
		for i := range allValid {
			allValid[i] = true
		}
	}
	// A large right side's columns are gathered row by row from one row-major copy of them:
	// one cache miss per output row instead of one per column.
	var rows *rowMajor
	if nr >= denseRowMajorRows && (how == hashjoin.Inner || how == hashjoin.Left) {
		rows = newRowMajor(plan, srcs, nr)
	}
	var tasks []int // output columns gathered column by column; -1 the row-major gather
	for k, oc := range plan {
		if !shared[k] && (rows == nil || oc.side == 0) {
			tasks = append(tasks, k)
		}
	}
	if rows != nil {
		tasks = append(tasks, -1)
	}
	nt := len(tasks)
	forBlocks(len(blocks)*nt, func(task int) {
		blk, k := blocks[task/nt], tasks[task%nt]
		if k < 0 {
			rows.gather(g, blk, out.cols)
			return
		}
		src, dst := srcs[k], out.cols[k]
		side := plan[k].side
		if shifted != nil && side == 1 {
			g.words(dst.vals, shifted[k], blk, 2)
			if ownValid[k] {
				gatherBlock(g, dst.valid[blk.at:blk.at+blk.out], shiftedValid[k], blk, 2)
			}
			return
		}
		g.words(dst.vals, src.vals, blk, side)
		if ownValid[k] {
			sv := src.valid
			if sv == nil {
				sv = allValid
			}
			gatherBlock(g, dst.valid[blk.at:blk.at+blk.out], sv, blk, side)
		}
	})
	out.rows = rowNumbers(total)
	return out, nil
}

// sharedRows is the longest run of row numbers 0, 1, … that rowNumbers made and that a frame
// still holds (a weak pointer: the garbage collector frees it with the last frame).
var sharedRows struct {
	sync.Mutex
	p weak.Pointer[int64]
	n int
}

// rowNumbers returns the row numbers 0..n-1 of a merge's output (a table's rows, as pandas'
// RangeIndex of a merge's result): a prefix of the last large run made while a frame holds
// it, capped so that an append copies it, otherwise a new run written on every core. Arrays
// are never written, so frames can share it.
func rowNumbers(n int) []int64 {
	if n*8 < noZeroBytes {
		return rowsArange([]int{n})
	}
	sharedRows.Lock()
	defer sharedRows.Unlock()
	if p := sharedRows.p.Value(); p != nil && sharedRows.n >= n {
		return unsafe.Slice(p, sharedRows.n)[:n:n]
	}
	rows := makeNoZero(dtype.Int64, n).Int64s()
	forBlocks((n+denseBlockRows-1)/denseBlockRows, func(b int) {
		s := b * denseBlockRows
		r := rows[s:min(n, s+denseBlockRows)]
		for i := range r {
			r[i] = int64(s + i)
		}
	})
	sharedRows.p, sharedRows.n = weak.Make(&rows[0]), n
	return rows[:n:n]
}

// probeBlock looks the left rows of blk up in t: m[i] is the first right row of row i's key,
// blk.out the block's output rows under how.
func probeBlock[T int32 | int64](t *denseTable, k []T, m []int32, blk *denseBlock, how hashjoin.How) {
	first, lo, size := t.first, t.lo, uint64(len(t.first))
	miss := 0
	for i := blk.s; i < blk.e; i++ {
		r := int32(-1)
		if d := uint64(int64(k[i]) - lo); d < size {
			r = first[d]
		}
		m[i] = r
		if r < 0 {
			miss++
		}
	}
	n := blk.e - blk.s
	blk.unmatched = miss
	switch how {
	case hashjoin.Semi:
		blk.out = n - miss
	case hashjoin.Anti:
		blk.out = miss
	default:
		if t.next == nil {
			blk.out = n - miss
			if how == hashjoin.Left {
				blk.out = n
			}
			return
		}
		out := 0
		for i := blk.s; i < blk.e; i++ {
			r := m[i]
			if r < 0 {
				if how == hashjoin.Left {
					out++
				}
				continue
			}
			for ; r >= 0; r = t.next[r] {
				out++
			}
		}
		blk.out = out
	}
}

// denseGather writes blocks of output columns from a probe's matches.
type denseGather struct {
	t   *denseTable
	m   []int32
	how hashjoin.How
}

// words gathers one block of a column by the width of its values.
func (g denseGather) words(dst, src dtype.Slice, blk denseBlock, side int) {
	if src.Len() == 0 {
		return
	}
	switch src.DType().Size() {
	case 1:
		gatherBlock(g, asWords[uint8](dst)[blk.at:blk.at+blk.out], asWords[uint8](src), blk, side)
	case 2:
		gatherBlock(g, asWords[uint16](dst)[blk.at:blk.at+blk.out], asWords[uint16](src), blk, side)
	case 4:
		gatherBlock(g, asWords[uint32](dst)[blk.at:blk.at+blk.out], asWords[uint32](src), blk, side)
	case 8:
		gatherBlock(g, asWords[uint64](dst)[blk.at:blk.at+blk.out], asWords[uint64](src), blk, side)
	case 16:
		gatherBlock(g, asWords[[2]uint64](dst)[blk.at:blk.at+blk.out], asWords[[2]uint64](src), blk, side)
	}
}

// asWords is s's values as words of their width (s holds values of size unsafe.Sizeof(T)).
func asWords[T any](s dtype.Slice) []T {
	b := s.Bytes()
	var z T
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// gatherBlock writes dst, the output rows of blk, from src, a column of the left (side 0) or
// right side (1), or a right column shifted by one row behind a zero row (2, shiftRight; a
// left join on unique keys); a left row without a match gives the zero value on the right.
// On unique keys the loops have no branch on a match: a row is written whether it is kept or
// not and the output position advances by 0 or 1 (db-benchmark's keys match 90% of rows at
// random, a branch there was mispredicted on every tenth row).
func gatherBlock[T any](g denseGather, dst, src []T, blk denseBlock, side int) {
	m := g.m[blk.s:blk.e]
	var zero T
	if side == 2 {
		dst = dst[:len(m)]
		for i, r := range m {
			dst[i] = src[int(r)+1]
		}
		return
	}
	if g.t.next == nil || g.how == hashjoin.Semi || g.how == hashjoin.Anti {
		switch {
		case side == 1 && g.how == hashjoin.Anti:
			for i := range dst {
				dst[i] = zero
			}
		case side == 0 && g.how == hashjoin.Left:
			copy(dst, src[blk.s:blk.e])
		case side == 0 && g.how == hashjoin.Anti:
			compactLeft(dst, src[blk.s:blk.e], m, 0)
		case side == 0:
			compactLeft(dst, src[blk.s:blk.e], m, -1)
		case g.how == hashjoin.Left:
			for i, r := range m {
				if r >= 0 {
					dst[i] = src[r]
				} else {
					dst[i] = zero
				}
			}
		default:
			w := 0
			for _, r := range m {
				if w == len(dst) {
					break
				}
				dst[w] = src[max(r, 0)]
				w += int(uint32(^r) >> 31)
			}
		}
		return
	}
	w := 0
	next := g.t.next
	left := g.how == hashjoin.Left
	for i, r := range m {
		if r < 0 {
			if left {
				if side == 0 {
					dst[w] = src[blk.s+i]
				} else {
					dst[w] = zero
				}
				w++
			}
			continue
		}
		for ; r >= 0; r = next[r] {
			if side == 0 {
				dst[w] = src[blk.s+i]
			} else {
				dst[w] = src[r]
			}
			w++
		}
	}
}

// compactLeft writes to dst, in order, the rows i of src for which m[i]^flip is negative
// (flip -1: the rows with a match, 0: those without), without a branch per row: each row is
// written at the next position, which advances only past a kept row.
func compactLeft[T any](dst, src []T, m []int32, flip int32) {
	w := 0
	for i, r := range m {
		if w == len(dst) {
			break
		}
		dst[w] = src[i]
		w += int(uint32(r^flip) >> 31)
	}
}

// shiftRight returns h's values one row later behind a zero row (row r of h is row r+1) and,
// when valid, its validity likewise behind a null: a left join reads row m+1 for a match m,
// row 0 for none.
func shiftRight(h *hostCol, valid bool) (dtype.Slice, []bool) {
	n := h.vals.Len()
	v := dtype.Make(h.vals.DType(), n+1)
	copy(v.Bytes()[h.vals.DType().Size():], h.vals.Bytes())
	var ok []bool
	if valid {
		ok = make([]bool, n+1)
		if h.valid != nil {
			copy(ok[1:], h.valid)
		} else {
			for i := 1; i <= n; i++ {
				ok[i] = true
			}
		}
	}
	return v, ok
}

// rowMajor is a right side's output columns (of plan) copied row by row, each row stride
// bytes (a multiple of 8), the widest columns first so that every value is aligned.
type rowMajor struct {
	buf    []uint64
	stride int   // bytes per row
	cols   []int // output columns (indices of plan)
	offs   []int // their byte offsets in a row
	sizes  []int // their value sizes
}

// newRowMajor copies the right-side columns of plan (srcs) into rows, or returns nil when one
// has nulls, fewer than two are gathered, or a size is not 1, 2, 4 or 8 bytes.
func newRowMajor(plan []outCol, srcs []*hostCol, nr int) *rowMajor {
	rm := &rowMajor{}
	for _, size := range []int{8, 4, 2, 1} {
		for k, oc := range plan {
			if oc.side != 1 || srcs[k].vals.DType().Size() != size {
				continue
			}
			if srcs[k].valid != nil || srcs[k].vals.Len() != nr {
				return nil
			}
			rm.cols, rm.offs, rm.sizes = append(rm.cols, k), append(rm.offs, rm.stride), append(rm.sizes, size)
			rm.stride += size
		}
	}
	right := 0
	for _, oc := range plan {
		if oc.side == 1 {
			right++
		}
	}
	if len(rm.cols) < 2 || len(rm.cols) != right {
		return nil
	}
	rm.stride = (rm.stride + 7) &^ 7
	rm.buf = makeNoZero(dtype.Uint64, nr*rm.stride/8).Uint64s()
	base := unsafe.Pointer(unsafe.SliceData(rm.buf))
	forBlocks((nr+denseBlockRows-1)/denseBlockRows, func(b int) {
		s, e := b*denseBlockRows, min(nr, (b+1)*denseBlockRows)
		for c, k := range rm.cols {
			v, off, st := srcs[k].vals, uintptr(rm.offs[c]), uintptr(rm.stride)
			switch rm.sizes[c] {
			case 8:
				putCol(base, st, off, asWords[uint64](v), s, e)
			case 4:
				putCol(base, st, off, asWords[uint32](v), s, e)
			case 2:
				putCol(base, st, off, asWords[uint16](v), s, e)
			case 1:
				putCol(base, st, off, asWords[uint8](v), s, e)
			}
		}
	})
	return rm
}

func putCol[T any](base unsafe.Pointer, stride, off uintptr, src []T, s, e int) {
	for j := s; j < e; j++ {
		*(*T)(unsafe.Add(base, uintptr(j)*stride+off)) = src[j]
	}
}

func getCol[T any](base unsafe.Pointer, stride, off uintptr, dst []T) {
	for q := range dst {
		dst[q] = *(*T)(unsafe.Add(base, uintptr(q)*stride+off))
	}
}

// gather writes the block's output rows of rm's columns: the matched right rows, copied to a
// small row-major buffer chunk by chunk, then split into the columns (a left row without a
// match gives zero values, null).
func (rm *rowMajor) gather(g denseGather, blk denseBlock, cols []*hostCol) {
	const chunk = 2048
	sw := rm.stride / 8
	local := make([]uint64, chunk*sw)
	rs := make([]int32, 0, chunk)
	lbase := unsafe.Pointer(unsafe.SliceData(local))
	w := 0 // output rows written
	flush := func() {
		for q, r := range rs {
			row := local[q*sw : (q+1)*sw]
			if r < 0 {
				clear(row)
				continue
			}
			src := rm.buf[int(r)*sw : int(r)*sw+sw]
			for x := range row {
				row[x] = src[x]
			}
		}
		at := blk.at + w
		for c, k := range rm.cols {
			v, off, st := cols[k].vals, uintptr(rm.offs[c]), uintptr(rm.stride)
			switch rm.sizes[c] {
			case 8:
				getCol(lbase, st, off, asWords[uint64](v)[at:at+len(rs)])
			case 4:
				getCol(lbase, st, off, asWords[uint32](v)[at:at+len(rs)])
			case 2:
				getCol(lbase, st, off, asWords[uint16](v)[at:at+len(rs)])
			case 1:
				getCol(lbase, st, off, asWords[uint8](v)[at:at+len(rs)])
			}
			if valid := cols[k].valid; valid != nil {
				for q, r := range rs {
					valid[at+q] = r >= 0
				}
			}
		}
		w += len(rs)
		rs = rs[:0]
	}
	left := g.how == hashjoin.Left
	for _, r := range g.m[blk.s:blk.e] {
		if r < 0 {
			if left {
				rs = append(rs, -1)
			}
		} else {
			for ; r >= 0; r = g.next(r) {
				rs = append(rs, r)
				if len(rs) == chunk {
					flush()
				}
			}
		}
		if len(rs) == chunk {
			flush()
		}
	}
	flush()
}

// next is the right row after r of the same key, -1 at the end.
func (g denseGather) next(r int32) int32 {
	if g.t.next == nil {
		return -1
	}
	return g.t.next[r]
}

// noZeroBytes is the smallest allocation makeNoZero takes without zeroing: a large one, whose
// memory comes aligned to a page.
const noZeroBytes = 64 << 10

// makeNoZero returns n values of dtype dt whose memory is not cleared first, for outputs that
// are written in full: a large make clears its memory (memclr was ~15-20% of a 1e7-row
// merge's CPU), while strings.Builder.Grow allocates without clearing. Values are garbage
// until written; under noZeroBytes it is dtype.Make.
func makeNoZero(dt dtype.DType, n int) dtype.Slice {
	size := n * dt.Size()
	if size < noZeroBytes {
		return dtype.Make(dt, n)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteByte(0) // a String that points at the buffer
	p := unsafe.Pointer(unsafe.StringData(b.String()))
	if cap := b.Cap(); cap < size || uintptr(p)%8 != 0 {
		return dtype.Make(dt, n)
	}
	var v dtype.Slice
	var err error
	switch dt {
	case dtype.Bool:
		v, err = dtype.Of(unsafe.Slice((*bool)(p), n))
	case dtype.Int32:
		v, err = dtype.Of(unsafe.Slice((*int32)(p), n))
	case dtype.Int64:
		v, err = dtype.Of(unsafe.Slice((*int64)(p), n))
	case dtype.Uint32:
		v, err = dtype.Of(unsafe.Slice((*uint32)(p), n))
	case dtype.Uint64:
		v, err = dtype.Of(unsafe.Slice((*uint64)(p), n))
	case dtype.Float64:
		v, err = dtype.Of(unsafe.Slice((*float64)(p), n))
	case dtype.Float32:
		v, err = dtype.Of(unsafe.Slice((*float32)(p), n))
	default:
		return dtype.Make(dt, n)
	}
	if err != nil {
		return dtype.Make(dt, n)
	}
	return v
}
