package hashagg

import "math"

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
	var rows []int64 // each group's rows: the first Size state's counts, or their own
	held := -1
	for si := range p.States {
		st := &p.States[si]
		if !shares(st.Spec) {
			if err := foldState(st, ids, nil, vals); err != nil {
				return nil, err
			}
			continue
		}
		if rows == nil {
			for ti, t := range p.States {
				if t.Spec.Op == Size {
					rows, held = t.Cnt, ti
					break
				}
			}
			if rows == nil {
				rows = make([]int64, n)
			}
			foldSize(rows, ids)
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
