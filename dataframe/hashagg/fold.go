package hashagg

import (
	"math"
	"math/bits"
	"slices"
)

// number is the element types Fold reads without widening.
type number interface {
	~int32 | ~int64 | ~float64
}

// row is the row of iteration j: rows[j], or j when rows is nil.
func row(rows []int32, j int) int {
	if rows != nil {
		return int(rows[j])
	}
	return j
}

func foldSize(cnt []int64, ids []int32) {
	for _, g := range ids {
		if g >= 0 {
			cnt[g]++
		}
	}
}

// foldT folds x (v's data) into st; NaN and rows not valid are skipped.
func foldT[T number](st *State, ids, rows []int32, x []T, v Values) {
	valid := v.Valid
	switch op := st.Spec.Op; op {
	case Sum:
		if st.IsInt {
			sumInt(st.SumI, ids, rows, x, valid)
		} else {
			sumFloat(st.SumF, nil, ids, rows, x, valid)
		}
	case Mean:
		sumFloat(st.SumF, st.Cnt, ids, rows, x, valid)
	case Count:
		for j, g := range ids {
			if g < 0 {
				continue
			}
			r := row(rows, j)
			if xv := x[r]; xv == xv && (valid == nil || valid[r]) {
				st.Cnt[g]++
			}
		}
	case Min, Max:
		if st.IsInt {
			minMax(st.SumI, st.Cnt, ids, rows, x, valid, op == Min)
		} else {
			minMax(st.SumF, st.Cnt, ids, rows, x, valid, op == Min)
		}
	case Var, Std:
		for j, g := range ids {
			if g < 0 {
				continue
			}
			r := row(rows, j)
			xv := float64(x[r])
			if xv != xv || (valid != nil && !valid[r]) {
				continue
			}
			st.Cnt[g]++
			d := xv - st.Mean[g]
			st.Mean[g] += d / float64(st.Cnt[g])
			st.M2[g] += d * (xv - st.Mean[g])
		}
	case First, Last:
		for j, g := range ids {
			if g < 0 {
				continue
			}
			r := row(rows, j)
			xv := x[r]
			if xv != xv || (valid != nil && !valid[r]) {
				continue
			}
			p := v.pos(r)
			if st.Cnt[g] == 0 || (op == First && p < st.Pos[g]) || (op == Last && p > st.Pos[g]) {
				st.Pos[g] = p
				if st.IsInt {
					st.SumI[g] = int64(xv)
				} else {
					st.SumF[g] = float64(xv)
				}
			}
			st.Cnt[g]++
		}
	case Top:
		if st.IsInt {
			foldTop(st.SumI, st.Cnt, ids, rows, x, valid, st.Spec.N, st.Spec.Largest)
		} else {
			foldTop(st.SumF, st.Cnt, ids, rows, x, valid, st.Spec.N, st.Spec.Largest)
		}
	case NUnique, Median, Quantile:
		st.G = slices.Grow(st.G, len(ids))
		if st.IsInt {
			st.VI = slices.Grow(st.VI, len(ids))
		} else {
			st.VF = slices.Grow(st.VF, len(ids))
		}
		for j, g := range ids {
			if g < 0 {
				continue
			}
			r := row(rows, j)
			xv := x[r]
			if xv != xv || (valid != nil && !valid[r]) {
				continue
			}
			st.G = append(st.G, g)
			if st.IsInt {
				st.VI = append(st.VI, int64(xv))
			} else {
				st.VF = append(st.VF, float64(xv))
			}
		}
	}
}

// sumInt adds x into sum (a Sum keeps no count: Finalize does not read one).
func sumInt[T number](sum []int64, ids, rows []int32, x []T, valid []bool) {
	if rows == nil && valid == nil {
		x = x[:len(ids)]
		for j, g := range ids {
			if g >= 0 {
				sum[g] += int64(x[j])
			}
		}
		return
	}
	for j, g := range ids {
		if g < 0 {
			continue
		}
		r := row(rows, j)
		if valid == nil || valid[r] {
			sum[g] += int64(x[r])
		}
	}
}

// sumFloat adds the valid values of x that are not NaN into sum, counting them in cnt unless
// cnt is nil.
func sumFloat[T number](sum []float64, cnt []int64, ids, rows []int32, x []T, valid []bool) {
	if rows == nil && valid == nil && cnt == nil {
		x = x[:len(ids)]
		for j, g := range ids {
			if xv := float64(x[j]); g >= 0 && xv == xv {
				sum[g] += xv
			}
		}
		return
	}
	if rows == nil && valid == nil {
		x = x[:len(ids)]
		for j, g := range ids {
			if xv := float64(x[j]); g >= 0 && xv == xv {
				sum[g] += xv
				cnt[g]++
			}
		}
		return
	}
	for j, g := range ids {
		if g < 0 {
			continue
		}
		r := row(rows, j)
		if xv := float64(x[r]); xv == xv && (valid == nil || valid[r]) {
			sum[g] += xv
			if cnt != nil {
				cnt[g]++
			}
		}
	}
}

func minMax[T number, A int64 | float64](m []A, cnt []int64, ids, rows []int32, x []T, valid []bool, isMin bool) {
	if mi, ok := any(m).([]int64); ok && valid == nil {
		// Integers: no NaN and no signed zeros, so a branch-free update gives the same
		// results without mispredicted branches.
		if rows == nil {
			x = x[:len(ids)]
		}
		if isMin {
			minInt(mi, cnt, ids, rows, x)
		} else {
			maxInt(mi, cnt, ids, rows, x)
		}
		return
	}
	for j, g := range ids {
		if g < 0 {
			continue
		}
		r := row(rows, j)
		xv := x[r]
		if xv != xv || (valid != nil && !valid[r]) {
			continue
		}
		a := A(xv)
		if cnt[g] == 0 || (isMin && a < m[g]) || (!isMin && a > m[g]) {
			m[g] = a
		}
		cnt[g]++
	}
}

// minInt folds integers x (row rows[j], or j, to group ids[j]) into minima m; a group's first value
// replaces its zero state.
func minInt[T number](m, cnt []int64, ids, rows []int32, x []T) {
	for j, g := range ids {
		if g < 0 {
			continue
		}
		a := int64(x[row(rows, j)])
		cur := m[g]
		if cnt[g] == 0 {
			cur = a
		}
		m[g] = min(cur, a)
		cnt[g]++
	}
}

// maxInt is minInt for maxima.
func maxInt[T number](m, cnt []int64, ids, rows []int32, x []T) {
	for j, g := range ids {
		if g < 0 {
			continue
		}
		a := int64(x[row(rows, j)])
		cur := m[g]
		if cnt[g] == 0 {
			cur = a
		}
		m[g] = max(cur, a)
		cnt[g]++
	}
}

// better reports whether a goes before b in a Top list.
func better[A int64 | float64](a, b A, largest bool) bool {
	if largest {
		return a > b
	}
	return a < b
}

// topInsert inserts a into the best-first list buf[:c] of capacity len(buf), returning the
// new length; a value equal to a kept one goes after it.
func topInsert[A int64 | float64](buf []A, c int, a A, largest bool) int {
	n := len(buf)
	if c == n && !better(a, buf[n-1], largest) {
		return c
	}
	i := c
	if c == n {
		i = n - 1
	}
	for i > 0 && better(a, buf[i-1], largest) {
		buf[i] = buf[i-1]
		i--
	}
	buf[i] = a
	return min(c+1, n)
}

func foldTop[T number, A int64 | float64](buf []A, cnt []int64, ids, rows []int32, x []T, valid []bool, n int, largest bool) {
	for j, g := range ids {
		if g < 0 {
			continue
		}
		r := row(rows, j)
		xv := x[r]
		if xv != xv || (valid != nil && !valid[r]) {
			continue
		}
		base := int(g) * n
		cnt[g] = int64(topInsert(buf[base:base+n], int(cnt[g]), A(xv), largest))
	}
}

func foldCorr(st *State, ids, rows []int32, x, y Values) {
	switch {
	case x.Float != nil:
		corrY(st, ids, rows, x.Float, x.Valid, y)
	case x.Int32 != nil:
		corrY(st, ids, rows, x.Int32, x.Valid, y)
	default:
		corrY(st, ids, rows, x.Int, x.Valid, y)
	}
}

func corrY[X number](st *State, ids, rows []int32, x []X, xv []bool, y Values) {
	switch {
	case y.Float != nil:
		corrXY(st, ids, rows, x, xv, y.Float, y.Valid)
	case y.Int32 != nil:
		corrXY(st, ids, rows, x, xv, y.Int32, y.Valid)
	default:
		corrXY(st, ids, rows, x, xv, y.Int, y.Valid)
	}
}

// corrXY folds the pairs where x and y are both valid: running means, M2s and co-moment
// (Welford's update, as Var).
func corrXY[X, Y number](st *State, ids, rows []int32, x []X, xv []bool, y []Y, yv []bool) {
	for j, g := range ids {
		if g < 0 {
			continue
		}
		r := row(rows, j)
		a, b := float64(x[r]), float64(y[r])
		if a != a || b != b || (xv != nil && !xv[r]) || (yv != nil && !yv[r]) {
			continue
		}
		st.Cnt[g]++
		n := float64(st.Cnt[g])
		dx := a - st.Mean[g]
		st.Mean[g] += dx / n
		dy := b - st.MeanY[g]
		st.MeanY[g] += dy / n
		st.M2[g] += dx * (a - st.Mean[g])
		st.M2Y[g] += dy * (b - st.MeanY[g])
		st.CXY[g] += dx * (b - st.MeanY[g])
	}
}

// mergeTop merges src's list r into dst's list g (both best first).
func mergeTop[A int64 | float64](dst, src []A, dcnt, scnt []int64, g, r int32, n int, largest bool) {
	d := dst[int(g)*n : int(g)*n+n]
	c := int(dcnt[g])
	for _, a := range src[int(r)*n : int(r)*n+int(scnt[r])] {
		c = topInsert(d, c, a, largest)
	}
	dcnt[g] = int64(c)
}

// QuantileSelect returns the q-quantile of x (no NaN) by linear interpolation, as Interpolate
// of sorted x, reordering x by selection instead of sorting it (NaN for no value).
func QuantileSelect(x []float64, q float64) float64 { return quantileSelect(x, q) }

// quantileSelect returns the q-quantile of x by linear interpolation, as Interpolate of
// sorted x, but reorders x by selection instead of sorting it.
func quantileSelect(x []float64, q float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	h := q * float64(len(x)-1)
	lo := int(math.Floor(h))
	if lo >= len(x)-1 {
		return slices.Max(x)
	}
	nthElement(x, lo)
	a := x[lo]
	b := slices.Min(x[lo+1:])
	return a + (h-float64(lo))*(b-a)
}

// nthElement reorders x so that x[k] is the value sorted x would hold there, nothing greater
// before it and nothing smaller after it (quickselect; sorts the rest after too many rounds).
// Its partitions are branch-free (Lomuto's, a swap a value), where a branch on each random
// value was mispredicted half the time; a partition that leaves few values below the pivot
// sets the ones equal to it aside in a second pass (many equal values).
func nthElement(x []float64, k int) {
	lo, hi := 0, len(x)-1
	budget := 2*bits.Len(uint(len(x))) + 8
	for hi-lo > 16 {
		if budget == 0 {
			slices.Sort(x[lo : hi+1])
			return
		}
		budget--
		mid := lo + (hi-lo)/2
		// Median of three as the pivot.
		if x[mid] < x[lo] {
			x[mid], x[lo] = x[lo], x[mid]
		}
		if x[hi] < x[lo] {
			x[hi], x[lo] = x[lo], x[hi]
		}
		if x[hi] < x[mid] {
			x[hi], x[mid] = x[mid], x[hi]
		}
		p := x[mid]
		x[mid], x[hi] = x[hi], x[mid]
		// x[lo:j] < p, x[j:i] >= p.
		j := lo
		s := x[lo:hi]
		for i, v := range s {
			s[i] = x[j]
			x[j] = v
			j += oneIf(v < p)
		}
		x[hi], x[j] = x[j], p
		switch {
		case k < j:
			hi = j - 1
		case k == j:
			return
		case j-lo >= (hi-lo)>>4:
			lo = j + 1
		default:
			// x[j+1:e] == p, x[e:hi+1] > p.
			e := j + 1
			s := x[e : hi+1]
			for i, v := range s {
				s[i] = x[e]
				x[e] = v
				e += oneIf(v <= p)
			}
			if k < e {
				return
			}
			lo = e
		}
	}
	slices.Sort(x[lo : hi+1])
}

// oneIf is 1 when b holds, else 0 (the compiler makes it a flag, no branch).
func oneIf(b bool) int {
	if b {
		return 1
	}
	return 0
}
