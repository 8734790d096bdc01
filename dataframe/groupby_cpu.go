package dataframe

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/internal/hostview"
)

// The CPU aggregation path of GroupBy. Key and value columns come to the host in their own
// types (int32 codes and values, float64: no widening copies). Keys whose value ranges
// multiply to few codes group by mixed-radix code (hashagg.PlanDense's code, the GPU's
// dense kernel too): per unit of rows, states indexed by code, merged as a tree. Keys that
// pack into one word group by hash, radix-partitioned so each bucket's table stays in the
// cache (hashagg.AggregateCodes). Other keys take hashagg.Group per unit and Combine.

// unitRows is the most rows of one unit of work (a partition is split into units of at most
// this many rows); units, not threads, fix the order of float sums.
const unitRows = 1 << 22

// groupedMedians: medians and quantiles with their column's counts, means and variances take
// denseGrouped's path (off in tests, to compare with the other).
var groupedMedians = true

// denseMax is the most codes grouped densely; above, codes are hashed in cache-sized buckets.
var denseMax uint64 = 1 << 22

// keyData is one key column on the host: int32 or int64 values (codes), validity, range.
type keyData struct {
	i32       []int32
	i64       []int64
	valid     []bool
	min, card int64 // card 0: no valid row
}

func (k *keyData) at(i int) int64 {
	if k.i32 != nil {
		return int64(k.i32[i])
	}
	return k.i64[i]
}

// groupInput is the host data of one GroupBy.
type groupInput struct {
	n       int
	parts   int   // partitions
	units   []int // row counts, in order
	keys    []keyData
	vals    []hashagg.Values
	keyCols []*column
	valCols []*column
}

// hostGroupInput computes t's key and value columns with rc's options and brings them to the
// host in their own types.
func hostGroupInput(rc *runCtx, t *table, keys []string, vals []string, needPos bool) (*groupInput, error) {
	in := &groupInput{}
	var arrs []*gpuarray.Array
	var isMask []bool // arrs[i] is a validity mask
	// add finds each named column and queues its array (strings as their key codes) and mask.
	add := func(names []string, cols *[]*column) error {
		for _, name := range names {
			c, err := t.find(name)
			if err != nil {
				return err
			}
			a := c.arr
			if c.dt == String {
				if a, err = keyArray(rc, c); err != nil {
					return err
				}
			}
			*cols = append(*cols, c)
			arrs = append(arrs, a)
			isMask = append(isMask, false)
			if c.valid != nil {
				arrs = append(arrs, c.valid)
				isMask = append(isMask, true)
			}
		}
		return nil
	}
	if err := add(keys, &in.keyCols); err != nil {
		return nil, err
	}
	if err := add(vals, &in.valCols); err != nil {
		return nil, err
	}
	arrs = append(arrs, t.rows)
	out, err := rc.computeArrays(arrs)
	if err != nil {
		return nil, err
	}
	rowsArr := out[len(out)-1]
	var lens []int
	if ch := rowsArr.Chunks(); len(ch) > 0 {
		lens = ch[0]
	}
	in.parts = len(lens)
	for _, l := range lens {
		in.n += l
		for l > 0 {
			u := min(l, unitRows)
			in.units = append(in.units, u)
			l -= u
		}
	}
	// The columns on the host: read in place where they are (internal/hostview), else
	// copied, the copies in parallel. Nothing below writes to them.
	type hostCol struct {
		s     dtype.Slice
		valid []bool
		err   error
	}
	host := make([]hostCol, len(isMask))
	parallelDo(len(host), runtime.GOMAXPROCS(0), func(i int) {
		h := &host[i]
		if isMask[i] {
			h.valid, h.err = readBools(out[i])
		} else {
			h.s, h.err = readValues(out[i])
		}
	})
	at := 0
	next := func() (dtype.Slice, error) { h := host[at]; at++; return h.s, h.err }
	nextValid := func(c *column) ([]bool, error) {
		if c.valid == nil {
			return nil, nil
		}
		h := host[at]
		at++
		return h.valid, h.err
	}
	starts := in.unitStarts()
	for _, c := range in.keyCols {
		arr := out[at]
		s, err := next()
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", c.name, err)
		}
		var k keyData
		switch s.DType() {
		case gpuarray.Int32:
			k.i32 = s.Int32s()
		case gpuarray.Int64:
			k.i64 = s.Int64s()
		default:
			k.i64 = dtype.Convert(s, gpuarray.Int64).Int64s()
		}
		if k.valid, err = nextValid(c); err != nil {
			return nil, fmt.Errorf("key %q: %w", c.name, err)
		}
		switch lo, hi, ok := hostview.IntRange(arr); {
		case c.dt == Category && c.heap != nil:
			// A categorical's codes index its dictionary: their range is 0..len-1, no scan.
			k.min, k.card = 0, int64(c.heap.len())
		case ok && k.valid == nil && c.dt != String:
			// Persisted on the host: the range kept with the column's chunks.
			k.min, k.card = widthOf(lo, hi)
		default:
			k.min, k.card = keyRange(&k, starts)
		}
		in.keys = append(in.keys, k)
	}
	for _, c := range in.valCols {
		s, err := next()
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.name, err)
		}
		v := hashagg.ValuesOf(s)
		if v.Valid, err = nextValid(c); err != nil {
			return nil, fmt.Errorf("column %q: %w", c.name, err)
		}
		in.vals = append(in.vals, v)
	}
	if needPos {
		pos, err := readInt64s(rowsArr)
		if err != nil {
			return nil, err
		}
		for i := range in.vals {
			in.vals[i].Pos = pos
		}
	}
	return in, nil
}

// readValues returns a computed array's values on the host: in place when they are host
// memory already (internal/hostview; the caller must not write to them), else a copy.
func readValues(a *gpuarray.Array) (dtype.Slice, error) {
	if v, ok := hostview.Values(a); ok {
		return v, nil
	}
	return a.Values()
}

// readBools is readValues as bools (a validity mask).
func readBools(a *gpuarray.Array) ([]bool, error) {
	if v, ok := hostview.Values(a); ok && v.DType() == gpuarray.Bool {
		return v.Bools(), nil
	}
	return a.ToSliceBool()
}

// readInt64s is readValues as int64s (row positions).
func readInt64s(a *gpuarray.Array) ([]int64, error) {
	if v, ok := hostview.Values(a); ok && v.DType() == gpuarray.Int64 {
		return v.Int64s(), nil
	}
	return a.ToSliceInt64()
}

// keyRange returns the smallest valid value of k and the width of its range (0: none valid;
// MaxInt64 when the range does not fit), the rows of each unit (starts) scanned in parallel.
func keyRange(k *keyData, starts []int) (int64, int64) {
	nu := len(starts) - 1
	los, his := make([]int64, max(nu, 0)), make([]int64, max(nu, 0))
	parallelDo(nu, runtime.GOMAXPROCS(0), func(u int) {
		los[u], his[u] = rangeOf(k, starts[u], starts[u+1])
	})
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for u := range los {
		lo, hi = min(lo, los[u]), max(hi, his[u])
	}
	return widthOf(lo, hi)
}

// widthOf returns lo and the width of the range [lo, hi] (0: empty, lo > hi; MaxInt64 when it
// does not fit).
func widthOf(lo, hi int64) (int64, int64) {
	if lo > hi {
		return 0, 0
	}
	w := uint64(hi) - uint64(lo) + 1
	if w == 0 || w > math.MaxInt64 {
		return lo, math.MaxInt64
	}
	return lo, int64(w)
}

// rangeOf returns the smallest and largest valid values of rows [from, to) of k (MaxInt64,
// MinInt64 when none is valid).
func rangeOf(k *keyData, from, to int) (int64, int64) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	switch {
	case k.i32 != nil && k.valid == nil:
		if from == to {
			return lo, hi
		}
		l, h := int32(math.MaxInt32), int32(math.MinInt32)
		for _, x := range k.i32[from:to] {
			l, h = min(l, x), max(h, x)
		}
		return int64(l), int64(h)
	case k.i64 != nil && k.valid == nil:
		for _, x := range k.i64[from:to] {
			lo, hi = min(lo, x), max(hi, x)
		}
	default:
		for i := from; i < to; i++ {
			if k.valid == nil || k.valid[i] {
				x := k.at(i)
				lo, hi = min(lo, x), max(hi, x)
			}
		}
	}
	return lo, hi
}

// codeSpace returns the product of the keys' ranges, and false when it passes 2^62.
func (in *groupInput) codeSpace() (uint64, bool) {
	g := uint64(1)
	for _, k := range in.keys {
		hi, lo := bits.Mul64(g, uint64(k.card))
		if hi != 0 || lo > 1<<62 {
			return 0, false
		}
		g = lo
	}
	return g, true
}

// strides are the mixed-radix strides of the keys, the first key varying slowest (as
// hashagg.DensePlan).
func (in *groupInput) strides() []int64 {
	s := make([]int64, len(in.keys))
	g := int64(1)
	for i := len(in.keys) - 1; i >= 0; i-- {
		s[i] = g
		g *= in.keys[i].card
	}
	return s
}

// keyOut is where decodeInto writes one key's values: i32 or i64, one per code.
type keyOut struct {
	i32 []int32
	i64 []int64
}

// decode returns each key's values of the groups' codes as int64 (hashagg's Keys).
func (in *groupInput) decode(codes []uint64) [][]int64 {
	outs := make([]keyOut, len(in.keys))
	parallelDo(len(outs), runtime.GOMAXPROCS(0), func(k int) { outs[k].i64 = make([]int64, len(codes)) })
	in.decodeInto(codes, outs)
	keys := make([][]int64, len(outs))
	for k, o := range outs {
		keys[k] = o.i64
	}
	return keys
}

// keyColumns returns the groups' key columns of the codes in their output types (as
// decodeInts builds them from int64 keys), decoded straight into them: int32 keys and
// categoricals' codes never pass through int64.
func (in *groupInput) keyColumns(codes []uint64) []*hostCol {
	workers := runtime.GOMAXPROCS(0)
	outs := make([]keyOut, len(in.keys))
	// Allocated (and so cleared) in parallel: with ~1e7 groups, a serial part otherwise.
	parallelDo(len(outs), workers, func(k int) {
		if adt, _ := in.keyCols[k].dt.array(); adt == gpuarray.Int32 {
			outs[k].i32 = make([]int32, len(codes))
		} else {
			outs[k].i64 = make([]int64, len(codes))
		}
	})
	in.decodeInto(codes, outs)
	cols := make([]*hostCol, len(outs))
	parallelDo(len(outs), workers, func(k int) {
		c := in.keyCols[k]
		switch {
		case outs[k].i32 != nil: // Int32, Category
			vals, _ := dtype.Of(outs[k].i32)
			cols[k] = &hostCol{name: c.name, dt: c.dt, vals: vals}
			if c.dt == Category {
				cols[k].heap = c.heap
			}
		case c.dt == String:
			// The codes of the heap's dictionary, as keyArray encoded them (owned here: no
			// copy as decodeInts makes of shared keys).
			_, dict := c.heap.encode()
			if dict.len() == 0 {
				dict = heapOf([]string{""})
			}
			cols[k] = &hostCol{name: c.name, dt: c.dt, heap: dict, vals: dtype.OfInt64(outs[k].i64)}
		default:
			cols[k] = decodeInts(c.name, c.dt, c.heap, outs[k].i64, nil)
		}
	})
	return cols
}

// decodeInto writes each key's values of the groups' codes into outs (one per key, i32 or
// i64 of len(codes)): the keys are peeled off the codes from the fastest-varying one, one
// division each, a key at a time over blocks of codes (the quotients kept in a block of
// scratch), chunks of codes in parallel.
func (in *groupInput) decodeInto(codes []uint64, outs []keyOut) {
	nk := len(in.keys)
	if nk == 0 {
		return
	}
	divs := make([]divisor, nk)
	for k := range in.keys {
		divs[k] = newDivisor(uint64(in.keys[k].card))
	}
	const chunk, block = 1 << 16, 1 << 10
	parallelDo((len(codes)+chunk-1)/chunk, runtime.GOMAXPROCS(0), func(i int) {
		var scratch [block]uint64
		for lo := i * chunk; lo < min(len(codes), (i+1)*chunk); lo += block {
			hi := min(len(codes), lo+block, (i+1)*chunk)
			src := codes[lo:hi]
			for k := nk - 1; k > 0; k-- {
				q, m := scratch[:len(src)], in.keys[k].min
				if o := outs[k]; o.i32 != nil {
					peel(o.i32[lo:hi], q, src, divs[k], m)
				} else {
					peel(o.i64[lo:hi], q, src, divs[k], m)
				}
				src = q
			}
			// The slowest key: what is left is below its card.
			if o, m := outs[0], in.keys[0].min; o.i32 != nil {
				offsetInto(o.i32[lo:hi], src, m)
			} else {
				offsetInto(o.i64[lo:hi], src, m)
			}
		}
	})
}

// peel writes min + c % d of each code c of src into out and c / d into q (q may be src).
func peel[T int32 | int64](out []T, q, src []uint64, d divisor, min int64) {
	out, q = out[:len(src)], q[:len(src)]
	for j, c := range src {
		qq, r := d.divMod(c)
		out[j], q[j] = T(min+int64(r)), qq
	}
}

// offsetInto writes min + c of each code c of src into out.
func offsetInto[T int32 | int64](out []T, src []uint64, min int64) {
	out = out[:len(src)]
	for j, c := range src {
		out[j] = T(min + int64(c))
	}
}

// divisor divides codes (below 2^62) by one d through a float64 reciprocal and an exact
// correction, where a 64-bit division per key and group was most of decode's time.
type divisor struct {
	d   uint64
	inv float64
}

func newDivisor(d uint64) divisor { return divisor{d: max(d, 1), inv: 1 / float64(max(d, 1))} }

// divMod returns c / d and c % d, exactly, for c < 2^62: the estimate from the reciprocal is
// off by about q * 2^-52 (53 bits of precision), and corrected, with one division where the
// remainder it leaves is out of [0, d). The conversions are signed (c < 2^62), single
// instructions where unsigned ones branch.
func (v divisor) divMod(c uint64) (uint64, uint64) {
	q := int64(float64(int64(c)) * v.inv)
	d := int64(v.d)
	r := int64(c) - q*d
	if uint64(r) >= v.d { // negative, or d or more
		dq := r / d
		if r%d < 0 {
			dq--
		}
		q, r = q+dq, r-dq*d
	}
	return uint64(q), uint64(r)
}

// cpuPartial groups and folds in (every spec of specs) into one partial of all groups. When it
// returns codes, the partial has no Keys: codes are its groups' mixed-radix codes, for
// keyColumns (or decode, for int64 keys).
func cpuPartial(rc *runCtx, in *groupInput, specs []hashagg.Spec) (*hashagg.Partial, []uint64, error) {
	workers := runtime.GOMAXPROCS(0)
	for _, k := range in.keys {
		if k.card == 0 { // a key with no valid row: no group
			p, err := hashagg.NewPartial(specs, in.vals, 0)
			if err != nil {
				return nil, nil, err
			}
			p.Keys = make([][]int64, len(in.keys))
			for i := range p.Keys {
				p.Keys[i] = []int64{}
			}
			return p, nil, nil
		}
	}
	if len(in.keys) == 1 {
		if k := &in.keys[0]; k.i32 != nil && k.valid == nil && k.min > 0 && k.min <= k.card {
			// One int32 key from near 0 (as 1..K): its values are its codes (a space at most
			// twice as wide: int32 values), and no pass computes codes.
			k.card += k.min
			k.min = 0
		}
	}
	space, packs := in.codeSpace()
	col, grouped := groupedCol(in, specs)
	switch {
	case packs && space <= denseMax && space <= 4*uint64(in.n)+1<<16 && grouped && groupedMedians:
		// Medians with their column's counts, means and variances: from each group's values,
		// grouped in buckets of codes (whatever the units: no states per unit and code; a few
		// words per code, so codes at most a few times the rows).
		return denseGrouped(rc, in, specs, int(space), col, workers)
	case packs && space <= denseMax && space*uint64(len(in.units)) <= 4*uint64(in.n)+1<<16:
		return densePartial(rc, in, specs, int(space), workers)
	case packs:
		codes := in.packedCodes(workers)
		if err := rc.ctxErr(); err != nil {
			return nil, nil, err
		}
		p, groups, err := hashagg.AggregateCodes(codes, math.MaxUint64, in.units, specs, in.vals, workers)
		if err != nil {
			return nil, nil, err
		}
		return p, groups, nil
	}
	p, err := hashedPartial(rc, in, specs, workers)
	return p, nil, err
}

// unitStarts returns the first row of each unit and the total.
func (in *groupInput) unitStarts() []int {
	s := make([]int, len(in.units)+1)
	for u, l := range in.units {
		s[u+1] = s[u] + l
	}
	return s
}

// codesInto writes the mixed-radix code of rows [lo, hi) into dst (skip for a null key).
func codesInto[T int32 | uint64](dst []T, in *groupInput, strides []int64, lo, hi int, skip T) {
	if !codesInt32(dst, in, strides, lo, hi) {
		codesWide(dst, in, strides, lo, hi)
	}
	for k := range in.keys {
		if v := in.keys[k].valid; v != nil {
			for j, ok := range v[lo:hi] {
				if !ok {
					dst[j] = skip
				}
			}
		}
	}
}

// codesInt32 writes the codes of int32 keys, up to three keys a pass (no sum in memory per
// key); false for other keys.
func codesInt32[T int32 | uint64](dst []T, in *groupInput, strides []int64, lo, hi int) bool {
	if len(in.keys) == 0 {
		return false
	}
	for k := range in.keys {
		if in.keys[k].i32 == nil {
			return false
		}
	}
	// Each key's term (x - min) * stride, the minima folded into one offset.
	off := int64(0)
	for k := range in.keys {
		off -= in.keys[k].min * strides[k]
	}
	col := func(k int) []int32 { return in.keys[k].i32[lo:hi][:len(dst)] }
	for k0 := 0; k0 < len(in.keys); k0 += 3 {
		first := k0 == 0
		switch m := min(3, len(in.keys)-k0); m {
		case 1:
			a, s0 := col(k0), strides[k0]
			for j, x := range a {
				if first {
					dst[j] = T(int64(x)*s0 + off)
				} else {
					dst[j] += T(int64(x) * s0)
				}
			}
		case 2:
			a, b, s0, s1 := col(k0), col(k0+1), strides[k0], strides[k0+1]
			for j, x := range a {
				if first {
					dst[j] = T(int64(x)*s0 + int64(b[j])*s1 + off)
				} else {
					dst[j] += T(int64(x)*s0 + int64(b[j])*s1)
				}
			}
		case 3:
			a, b, c := col(k0), col(k0+1), col(k0+2)
			s0, s1, s2 := strides[k0], strides[k0+1], strides[k0+2]
			for j, x := range a {
				if first {
					dst[j] = T(int64(x)*s0 + int64(b[j])*s1 + int64(c[j])*s2 + off)
				} else {
					dst[j] += T(int64(x)*s0 + int64(b[j])*s1 + int64(c[j])*s2)
				}
			}
		}
	}
	return true
}

// codesWide writes the codes of any keys, one pass per key.
func codesWide[T int32 | uint64](dst []T, in *groupInput, strides []int64, lo, hi int) {
	for i := range dst {
		dst[i] = 0
	}
	for k := range in.keys {
		key := &in.keys[k]
		st, m := strides[k], key.min
		switch {
		case key.i32 != nil:
			for j, x := range key.i32[lo:hi] {
				dst[j] += T((int64(x) - m) * st)
			}
		default:
			for j, x := range key.i64[lo:hi] {
				dst[j] += T((x - m) * st)
			}
		}
	}
}

func (in *groupInput) packedCodes(workers int) []uint64 {
	codes := make([]uint64, in.n)
	starts := in.unitStarts()
	strides := in.strides()
	parallelDo(len(in.units), workers, func(u int) {
		lo, hi := starts[u], starts[u+1]
		codesInto(codes[lo:hi], in, strides, lo, hi, math.MaxUint64)
	})
	return codes
}

// densePartial folds each unit into states indexed by code, merges them as a tree in a
// fixed order, and keeps the codes that have rows.
func densePartial(rc *runCtx, in *groupInput, specs []hashagg.Spec, space, workers int) (*hashagg.Partial, []uint64, error) {
	// Units fold the algebraic specs and a hidden Size that counts each code's rows (a group
	// is a code with rows); holistic specs take their values in one pass at the end.
	var all []hashagg.Spec
	var hol []int
	for si, sp := range specs {
		if isHolistic(sp.Op) {
			hol = append(hol, si)
		} else {
			all = append(all, sp)
		}
	}
	all = append(all, hashagg.Spec{Op: hashagg.Size})
	starts := in.unitStarts()
	strides := in.strides()
	parts := make([]*hashagg.Partial, len(in.units))
	unitIDs := make([][]int32, len(in.units))
	errs := make([]error, len(in.units))
	zero := len(in.keys) == 1 && in.keys[0].i32 != nil && in.keys[0].min == 0 && in.keys[0].valid == nil
	parallelDo(len(in.units), workers, func(u int) {
		lo, hi := starts[u], starts[u+1]
		var ids []int32
		if zero { // one int32 key from 0 (a categorical's codes): its values are the codes
			ids = in.keys[0].i32[lo:hi]
		} else {
			ids = make([]int32, hi-lo)
			codesInto(ids, in, strides, lo, hi, -1)
		}
		unitIDs[u] = ids
		vals := make([]hashagg.Values, len(in.vals))
		for i, v := range in.vals {
			vals[i] = v.Slice(lo, hi)
		}
		parts[u], errs[u] = hashagg.FoldNew(all, vals, space, ids)
	})
	for u, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("rows %d-%d: %w", starts[u], starts[u+1], err)
		}
	}
	if err := rc.ctxErr(); err != nil {
		return nil, nil, err
	}
	// A holistic spec's pairs per unit and code are the counts of an algebraic spec of the
	// same column that counts its valid values (db-benchmark q6: the median's and the std's):
	// kept before the merges add them up, they spare holisticPairs its counting pass.
	unitCnt := make(map[int][][]int64)
	if len(hol) > 0 && len(parts) > 0 && len(parts)*space <= max(in.n/4, 1<<16) {
		for _, si := range hol {
			k := slices.IndexFunc(all, func(sp hashagg.Spec) bool {
				switch sp.Op {
				case hashagg.Count, hashagg.Mean, hashagg.Var, hashagg.Std:
					return sp.Col == specs[si].Col
				}
				return false
			})
			if k < 0 {
				continue
			}
			c := make([][]int64, len(parts))
			for u, p := range parts {
				c[u] = slices.Clone(p.States[k].Cnt)
			}
			unitCnt[si] = c
		}
	}
	if len(parts) == 0 {
		p, err := hashagg.NewPartial(all, in.vals, space)
		if err != nil {
			return nil, nil, err
		}
		parts = []*hashagg.Partial{p}
	}
	// Pairwise, level by level, as treeCombine.
	for len(parts) > 1 {
		next := make([]*hashagg.Partial, (len(parts)+1)/2)
		errs := make([]error, len(next))
		parallelDo(len(next), workers, func(i int) {
			next[i] = parts[2*i]
			if 2*i+1 < len(parts) {
				errs[i] = next[i].Add(parts[2*i+1])
			}
		})
		for _, err := range errs {
			if err != nil {
				return nil, nil, err
			}
		}
		parts = next
	}
	p := parts[0]
	rows := p.States[len(all)-1].Cnt
	present := 0
	for _, r := range rows {
		if r > 0 {
			present++
		}
	}
	gs := make([]int32, 0, present)
	codes := make([]uint64, 0, present)
	for c, r := range rows {
		if r > 0 {
			gs = append(gs, int32(c))
			codes = append(codes, uint64(c))
		}
	}
	sel := p.Select(gs, nil)
	out := &hashagg.Partial{Keys: sel.Keys, N: sel.N, States: make([]hashagg.State, len(specs))}
	for si, k := 0, 0; si < len(specs); si++ {
		if slices.Contains(hol, si) {
			continue
		}
		out.States[si] = sel.States[k]
		k++
	}
	if len(hol) > 0 {
		inv := make([]int32, space)
		for i := range inv {
			inv[i] = -1
		}
		for i, c := range gs {
			inv[c] = int32(i)
		}
		for _, si := range hol {
			h, err := hashagg.NewPartial(specs[si:si+1], in.vals, sel.N)
			if err != nil {
				return nil, nil, err
			}
			st := h.States[0]
			holisticPairs(&st, sel.N, in.vals[specs[si].Col], unitIDs, starts, inv, unitCnt[si], gs, workers)
			out.States[si] = st
		}
	}
	return out, codes, nil
}

func isHolistic(op hashagg.Op) bool {
	return op == hashagg.NUnique || op == hashagg.Median || op == hashagg.Quantile
}

// holisticPairs fills st's (group, value) pairs (ng groups) from every valid row, grouped by
// group and in row order within a group (as hashagg's finalize buckets them, which then takes
// them as they are): units count their pairs per group (or take cnt, each unit's counts per
// code, gs each group's code), then write them in place. With many groups against the rows,
// in row order instead (holisticRowPairs).
func holisticPairs(st *hashagg.State, ng int, v hashagg.Values, unitIDs [][]int32, starts []int, inv []int32, cnt [][]int64, gs []int32, workers int) {
	rows := 0
	for _, ids := range unitIDs {
		rows += len(ids)
	}
	if len(unitIDs) > 0 && len(unitIDs)*ng > max(rows/4, 1<<16) {
		// A count per unit and group would outweigh the pairs: row order, bucketed later.
		holisticRowPairs(st, v, unitIDs, starts, inv, workers)
		return
	}
	if len(unitIDs) == 0 {
		st.G, st.VI, st.VF = []int32{}, nil, nil
		if st.IsInt {
			st.VI = []int64{}
		} else {
			st.VF = []float64{}
		}
		return
	}
	hist := make([][]int, len(unitIDs))
	parallelDo(len(unitIDs), workers, func(u int) {
		h := make([]int, ng)
		if cnt != nil { // counted already, per code (gs: each group's code)
			for g, c := range gs {
				h[g] = int(cnt[u][c])
			}
		} else {
			pairsOf(h, nil, nil, v, unitIDs[u], starts[u], inv)
		}
		hist[u] = h
	})
	// Group g's pairs: unit 0's, then unit 1's, ...
	at := hashagg.BucketOffsets(hist, ng)[ng]
	st.G = make([]int32, at)
	if st.IsInt {
		st.VI = make([]int64, at)
	} else {
		st.VF = make([]float64, at)
	}
	parallelDo(len(unitIDs), workers, func(u int) {
		pairsOf(hist[u], st.VI, st.VF, v, unitIDs[u], starts[u], inv)
	})
	// The groups of the pairs, in runs, from where the last unit's pairs of each group end.
	last := hist[len(hist)-1]
	parallelDo(workers, workers, func(w int) {
		lo, hi := w*ng/workers, (w+1)*ng/workers
		from := 0
		if lo > 0 {
			from = last[lo-1]
		}
		for g := lo; g < hi; g++ {
			for i := from; i < last[g]; i++ {
				st.G[i] = int32(g)
			}
			from = last[g]
		}
	})
}

// holisticRowPairs fills st's pairs in row order: units count their pairs, then write them in
// place (hashagg's finalize buckets them by group).
func holisticRowPairs(st *hashagg.State, v hashagg.Values, unitIDs [][]int32, starts []int, inv []int32, workers int) {
	counts := make([]int, len(unitIDs)+1)
	parallelDo(len(unitIDs), workers, func(u int) {
		counts[u+1] = rowPairsOf(nil, nil, nil, v, unitIDs[u], starts[u], inv)
	})
	for u := range unitIDs {
		counts[u+1] += counts[u]
	}
	n := counts[len(unitIDs)]
	st.G = make([]int32, n)
	if st.IsInt {
		st.VI = make([]int64, n)
	} else {
		st.VF = make([]float64, n)
	}
	parallelDo(len(unitIDs), workers, func(u int) {
		lo, hi := counts[u], counts[u+1]
		var vi []int64
		var vf []float64
		if st.IsInt {
			vi = st.VI[lo:hi]
		} else {
			vf = st.VF[lo:hi]
		}
		rowPairsOf(st.G[lo:hi], vi, vf, v, unitIDs[u], starts[u], inv)
	})
}

// rowPairsOf writes the pairs of one unit (rows from lo, codes ids) into g and vi or vf, or
// only counts them when g is nil.
func rowPairsOf(g []int32, vi []int64, vf []float64, v hashagg.Values, ids []int32, lo int, inv []int32) int {
	switch {
	case v.Float != nil:
		return rowPairsT(g, vi, vf, v.Float, v.Valid, ids, lo, inv)
	case v.Int32 != nil:
		return rowPairsT(g, vi, vf, v.Int32, v.Valid, ids, lo, inv)
	}
	return rowPairsT(g, vi, vf, v.Int, v.Valid, ids, lo, inv)
}

func rowPairsT[T int32 | int64 | float64](g []int32, vi []int64, vf []float64, x []T, valid []bool, ids []int32, lo int, inv []int32) int {
	k := 0
	for j, c := range ids {
		r := lo + j
		xv := x[r]
		if c < 0 || xv != xv || (valid != nil && !valid[r]) {
			continue
		}
		if g != nil {
			g[k] = inv[c]
			if vi != nil {
				vi[k] = int64(xv)
			} else {
				vf[k] = float64(xv)
			}
		}
		k++
	}
	return k
}

// pairsOf counts the pairs of one unit (rows from lo, codes ids) per group into at, or with vi
// or vf writes each pair's value at at[group] (advancing it).
func pairsOf(at []int, vi []int64, vf []float64, v hashagg.Values, ids []int32, lo int, inv []int32) {
	switch {
	case v.Float != nil:
		pairsT(at, vi, vf, v.Float, v.Valid, ids, lo, inv)
	case v.Int32 != nil:
		pairsT(at, vi, vf, v.Int32, v.Valid, ids, lo, inv)
	default:
		pairsT(at, vi, vf, v.Int, v.Valid, ids, lo, inv)
	}
}

func pairsT[T int32 | int64 | float64](at []int, vi []int64, vf []float64, x []T, valid []bool, ids []int32, lo int, inv []int32) {
	write := vi != nil || vf != nil
	for j, c := range ids {
		r := lo + j
		xv := x[r]
		if c < 0 || xv != xv || (valid != nil && !valid[r]) {
			continue
		}
		g := inv[c]
		if write {
			if vi != nil {
				vi[at[g]] = int64(xv)
			} else {
				vf[at[g]] = float64(xv)
			}
		}
		at[g]++
	}
}

// hashedPartial groups each unit with hashagg.Group over int64 keys and combines the
// partials as a tree: for keys whose ranges do not pack into one word.
func hashedPartial(rc *runCtx, in *groupInput, specs []hashagg.Spec, workers int) (*hashagg.Partial, error) {
	starts := in.unitStarts()
	wide := make([][]int64, len(in.keys))
	for k := range in.keys {
		if wide[k] = in.keys[k].i64; wide[k] == nil {
			wide[k] = make([]int64, in.n)
			for i, x := range in.keys[k].i32 {
				wide[k][i] = int64(x)
			}
		}
	}
	parts := make([]*hashagg.Partial, len(in.units))
	errs := make([]error, len(in.units))
	parallelDo(len(in.units), workers, func(u int) {
		lo, hi := starts[u], starts[u+1]
		keys := make([]hashagg.Key, len(in.keys))
		for k := range in.keys {
			keys[k].Values = wide[k][lo:hi]
			if v := in.keys[k].valid; v != nil {
				keys[k].Valid = v[lo:hi]
			}
		}
		vals := make([]hashagg.Values, len(in.vals))
		for i, v := range in.vals {
			vals[i] = v.Slice(lo, hi)
		}
		g, err := hashagg.Group(keys)
		if err == nil {
			parts[u], err = hashagg.Aggregate(g, specs, vals)
		}
		errs[u] = err
	})
	for u, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("rows %d-%d: %w", starts[u], starts[u+1], err)
		}
	}
	if err := rc.ctxErr(); err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		keys := make([]hashagg.Key, len(in.keys))
		for k := range keys {
			keys[k].Values = []int64{}
		}
		g, err := hashagg.Group(keys)
		if err != nil {
			return nil, err
		}
		return hashagg.Aggregate(g, specs, in.vals)
	}
	return treeCombine(parts)
}

// parallelDo runs f(0..n-1) on at most workers goroutines.
func parallelDo(n, workers int, f func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	done := make(chan struct{})
	w := min(workers, n)
	for range w {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range next {
				f(i)
			}
		}()
	}
	for range w {
		<-done
	}
}
