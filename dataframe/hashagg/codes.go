package hashagg

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// GroupCodes groups rows by one uint64 code each (keys packed into one word), skipping the
// rows whose code is skip: ids[i] is row i's group (-1 when skipped) and groups the code of
// each group, in order of first appearance.
func GroupCodes(codes []uint64, skip uint64) (ids []int32, groups []uint64) {
	ids = make([]int32, len(codes))
	groups = groupCodesInto(ids, make([]uint64, 0, len(codes)), codes, skip, nil)
	return ids, groups
}

// slotsFor returns the starting size of the hash table of n rows.
func slotsFor(n int) int {
	c := 16
	for c < 2*n && c < 1<<16 {
		c <<= 1
	}
	return c
}

// groupCodesInto is GroupCodes writing row i's group into ids[i] and appending the groups'
// codes to groups, which may share codes' memory from codes' start (a group is appended
// after its first row is read: the j-th group lands at or before row j). scratch, when big
// enough, holds the table's slots (cleared here); a worker reuses it from bucket to bucket.
func groupCodesInto(ids []int32, groups, codes []uint64, skip uint64, scratch []int32) []uint64 {
	ids = ids[:len(codes)]
	c := slotsFor(len(codes))
	var slots []int32 // group + 1; 0 is empty
	if len(scratch) >= c {
		slots = scratch[:c]
		clear(slots)
	} else {
		slots = make([]int32, c)
	}
	mask := uint64(c - 1)
	for i, x := range codes {
		if x == skip {
			ids[i] = -1
			continue
		}
		s := mix(x) & mask
		for {
			g := slots[s]
			if g == 0 {
				g = int32(len(groups)) + 1
				slots[s] = g
				groups = append(groups, x)
				if 2*len(groups) > len(slots) {
					slots, mask = regrow(groups, 2*len(slots))
				}
				ids[i] = g - 1
				break
			}
			if groups[g-1] == x {
				ids[i] = g - 1
				break
			}
			s = (s + 1) & mask
		}
	}
	return groups
}

func regrow(groups []uint64, c int) ([]int32, uint64) {
	slots := make([]int32, c)
	mask := uint64(c - 1)
	for g, x := range groups {
		s := mix(x) & mask
		for slots[s] != 0 {
			s = (s + 1) & mask
		}
		slots[s] = int32(g + 1)
	}
	return slots, mask
}

// parallel runs f(0..n-1) on at most workers goroutines.
func parallel(n, workers int, f func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// BucketOffsets turns counts[u][b], unit u's rows of bucket b (b < nb), into unit u's first
// slot in bucket b, in place, where bucket b holds unit 0's rows, then unit 1's, ... (row
// order within a bucket), and returns where each bucket starts (nb+1 values, the last the
// total).
func BucketOffsets(counts [][]int, nb int) []int {
	start := make([]int, nb+1)
	at := 0
	for b := 0; b < nb; b++ {
		start[b] = at
		for _, h := range counts {
			c := h[b]
			h[b] = at
			at += c
		}
	}
	start[nb] = at
	return start
}

// parallelEach runs f(0..n-1) on at most workers goroutines, each with its own f from
// newWorker (scratch kept from one index to the next).
func parallelEach(n, workers int, newWorker func() func(i int)) {
	if workers <= 1 || n <= 1 {
		f := newWorker()
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := newWorker()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// bucketRows is the rows per radix bucket AggregateCodes aims at: a bucket's hash table and
// states stay in the cache.
const bucketRows = 1 << 15

// AggregateCodes groups rows by their packed codes (skip: no group) and folds vals over the
// groups, for many groups: rows are radix-partitioned by code hash into buckets (scattered
// per unit, units being row counts in order), each bucket grouped and folded on its own, with
// at most workers goroutines. The partial has no Keys; groups holds each group's code.
// Results do not depend on workers.
func AggregateCodes(codes []uint64, skip uint64, units []int, specs []Spec, vals []Values, workers int) (*Partial, []uint64, error) {
	n := len(codes)
	if n > 1<<31-1 {
		return nil, nil, fmt.Errorf("hashagg.AggregateCodes: %d rows, at most %d", n, 1<<31-1)
	}
	bb := min(10, bits.Len(uint(n/bucketRows)))
	if bb == 0 {
		ids, groups := GroupCodes(codes, skip)
		p, err := NewPartial(specs, vals, len(groups))
		if err == nil {
			err = p.Fold(ids, nil, vals)
		}
		return p, groups, err
	}
	nb, shift := 1<<bb, uint(64-bb)
	starts := make([]int, len(units)+1)
	for u, l := range units {
		starts[u+1] = starts[u] + l
	}
	if starts[len(units)] != n {
		return nil, nil, fmt.Errorf("hashagg.AggregateCodes: units hold %d rows of %d", starts[len(units)], n)
	}
	hist := make([][]int, len(units))
	parallel(len(units), workers, func(u int) {
		h := make([]int, nb)
		for _, x := range codes[starts[u]:starts[u+1]] {
			if x != skip {
				h[mix(x)>>shift]++
			}
		}
		hist[u] = h
	})
	// Bucket b holds unit 0's rows of b, then unit 1's, ...: row order within a bucket.
	bstart := BucketOffsets(hist, nb)
	at := bstart[nb]
	holistic := false
	for _, s := range specs {
		holistic = holistic || s.Op.holistic()
	}
	// The value columns in bucket order too, for the algebraic states: scattered with a
	// sequential read here, the folds read them in order (not through rows, a cache miss
	// each). The first of them goes with the codes, in the same pass.
	var bvals []Values
	first := -1
	if !holistic {
		bvals, first = scatterValues(codes, skip, shift, starts, hist, specs, vals, at, workers)
	}
	sorted := make([]uint64, at)
	var rows []int32 // each placed row's index, where states read vals through rows
	if bvals == nil {
		rows = make([]int32, at)
	}
	parallel(len(units), workers, func(u int) {
		off := hist[u]
		lo, hi := starts[u], starts[u+1]
		switch {
		case rows != nil:
			for i := lo; i < hi; i++ {
				if x := codes[i]; x != skip {
					b := mix(x) >> shift
					sorted[off[b]], rows[off[b]] = x, int32(i)
					off[b]++
				}
			}
		case first < 0:
			scatterRows(sorted, codes[lo:hi], codes[lo:hi], skip, shift, off)
		default:
			v, d := vals[first], bvals[first]
			switch {
			case v.Float != nil:
				scatterPair(sorted, d.Float, v.Float[lo:hi], codes[lo:hi], skip, shift, off)
			case v.Int32 != nil:
				scatterPair(sorted, d.Int32, v.Int32[lo:hi], codes[lo:hi], skip, shift, off)
			default:
				scatterPair(sorted, d.Int, v.Int[lo:hi], codes[lo:hi], skip, shift, off)
			}
		}
	})
	// Each bucket grouped on its own: ids in place, its groups' codes written over its own
	// codes (sorted[lo:], as they are read), the hash table's slots kept by the worker.
	ids := make([]int32, at)
	ngroups := make([]int, nb)
	parallelEach(nb, workers, func() func(int) {
		scratch := make([]int32, slotsFor(bucketRows*2))
		return func(b int) {
			lo, hi := bstart[b], bstart[b+1]
			ngroups[b] = len(groupCodesInto(ids[lo:hi], sorted[lo:lo:hi], sorted[lo:hi], skip, scratch))
		}
	})
	base := make([]int, nb+1)
	for b, g := range ngroups {
		base[b+1] = base[b] + g
	}
	// The groups' codes, bucket after bucket, moved down in order where a bucket's rows
	// held repeated codes (base[b] <= bstart[b]: a move overwrites only codes already
	// moved or read).
	for b := range nb {
		if base[b] != bstart[b] {
			copy(sorted[base[b]:base[b+1]], sorted[bstart[b]:bstart[b]+ngroups[b]])
		}
	}
	all := sorted[:base[nb]:base[nb]]
	if holistic {
		// Holistic states append pairs: one partial per bucket, joined in order.
		parts := make([]*Partial, nb)
		errs := make([]error, nb)
		parallel(nb, workers, func(b int) {
			lo, hi := bstart[b], bstart[b+1]
			p, err := NewPartial(specs, vals, ngroups[b])
			if err == nil {
				err = p.Fold(ids[lo:hi], rows[lo:hi], vals)
			}
			parts[b], errs[b] = p, err
		})
		for _, err := range errs {
			if err != nil {
				return nil, nil, err
			}
		}
		for _, p := range parts {
			p.Keys = [][]int64{}
		}
		p, err := Concat(parts...)
		if err != nil {
			return nil, nil, err
		}
		p.Keys = nil
		return p, all, nil
	}
	// Algebraic states: one partial; buckets own disjoint ranges of groups.
	p, err := NewPartial(specs, vals, base[nb])
	if err != nil {
		return nil, nil, err
	}
	errs := make([]error, nb)
	parallel(nb, workers, func(b int) {
		lo, hi := bstart[b], bstart[b+1]
		seg := ids[lo:hi]
		for j := range seg {
			seg[j] += int32(base[b])
		}
		if bvals == nil {
			errs[b] = p.Fold(seg, rows[lo:hi], vals)
			return
		}
		bv := make([]Values, len(bvals))
		for c, v := range bvals {
			if v.len() == at {
				bv[c] = v.Slice(lo, hi)
			}
		}
		errs[b] = p.Fold(seg, nil, bv)
	})
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return p, all, nil
}

// scatterValues returns the value columns that specs read in bucket order (as AggregateCodes
// places the rows: unit by unit, the bucket offsets off[u] of each unit), other columns empty,
// and the first such column, -1 when none: that one allocated only, for the caller to scatter
// with the codes (scatterPair). Nil when a spec needs positions or a column has nulls or
// positions, which keep the rows.
func scatterValues(codes []uint64, skip uint64, shift uint, starts []int, off [][]int, specs []Spec, vals []Values, at, workers int) ([]Values, int) {
	used := make([]bool, len(vals))
	for _, s := range specs {
		switch s.Op {
		case Size:
			continue
		case Sum, Count, Min, Max, Mean, Var, Std:
		default:
			return nil, -1
		}
		if s.Col >= len(vals) {
			return nil, -1
		}
		if v := vals[s.Col]; v.Valid != nil || v.Pos != nil || v.len() != len(codes) {
			return nil, -1
		}
		used[s.Col] = true
	}
	out := make([]Values, len(vals))
	first := slices.Index(used, true)
	for c, v := range vals {
		if !used[c] {
			continue
		}
		switch {
		case v.Float != nil:
			out[c].Float = make([]float64, at)
		case v.Int32 != nil:
			out[c].Int32 = make([]int32, at)
		default:
			out[c].Int = make([]int64, at)
		}
		if c == first {
			continue
		}
		parallel(len(off), workers, func(u int) {
			o := slices.Clone(off[u])
			lo, hi := starts[u], starts[u+1]
			switch {
			case v.Float != nil:
				scatterRows(out[c].Float, v.Float[lo:hi], codes[lo:hi], skip, shift, o)
			case v.Int32 != nil:
				scatterRows(out[c].Int32, v.Int32[lo:hi], codes[lo:hi], skip, shift, o)
			default:
				scatterRows(out[c].Int, v.Int[lo:hi], codes[lo:hi], skip, shift, o)
			}
		})
	}
	return out, first
}

// scatterPair writes each code whose code is not skip and its row of x at its bucket's next
// offset (off, advanced), into dc and dx.
func scatterPair[T int32 | int64 | float64](dc []uint64, dx, x []T, codes []uint64, skip uint64, shift uint, off []int) {
	x = x[:len(codes)]
	for i, c := range codes {
		if c != skip {
			b := mix(c) >> shift
			o := off[b]
			dc[o], dx[o] = c, x[i]
			off[b] = o + 1
		}
	}
}

// scatterRows writes each row of x whose code is not skip at its bucket's next offset.
func scatterRows[T int32 | int64 | float64 | uint64](dst, x []T, codes []uint64, skip uint64, shift uint, off []int) {
	x = x[:len(codes)]
	for i, c := range codes {
		if c != skip {
			b := mix(c) >> shift
			dst[off[b]] = x[i]
			off[b]++
		}
	}
}
