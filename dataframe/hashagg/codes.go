package hashagg

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// GroupCodes groups rows by one uint64 code each (keys packed into one word), skipping the
// rows whose code is skip: ids[i] is row i's group (-1 when skipped) and groups the code of
// each group, in order of first appearance.
func GroupCodes(codes []uint64, skip uint64) (ids []int32, groups []uint64) {
	ids = make([]int32, len(codes))
	c := 16
	for c < 2*len(codes) && c < 1<<16 {
		c <<= 1
	}
	slots := make([]int32, c) // group + 1; 0 is empty
	mask := uint64(c - 1)
	// Room for as many groups as the table holds before it grows (a radix bucket of
	// AggregateCodes, nearly all distinct at db-benchmark's q10: no append regrows).
	groups = make([]uint64, 0, min(len(codes), c/2))
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
	return ids, groups
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
	sorted := make([]uint64, at)
	rows := make([]int32, at)
	holistic := false
	for _, s := range specs {
		holistic = holistic || s.Op.holistic()
	}
	// The value columns in bucket order too, for the algebraic states: scattered with a
	// sequential read here, the folds read them in order (not through rows, a cache miss
	// each).
	var bvals []Values
	if !holistic {
		bvals = scatterValues(codes, skip, shift, starts, hist, specs, vals, at, workers)
	}
	parallel(len(units), workers, func(u int) {
		off := hist[u]
		for i := starts[u]; i < starts[u+1]; i++ {
			if x := codes[i]; x != skip {
				b := mix(x) >> shift
				sorted[off[b]], rows[off[b]] = x, int32(i)
				off[b]++
			}
		}
	})
	ids := make([]int32, at)
	groups := make([][]uint64, nb)
	parallel(nb, workers, func(b int) {
		lo, hi := bstart[b], bstart[b+1]
		var local []int32
		local, groups[b] = GroupCodes(sorted[lo:hi], skip)
		copy(ids[lo:hi], local)
	})
	base := make([]int, nb+1)
	for b := range groups {
		base[b+1] = base[b] + len(groups[b])
	}
	all := make([]uint64, 0, base[nb])
	for _, g := range groups {
		all = append(all, g...)
	}
	if holistic {
		// Holistic states append pairs: one partial per bucket, joined in order.
		parts := make([]*Partial, nb)
		errs := make([]error, nb)
		parallel(nb, workers, func(b int) {
			lo, hi := bstart[b], bstart[b+1]
			p, err := NewPartial(specs, vals, len(groups[b]))
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
// places the rows: unit by unit, the bucket offsets off[u] of each unit), other columns empty;
// nil when a spec needs positions or a column has nulls or positions, which keep the rows.
func scatterValues(codes []uint64, skip uint64, shift uint, starts []int, off [][]int, specs []Spec, vals []Values, at, workers int) []Values {
	used := make([]bool, len(vals))
	for _, s := range specs {
		switch s.Op {
		case Size:
			continue
		case Sum, Count, Min, Max, Mean, Var, Std:
		default:
			return nil
		}
		if s.Col >= len(vals) {
			return nil
		}
		if v := vals[s.Col]; v.Valid != nil || v.Pos != nil || v.len() != len(codes) {
			return nil
		}
		used[s.Col] = true
	}
	out := make([]Values, len(vals))
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
	return out
}

// scatterRows writes each row of x whose code is not skip at its bucket's next offset.
func scatterRows[T int32 | int64 | float64](dst, x []T, codes []uint64, skip uint64, shift uint, off []int) {
	x = x[:len(codes)]
	for i, c := range codes {
		if c != skip {
			b := mix(c) >> shift
			dst[off[b]] = x[i]
			off[b]++
		}
	}
}
