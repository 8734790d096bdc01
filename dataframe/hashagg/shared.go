package hashagg

import (
	"math"
	"slices"
)

// FoldNew returns the partial of specs over n groups with rows of vals folded in, row j into
// group ids[j] (none when -1): NewPartial then Fold, with the same states. The states that
// count every row of their group (Size; Count, Mean, Min and Max of an integer column without
// nulls) share one count of each group's rows instead of counting their own, so a row costs
// one count for all of them: Min and Max fold branch-free from their identity (the largest
// and smallest int64), Mean only sums.
func FoldNew(specs []Spec, vals []Values, n int, ids []int32) (*Partial, error) {
	p, err := NewPartial(specs, vals, n)
	if err != nil {
		return nil, err
	}
	shares := func(s Spec) bool {
		switch s.Op {
		case Size:
			return true
		case Count, Mean, Min, Max:
			v := vals[s.Col]
			return v.IsInt() && v.Valid == nil
		}
		return false
	}
	// The shared count of each group's rows: the first Size state's counts, or their own. One
	// Sum or Mean of an integer column without nulls is folded in the same pass.
	var rows []int64
	held, fused := -1, -1
	if slices.ContainsFunc(p.States, func(st State) bool { return shares(st.Spec) }) {
		if held = slices.IndexFunc(p.States, func(t State) bool { return t.Spec.Op == Size }); held >= 0 {
			rows = p.States[held].Cnt
		} else {
			rows = make([]int64, n)
		}
		fused = slices.IndexFunc(p.States, func(t State) bool {
			if op := t.Spec.Op; (op != Sum || !t.IsInt) && op != Mean && op != Min && op != Max || t.Spec.Col >= len(vals) {
				return false
			}
			v := vals[t.Spec.Col]
			return v.IsInt() && v.Valid == nil && v.len() >= len(ids)
		})
		switch st := &p.States[max(fused, 0)]; {
		case fused < 0:
			foldSize(rows, ids)
		case st.Spec.Op == Min || st.Spec.Op == Max:
			if v := vals[st.Spec.Col]; v.Int32 != nil {
				extremesCount(st.SumI, rows, ids, v.Int32, st.Spec.Op == Min)
			} else {
				extremesCount(st.SumI, rows, ids, v.Int, st.Spec.Op == Min)
			}
		case vals[st.Spec.Col].Int32 != nil && st.Spec.Op == Sum:
			sumCount(st.SumI, rows, ids, vals[st.Spec.Col].Int32)
		case st.Spec.Op == Sum:
			sumCount(st.SumI, rows, ids, vals[st.Spec.Col].Int)
		case vals[st.Spec.Col].Int32 != nil:
			sumCount(st.SumF, rows, ids, vals[st.Spec.Col].Int32)
		default:
			sumCount(st.SumF, rows, ids, vals[st.Spec.Col].Int)
		}
	}
	// With few groups (states in L1/L2) a pass updates two states about as fast as one:
	// plain sums are folded two a pass.
	var sums []sumJob
	pairs := n <= pairGroups
	for si := range p.States {
		st := &p.States[si]
		if pairs && si != fused {
			if j, ok := sumJobOf(st, shares(st.Spec), vals, len(ids)); ok {
				sums = append(sums, j)
				if shares(st.Spec) {
					copy(st.Cnt, rows)
				}
				continue
			}
		}
		if si == fused {
			if op := st.Spec.Op; op == Min || op == Max {
				noRowsZero(st.SumI, rows)
			}
			if st.Spec.Op != Sum {
				copy(st.Cnt, rows)
			}
			continue // folded with the count
		}
		if st.Spec.Op == Mean && rows != nil && st.Spec.Col < len(vals) {
			// A Mean of floats without nulls counts its NaNs, the rare case, and takes its
			// count from the rows': one random update a row fewer.
			if v := vals[st.Spec.Col]; v.Float != nil && v.Valid == nil && len(v.Float) == len(ids) {
				sumNaNs(st.SumF, st.Cnt, ids, v.Float)
				for g, r := range rows {
					st.Cnt[g] = r - st.Cnt[g]
				}
				continue
			}
		}
		if !shares(st.Spec) {
			if err := foldState(st, ids, nil, vals); err != nil {
				return nil, err
			}
			continue
		}
		if st.Spec.Op == Size {
			if si != held {
				copy(st.Cnt, rows)
			}
			continue
		}
		v, err := foldColumn(st, st.Spec.Col, ids, nil, vals)
		if err != nil {
			return nil, err
		}
		switch op := st.Spec.Op; {
		case op == Mean && v.Int32 != nil:
			sumFloat(st.SumF, nil, ids, nil, v.Int32, nil)
		case op == Mean:
			sumFloat(st.SumF, nil, ids, nil, v.Int, nil)
		case op == Min || op == Max:
			if v.Int32 != nil {
				extremes(st.SumI, ids, v.Int32, op == Min)
			} else {
				extremes(st.SumI, ids, v.Int, op == Min)
			}
			noRowsZero(st.SumI, rows)
		}
		copy(st.Cnt, rows)
	}
	for i := 0; i+1 < len(sums); i += 2 {
		fold2(sums[i], sums[i+1], ids)
	}
	if len(sums)%2 == 1 {
		fold2(sums[len(sums)-1], sumJob{}, ids)
	}
	return p, nil
}

// pairGroups is the most groups for which FoldNew folds plain sums two a pass.
const pairGroups = 4096

// sumJob is one plain sum of a state: values v (no nulls) added into sumI or sumF, counted
// (not NaN) into cnt unless it is nil.
type sumJob struct {
	sumI []int64
	sumF []float64
	cnt  []int64
	v    Values
}

// sumJobOf returns st's fold as a plain sum, as foldState or (shared: its rows counted with
// the others') FoldNew would fold it: a Sum, or a Mean; false for other states, and columns
// with nulls or of the wrong length.
func sumJobOf(st *State, shared bool, vals []Values, rows int) (sumJob, bool) {
	s := st.Spec
	if s.Op != Sum && s.Op != Mean || s.Col < 0 || s.Col >= len(vals) {
		return sumJob{}, false
	}
	v := vals[s.Col]
	if v.Valid != nil || v.len() != rows || st.IsInt != v.IsInt() {
		return sumJob{}, false
	}
	switch {
	case s.Op == Sum && st.IsInt:
		return sumJob{sumI: st.SumI, v: v}, true
	case s.Op == Sum:
		return sumJob{sumF: st.SumF, v: v}, true
	case shared:
		return sumJob{sumF: st.SumF, v: v}, true
	}
	return sumJob{sumF: st.SumF, cnt: st.Cnt, v: v}, true
}

// fold2 folds a and b (b may be empty) in one pass over ids.
func fold2(a, b sumJob, ids []int32) {
	switch {
	case a.sumI != nil && a.v.Int32 != nil:
		fold2b(a.sumI, a.cnt, a.v.Int32, b, ids)
	case a.sumI != nil:
		fold2b(a.sumI, a.cnt, a.v.Int, b, ids)
	case a.v.Int32 != nil:
		fold2b(a.sumF, a.cnt, a.v.Int32, b, ids)
	case a.v.Float == nil:
		fold2b(a.sumF, a.cnt, a.v.Int, b, ids)
	default:
		fold2b(a.sumF, a.cnt, a.v.Float, b, ids)
	}
}

func fold2b[T1 int32 | int64 | float64, A1 int64 | float64](s1 []A1, c1 []int64, x1 []T1, b sumJob, ids []int32) {
	switch {
	case b.sumI == nil && b.sumF == nil:
		sum2[T1, T1, A1, A1](s1, c1, x1, nil, nil, nil, ids)
	case b.sumI != nil && b.v.Int32 != nil:
		sum2(s1, c1, x1, b.sumI, b.cnt, b.v.Int32, ids)
	case b.sumI != nil:
		sum2(s1, c1, x1, b.sumI, b.cnt, b.v.Int, ids)
	case b.v.Int32 != nil:
		sum2(s1, c1, x1, b.sumF, b.cnt, b.v.Int32, ids)
	case b.v.Float == nil:
		sum2(s1, c1, x1, b.sumF, b.cnt, b.v.Int, ids)
	default:
		sum2(s1, c1, x1, b.sumF, b.cnt, b.v.Float, ids)
	}
}

// sum2 adds x1 into s1 and x2 into s2 (row j to group ids[j]; none when -1; NaNs skipped),
// counting the values added into c1 and c2 unless nil; s2 nil: x1 only. Each group's values
// are added in row order, as sumInt and sumFloat add them.
func sum2[T1, T2 int32 | int64 | float64, A1, A2 int64 | float64](s1 []A1, c1 []int64, x1 []T1, s2 []A2, c2 []int64, x2 []T2, ids []int32) {
	x1 = x1[:len(ids)]
	k1, k2 := c1 != nil, c2 != nil
	if s2 == nil {
		for j, g := range ids {
			if v := x1[j]; g >= 0 && v == v {
				s1[g] += A1(v)
				if k1 {
					c1[g]++
				}
			}
		}
		return
	}
	x2 = x2[:len(ids)]
	for j, g := range ids {
		if g < 0 {
			continue
		}
		if v := x1[j]; v == v {
			s1[g] += A1(v)
			if k1 {
				c1[g]++
			}
		}
		if v := x2[j]; v == v {
			s2[g] += A2(v)
			if k2 {
				c2[g]++
			}
		}
	}
}

// extremes folds x (row j to group ids[j]) into the minima (isMin) or maxima m, from their
// identity: no branch on a group's first value.
func extremes[T int32 | int64](m []int64, ids []int32, x []T, isMin bool) {
	x = x[:len(ids)]
	if isMin {
		for g := range m {
			m[g] = math.MaxInt64
		}
		for j, g := range ids {
			if g >= 0 {
				m[g] = min(m[g], int64(x[j]))
			}
		}
		return
	}
	for g := range m {
		m[g] = math.MinInt64
	}
	for j, g := range ids {
		if g >= 0 {
			m[g] = max(m[g], int64(x[j]))
		}
	}
}

// sumCount adds x into sum and counts the rows into cnt (row j to group ids[j]; none when -1)
// in one pass: sumInt (or sumFloat of integers) and foldSize together.
func sumCount[T int32 | int64, A int64 | float64](sum []A, cnt []int64, ids []int32, x []T) {
	x = x[:len(ids)]
	// With many groups (two states beyond L2) the count and the sum in one word: one random
	// update a row fewer, for a scan of x (packable) that costs as much as the fold itself
	// where the states stay in the cache.
	if xs, ok := any(x).([]int32); ok && len(cnt) > packGroups {
		if si, ok := any(sum).([]int64); ok && packable(cnt, len(ids), xs) {
			sumCountPacked(si, cnt, ids, xs)
			return
		}
	}
	for j, g := range ids {
		if g >= 0 {
			sum[g] += A(x[j])
			cnt[g]++
		}
	}
}

// packGroups is the most groups for which sumCount keeps the count and the sum apart.
const packGroups = 1 << 15

// packable reports whether sumCountPacked can fold rows int32 values x into cnt: the counts
// and the rows stay below 2^31 and the sum of any group's values within [-2^31, 2^31) (rows
// times the largest magnitude of x).
func packable(cnt []int64, rows int, x []int32) bool {
	if rows >= 1<<31 || len(x) < rows {
		return false
	}
	lo, hi := int32(0), int32(0)
	for _, v := range x[:rows] {
		lo, hi = min(lo, v), max(hi, v)
	}
	if m := max(-int64(lo), int64(hi)); m*int64(rows) >= 1<<31 {
		return false
	}
	top := int64(0)
	for _, c := range cnt {
		top = max(top, c)
	}
	return top >= 0 && top+int64(rows) < 1<<31
}

// sumCountPacked is sumCount with each group's count and sum in one word of cnt (count in
// the low 32 bits, the sum above: one random update a row instead of two), split into sum
// and cnt afterwards, in order. Exact under packable's bounds: the count never carries into
// the sum, and the sum's 32 bits hold it.
func sumCountPacked(sum, cnt []int64, ids []int32, x []int32) {
	x = x[:len(ids)]
	for j, g := range ids {
		if g >= 0 {
			cnt[g] += 1 + int64(x[j])<<32
		}
	}
	sum = sum[:len(cnt)]
	for g, w := range cnt {
		c := w & (1<<32 - 1)
		sum[g] += (w - c) >> 32
		cnt[g] = c
	}
}

// noRowsZero sets the extremes of the groups without rows to 0, the zero state, as Fold
// leaves them.
func noRowsZero(m, rows []int64) {
	for g, r := range rows {
		if r == 0 {
			m[g] = 0
		}
	}
}

// extremesCount is extremes and foldSize in one pass.
func extremesCount[T int32 | int64](m, cnt []int64, ids []int32, x []T, isMin bool) {
	x = x[:len(ids)]
	id := int64(math.MinInt64)
	if isMin {
		id = math.MaxInt64
	}
	for g := range m {
		m[g] = id
	}
	if isMin {
		for j, g := range ids {
			if g >= 0 {
				m[g] = min(m[g], int64(x[j]))
				cnt[g]++
			}
		}
		return
	}
	for j, g := range ids {
		if g >= 0 {
			m[g] = max(m[g], int64(x[j]))
			cnt[g]++
		}
	}
}

// sumNaNs adds the values of x that are not NaN into sum and counts the NaNs into nan (row j
// to group ids[j]; none when -1).
func sumNaNs(sum []float64, nan []int64, ids []int32, x []float64) {
	x = x[:len(ids)]
	for j, g := range ids {
		if g < 0 {
			continue
		}
		if v := x[j]; v == v {
			sum[g] += v
		} else {
			nan[g]++
		}
	}
}
