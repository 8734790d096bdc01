package dataframe

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
)

// The dense path for medians and quantiles (db-benchmark q6: the median and the std of v3 by
// id4, id5): each group's values are brought together in two cache-sized steps instead of one
// scatter of every row into its group (a cache and TLB miss a row with 1e4 groups), and every
// spec is then computed from them while they are in the cache. Rows go first to buckets of
// 1<<shift consecutive codes (a few hundred write streams), with their code's low bits; then
// each bucket, about groupedBucketRows rows, is counted and placed by group in a scratch
// buffer of its worker, and its groups' medians, quantiles, counts, means and variances
// (two passes: the sum, then the squared deviations from the mean) are computed there.

// groupedBucketRows is about how many rows one bucket of denseGrouped holds: its values, low
// codes and grouped copy stay in L2.
const groupedBucketRows = 1 << 15

// groupedCol returns the value column that every spec reads when denseGrouped can compute
// them all from each group's values: at least one Median or Quantile, the others Size, Count,
// Mean, Var or Std of the same column (nulls and NaNs skipped).
func groupedCol(in *groupInput, specs []hashagg.Spec) (int, bool) {
	col, hol := -1, false
	for _, s := range specs {
		switch s.Op {
		case hashagg.Size:
			continue
		case hashagg.Median, hashagg.Quantile:
			hol = true
		case hashagg.Count, hashagg.Mean, hashagg.Var, hashagg.Std:
		default:
			return 0, false
		}
		if col >= 0 && s.Col != col {
			return 0, false
		}
		col = s.Col
	}
	if !hol || col < 0 || col >= len(in.vals) {
		return 0, false
	}
	v := in.vals[col]
	if v.Valid != nil && len(v.Valid) != in.n {
		return 0, false
	}
	switch {
	case v.Float != nil:
		return col, len(v.Float) == in.n
	case v.Int32 != nil:
		return col, len(v.Int32) == in.n
	}
	return col, len(v.Int) == in.n
}

// groupedCalls counts denseGrouped's runs (tests check which path ran).
var groupedCalls atomic.Int64

// groupedStats is what denseGrouped computes per code.
type groupedStats struct {
	rows, cnt []int64     // rows; values that are not NaN
	sum       []float64   // Mean
	mean, m2  []float64   // Var, Std
	q         [][]float64 // each quantile spec's value (median: 0.5)
}

// denseGrouped computes specs (groupedCol's: every one from value column col) over space dense
// codes, as densePartial would, from each group's values grouped in buckets (see above).
// Values of a group are taken in row order; results do not depend on workers.
func denseGrouped(rc *runCtx, in *groupInput, specs []hashagg.Spec, space, col, workers int) (*hashagg.Partial, []uint64, error) {
	groupedCalls.Add(1)
	starts := in.unitStarts()
	strides := in.strides()
	zero := len(in.keys) == 1 && in.keys[0].i32 != nil && in.keys[0].min == 0 && in.keys[0].valid == nil
	per := float64(in.n) / float64(max(space, 1)) // rows per code
	shift := 0
	for shift < 16 && float64(int(2)<<shift)*per <= groupedBucketRows {
		shift++
	}
	for shift < 16 && space>>shift >= 1024 {
		shift++
	}
	nb := (space + 1<<shift - 1) >> shift
	nu := len(in.units)
	ids := make([][]int32, nu)
	hist := make([][]int, nu)
	parallelDo(nu, workers, func(u int) {
		lo, hi := starts[u], starts[u+1]
		var id []int32
		if zero { // the key's values are the codes
			id = in.keys[0].i32[lo:hi]
		} else {
			id = make([]int32, hi-lo)
			codesInto(id, in, strides, lo, hi, -1)
		}
		ids[u] = id
		h := make([]int, nb)
		for _, c := range id {
			if c >= 0 {
				h[c>>shift]++
			}
		}
		hist[u] = h
	})
	if err := rc.ctxErr(); err != nil {
		return nil, nil, err
	}
	// Bucket b holds unit 0's rows of b, then unit 1's, ...: row order within a bucket.
	bstart := hashagg.BucketOffsets(hist, nb)
	at := bstart[nb]
	vals := make([]float64, at)
	lows := make([]uint16, at)
	v := in.vals[col]
	parallelDo(nu, workers, func(u int) {
		lo, hi := starts[u], starts[u+1]
		var valid []bool
		if v.Valid != nil {
			valid = v.Valid[lo:hi]
		}
		switch {
		case v.Float != nil:
			scatterLow(vals, lows, hist[u], ids[u], v.Float[lo:hi], valid, shift)
		case v.Int32 != nil:
			scatterLow(vals, lows, hist[u], ids[u], v.Int32[lo:hi], valid, shift)
		default:
			scatterLow(vals, lows, hist[u], ids[u], v.Int[lo:hi], valid, shift)
		}
	})
	if err := rc.ctxErr(); err != nil {
		return nil, nil, err
	}
	st := groupedStats{rows: make([]int64, space), cnt: make([]int64, space)}
	var qs []float64
	for _, s := range specs {
		switch s.Op {
		case hashagg.Mean:
			if st.sum == nil {
				st.sum = make([]float64, space)
			}
		case hashagg.Var, hashagg.Std:
			if st.mean == nil {
				st.mean, st.m2 = make([]float64, space), make([]float64, space)
			}
		case hashagg.Median, hashagg.Quantile:
			q := s.Q
			if s.Op == hashagg.Median {
				q = 0.5
			}
			qs = append(qs, q)
			st.q = append(st.q, make([]float64, space))
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, nb) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newBucketWork(shift)
			for b := int(next.Add(1) - 1); b < nb; b = int(next.Add(1) - 1) {
				w.bucket(&st, qs, vals[bstart[b]:bstart[b+1]], lows[bstart[b]:bstart[b+1]], b<<shift, space)
			}
		}()
	}
	wg.Wait()
	if err := rc.ctxErr(); err != nil {
		return nil, nil, err
	}
	// The codes with rows are the groups, in code order (as densePartial's).
	codes := make([]uint64, 0, space)
	for c, r := range st.rows {
		if r > 0 {
			codes = append(codes, uint64(c))
		}
	}
	n := len(codes)
	gather := func(src []float64) []float64 {
		out := make([]float64, n)
		for i, c := range codes {
			out[i] = src[c]
		}
		return out
	}
	gatherI := func(src []int64) []int64 {
		out := make([]int64, n)
		for i, c := range codes {
			out[i] = src[c]
		}
		return out
	}
	p := &hashagg.Partial{N: n, States: make([]hashagg.State, len(specs))}
	isInt := v.IsInt()
	k := 0
	for si, s := range specs {
		out := hashagg.State{Spec: s, IsInt: isInt}
		switch s.Op {
		case hashagg.Size:
			out.IsInt, out.Cnt = false, gatherI(st.rows)
		case hashagg.Count:
			out.Cnt = gatherI(st.cnt)
		case hashagg.Mean:
			out.Cnt, out.SumF = gatherI(st.cnt), gather(st.sum)
		case hashagg.Var, hashagg.Std:
			out.Cnt, out.Mean, out.M2 = gatherI(st.cnt), gather(st.mean), gather(st.m2)
		default: // Median, Quantile: finished values
			out.Cnt, out.Final = gatherI(st.cnt), gather(st.q[k])
			k++
		}
		p.States[si] = out
	}
	return p, codes, nil
}

// scatterLow writes each row of x whose code (ids) is not negative, as a float64 (NaN where
// valid, when not nil, says null), at its bucket's next offset (off, advanced), with the
// code's low shift bits.
func scatterLow[T int32 | int64 | float64](vals []float64, lows []uint16, off []int, ids []int32, x []T, valid []bool, shift int) {
	x = x[:len(ids)]
	mask := int32(1)<<shift - 1
	if valid != nil {
		valid = valid[:len(ids)]
		for i, c := range ids {
			if c >= 0 {
				b := c >> shift
				o := off[b]
				vals[o], lows[o] = float64(x[i]), uint16(c&mask)
				if !valid[i] {
					vals[o] = math.NaN()
				}
				off[b] = o + 1
			}
		}
		return
	}
	for i, c := range ids {
		if c >= 0 {
			b := c >> shift
			o := off[b]
			vals[o], lows[o] = float64(x[i]), uint16(c&mask)
			off[b] = o + 1
		}
	}
}

// bucketWork is one worker's scratch for the buckets of denseGrouped.
type bucketWork struct {
	rows    []int64
	start   []int // group j's values: grouped[start[j]:start[j+1]]
	at      []int
	grouped []float64
}

func newBucketWork(shift int) *bucketWork {
	m := 1 << shift
	return &bucketWork{rows: make([]int64, m), start: make([]int, m+1), at: make([]int, m)}
}

// bucket computes st's values of the codes base..base+1<<shift-1 (below space) from the
// bucket's rows: values x (NaN: a row without a value) with their codes' low bits.
func (w *bucketWork) bucket(st *groupedStats, qs []float64, x []float64, low []uint16, base, space int) {
	clear(w.rows)
	clear(w.start)
	low = low[:len(x)]
	for i, l := range low {
		w.rows[l]++
		if v := x[i]; v == v {
			w.start[l+1]++
		}
	}
	m := len(w.rows)
	for j := 1; j <= m; j++ {
		w.start[j] += w.start[j-1]
	}
	copy(w.at, w.start[:m])
	w.grouped = slices.Grow(w.grouped[:0], w.start[m])[:w.start[m]]
	g := w.grouped
	for i, l := range low {
		if v := x[i]; v == v {
			g[w.at[l]] = v
			w.at[l]++
		}
	}
	for j := 0; j < m && base+j < space; j++ {
		c := base + j
		st.rows[c] = w.rows[j]
		vs := g[w.start[j]:w.start[j+1]]
		st.cnt[c] = int64(len(vs))
		if len(vs) == 0 {
			for k := range qs {
				st.q[k][c] = math.NaN()
			}
			continue
		}
		if st.sum != nil || st.mean != nil {
			s := 0.0
			for _, v := range vs {
				s += v
			}
			if st.sum != nil {
				st.sum[c] = s
			}
			if st.mean != nil {
				mu := s / float64(len(vs))
				m2 := 0.0
				for _, v := range vs {
					d := v - mu
					m2 += d * d
				}
				st.mean[c], st.m2[c] = mu, m2
			}
		}
		for k, q := range qs {
			st.q[k][c] = hashagg.QuantileSelect(vs, q)
		}
	}
}
