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
			if (t.Spec.Op != Sum || !t.IsInt) && t.Spec.Op != Mean || t.Spec.Col >= len(vals) {
				return false
			}
			v := vals[t.Spec.Col]
			return v.IsInt() && v.Valid == nil && v.len() >= len(ids)
		})
		switch st := &p.States[max(fused, 0)]; {
		case fused < 0:
			foldSize(rows, ids)
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
	for si := range p.States {
		st := &p.States[si]
		if si == fused {
			if st.Spec.Op == Mean {
				copy(st.Cnt, rows)
			}
			continue // folded with the count
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
			for g, r := range rows {
				if r == 0 { // no row: the zero state, as Fold leaves it
					st.SumI[g] = 0
				}
			}
		}
		copy(st.Cnt, rows)
	}
	return p, nil
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
	for j, g := range ids {
		if g >= 0 {
			sum[g] += A(x[j])
			cnt[g]++
		}
	}
}
