package hashagg

import (
	"fmt"
	"math"
	"runtime"
	"slices"
)

// Op is an aggregation.
type Op int

// The aggregations.
const (
	Sum Op = iota
	Count
	Size
	Min
	Max
	Mean
	Var
	Std
	First
	Last
	NUnique
	Median
	Quantile
	// Corr is Pearson's correlation of value columns Col and Col2 over the rows where both
	// are valid (pandas' Series.corr).
	Corr
	// Top keeps the N largest valid values of a group (Largest) or the N smallest.
	Top
)

var opNames = [...]string{"sum", "count", "size", "min", "max", "mean", "var", "std", "first", "last", "nunique", "median", "quantile", "corr", "top"}

// String returns the pandas name of o ("sum", "nunique", ...).
func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// ParseOp returns the Op named name (pandas' names).
func ParseOp(name string) (Op, error) {
	for i, n := range opNames {
		if n == name {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("hashagg: unknown aggregation %q (have %v)", name, opNames[:])
}

func (o Op) holistic() bool { return o == NUnique || o == Median || o == Quantile }

// Spec is one aggregation: Op over value column Col (ignored for Size), Q for Quantile, Col2
// the second column of Corr, N and Largest for Top.
type Spec struct {
	Op      Op
	Col     int
	Q       float64
	Col2    int
	N       int
	Largest bool
}

// Values is one value column of a partition: Int (or Int32, read without widening) for
// integer-like data, else Float. Valid, when not nil, marks the rows that are not null. Pos,
// when not nil, gives each row's global position (First, Last); otherwise positions are the
// row index plus Offset.
type Values struct {
	Int    []int64
	Int32  []int32
	Float  []float64
	Valid  []bool
	Pos    []int64
	Offset int64
}

// IsInt reports whether v holds integers.
func (v Values) IsInt() bool { return v.Float == nil }

func (v Values) len() int {
	switch {
	case v.Float != nil:
		return len(v.Float)
	case v.Int32 != nil:
		return len(v.Int32)
	}
	return len(v.Int)
}

// Slice returns rows [lo, hi) of v (positions kept).
func (v Values) Slice(lo, hi int) Values {
	w := Values{Offset: v.Offset + int64(lo)}
	switch {
	case v.Float != nil:
		w.Float = v.Float[lo:hi]
	case v.Int32 != nil:
		w.Int32 = v.Int32[lo:hi]
	default:
		w.Int = v.Int[lo:hi]
	}
	if v.Valid != nil {
		w.Valid = v.Valid[lo:hi]
	}
	if v.Pos != nil {
		w.Pos = v.Pos[lo:hi]
	}
	return w
}

func (v Values) i(i int) int64 {
	if v.Int32 != nil {
		return int64(v.Int32[i])
	}
	return v.Int[i]
}

func (v Values) valid(i int) bool {
	if v.Valid != nil && !v.Valid[i] {
		return false
	}
	return v.Float == nil || !math.IsNaN(v.Float[i])
}

func (v Values) f(i int) float64 {
	if v.Float != nil {
		return v.Float[i]
	}
	return float64(v.i(i))
}

func (v Values) pos(i int) int64 {
	if v.Pos != nil {
		return v.Pos[i]
	}
	return v.Offset + int64(i)
}

// State is the partial state of one Spec over the groups of a Partial.
type State struct {
	Spec  Spec
	IsInt bool
	Cnt   []int64   // count of valid values (Size: rows; Sum: nil, no count kept)
	SumI  []int64   // Sum of integers; Min, Max, First, Last of integers
	SumF  []float64 // Sum of floats; Min, Max, First, Last of floats
	Mean  []float64 // Mean, Var, Std: running mean
	M2    []float64 // Var, Std: sum of squared deviations
	Pos   []int64   // First, Last: the row position of the value kept
	// Corr: Mean and M2 are x's, MeanY and M2Y y's, CXY the co-moment.
	MeanY, M2Y, CXY []float64
	// Top: group g's kept values are SumI or SumF[g*N : g*N+Cnt[g]], best first.
	// Holistic: (group, value) pairs.
	G  []int32
	VI []int64
	VF []float64
	// Final, when not nil, holds a holistic spec's finished value of each group, and Cnt
	// its count of values, where the caller computed them from each group's values (dataframe's
	// dense path groups them): no pairs. Such a state's groups are algebraic to Split, Select
	// and Concat; Combine takes them only once per group (disjoint partials).
	Final []float64
}

// finished reports whether s is a holistic state of finished values (Final).
func (s *State) finished() bool { return s.Final != nil }

// pairs reports whether s keeps (group, value) pairs: holistic and not finished.
func (s *State) pairs() bool { return s.Spec.Op.holistic() && s.Final == nil }

// newLike returns the empty state of n groups of src's spec and type, finished when src is.
func newLike(src *State, n int) State {
	st := newState(src.Spec, src.IsInt, n)
	if src.finished() {
		st.Final, st.Cnt = make([]float64, n), make([]int64, n)
	}
	return st
}

// Partial is the partial aggregation of some rows: the groups' keys and one State per Spec.
type Partial struct {
	Keys   [][]int64
	N      int
	States []State
}

func newState(s Spec, isInt bool, n int) State {
	st := State{Spec: s, IsInt: isInt}
	switch s.Op {
	case Sum:
		if isInt {
			st.SumI = make([]int64, n)
		} else {
			st.SumF = make([]float64, n)
		}
	case Count, Size:
		st.Cnt = make([]int64, n)
	case Min, Max, First, Last:
		st.Cnt = make([]int64, n)
		if isInt {
			st.SumI = make([]int64, n)
		} else {
			st.SumF = make([]float64, n)
		}
		if s.Op == First || s.Op == Last {
			st.Pos = make([]int64, n)
		}
	case Mean:
		st.Cnt = make([]int64, n)
		st.SumF = make([]float64, n)
	case Var, Std:
		st.Cnt = make([]int64, n)
		st.Mean = make([]float64, n)
		st.M2 = make([]float64, n)
	case Corr:
		st.Cnt = make([]int64, n)
		st.Mean, st.M2 = make([]float64, n), make([]float64, n)
		st.MeanY, st.M2Y, st.CXY = make([]float64, n), make([]float64, n), make([]float64, n)
	case Top:
		st.Cnt = make([]int64, n)
		if isInt {
			st.SumI = make([]int64, n*s.N)
		} else {
			st.SumF = make([]float64, n*s.N)
		}
	}
	return st
}

// Aggregate folds vals into one State per spec over the groups g.
func Aggregate(g *Groups, specs []Spec, vals []Values) (*Partial, error) {
	p, err := NewPartial(specs, vals, g.N)
	if err != nil {
		return nil, err
	}
	p.Keys = g.Keys
	if err := p.Fold(g.IDs, nil, vals); err != nil {
		return nil, err
	}
	return p, nil
}

// NewPartial returns the empty partial of specs over n groups (no keys: the caller sets them)
// for value columns of vals' types.
func NewPartial(specs []Spec, vals []Values, n int) (*Partial, error) {
	p := &Partial{N: n, States: make([]State, len(specs))}
	for si, s := range specs {
		isInt := false
		if s.Op != Size {
			if s.Col < 0 || s.Col >= len(vals) {
				return nil, fmt.Errorf("hashagg: spec %d (%v) reads value column %d of %d", si, s.Op, s.Col, len(vals))
			}
			isInt = vals[s.Col].IsInt()
		}
		switch s.Op {
		case Quantile:
			if s.Q < 0 || s.Q > 1 || math.IsNaN(s.Q) {
				return nil, fmt.Errorf("hashagg: quantile %v outside [0, 1]", s.Q)
			}
		case Corr:
			if s.Col2 < 0 || s.Col2 >= len(vals) {
				return nil, fmt.Errorf("hashagg: spec %d (corr) reads value column %d of %d", si, s.Col2, len(vals))
			}
		case Top:
			if s.N <= 0 {
				return nil, fmt.Errorf("hashagg: spec %d keeps %d values per group, want at least 1", si, s.N)
			}
		}
		p.States[si].IsInt = isInt
	}
	// Large states allocated (and so cleared) on every core: ~1e7 groups, db-benchmark's q10.
	workers := 1
	if n >= 1<<20 {
		workers = runtime.GOMAXPROCS(0)
	}
	parallel(len(specs), workers, func(si int) { p.States[si] = newState(specs[si], p.States[si].IsInt, n) })
	return p, nil
}

// Fold folds rows of vals into p: row rows[j] (row j when rows is nil) goes to group ids[j]
// (none when -1). vals are read in their own types (int32, int64, float64), never widened.
func (p *Partial) Fold(ids, rows []int32, vals []Values) error {
	for si := range p.States {
		if err := foldState(&p.States[si], ids, rows, vals); err != nil {
			return err
		}
	}
	return nil
}

// foldState folds rows of vals into st, as Fold.
func foldState(st *State, ids, rows []int32, vals []Values) error {
	s := st.Spec
	if s.Op == Size {
		foldSize(st.Cnt, ids)
		return nil
	}
	v, err := foldColumn(st, s.Col, ids, rows, vals)
	if err != nil {
		return err
	}
	if s.Op == Corr {
		w := vals[s.Col2]
		if rows == nil && w.len() != len(ids) {
			return fmt.Errorf("hashagg: value column %d has %d rows, keys %d", s.Col2, w.len(), len(ids))
		}
		foldCorr(st, ids, rows, v, w)
		return nil
	}
	switch {
	case v.Float != nil:
		foldT(st, ids, rows, v.Float, v)
	case v.Int32 != nil:
		foldT(st, ids, rows, v.Int32, v)
	default:
		foldT(st, ids, rows, v.Int, v)
	}
	return nil
}

// foldColumn returns value column col of vals after checking that st can fold it.
func foldColumn(st *State, col int, ids, rows []int32, vals []Values) (Values, error) {
	v := vals[col]
	if rows == nil && v.len() != len(ids) {
		return v, fmt.Errorf("hashagg: value column %d has %d rows, keys %d", col, v.len(), len(ids))
	}
	if st.IsInt != v.IsInt() {
		return v, fmt.Errorf("hashagg: value column %d changed type", col)
	}
	return v, nil
}

// Combine merges partials of the same specs (re-grouping on their keys) into one.
func Combine(ps ...*Partial) (*Partial, error) {
	if len(ps) == 1 {
		return ps[0], nil
	}
	nk, ns, total, err := sameShape("Combine", ps)
	if err != nil {
		return nil, err
	}
	t := newTable(nk, total)
	maps := make([][]int32, len(ps))
	for i, p := range ps {
		m := make([]int32, p.N)
		for r := 0; r < p.N; r++ {
			if nk == 1 {
				m[r] = t.find1(p.Keys[0][r])
			} else {
				m[r] = t.find(p.Keys, r, hashRow(p.Keys, r))
			}
		}
		maps[i] = m
	}
	out := &Partial{Keys: t.keys, N: len(t.hash), States: make([]State, ns)}
	for si := range out.States {
		s0 := ps[0].States[si]
		st := newLike(&s0, out.N)
		for i, p := range ps {
			if err := merge(&st, &p.States[si], maps[i]); err != nil {
				return nil, err
			}
		}
		out.States[si] = st
	}
	return out, nil
}

func merge(dst, src *State, m []int32) error {
	if dst.Spec != src.Spec || dst.IsInt != src.IsInt {
		return fmt.Errorf("hashagg.Combine: states differ (%v int=%v, %v int=%v)", dst.Spec, dst.IsInt, src.Spec, src.IsInt)
	}
	op := dst.Spec.Op
	if src.finished() != dst.finished() {
		return fmt.Errorf("hashagg.Combine: a %v state of finished values with one of pairs", op)
	}
	if src.finished() {
		// Finished values are not merged: each group comes from one partial.
		for r, g := range m {
			if src.Cnt[r] == 0 {
				continue // no values: nothing to take
			}
			if dst.Cnt[g] != 0 {
				return fmt.Errorf("hashagg.Combine: group of finished %v values in two partials", op)
			}
			dst.Final[g], dst.Cnt[g] = src.Final[r], src.Cnt[r]
		}
		return nil
	}
	if op.holistic() {
		for _, g := range src.G {
			dst.G = append(dst.G, m[g])
		}
		dst.VI = append(dst.VI, src.VI...)
		dst.VF = append(dst.VF, src.VF...)
		return nil
	}
	if op == Top {
		n, largest := dst.Spec.N, dst.Spec.Largest
		for r, g := range m {
			if dst.IsInt {
				mergeTop(dst.SumI, src.SumI, dst.Cnt, src.Cnt, g, int32(r), n, largest)
			} else {
				mergeTop(dst.SumF, src.SumF, dst.Cnt, src.Cnt, g, int32(r), n, largest)
			}
		}
		return nil
	}
	if op == Sum { // no count
		for r, g := range m {
			if dst.IsInt {
				dst.SumI[g] += src.SumI[r]
			} else {
				dst.SumF[g] += src.SumF[r]
			}
		}
		return nil
	}
	for r, g := range m {
		c := src.Cnt[r]
		switch op {
		case Mean:
			dst.SumF[g] += src.SumF[r]
		case Min, Max:
			if c == 0 {
				continue
			}
			first := dst.Cnt[g] == 0
			if dst.IsInt {
				x := src.SumI[r]
				if first || (op == Min && x < dst.SumI[g]) || (op == Max && x > dst.SumI[g]) {
					dst.SumI[g] = x
				}
			} else {
				x := src.SumF[r]
				if first || (op == Min && x < dst.SumF[g]) || (op == Max && x > dst.SumF[g]) {
					dst.SumF[g] = x
				}
			}
		case First, Last:
			if c == 0 {
				continue
			}
			p := src.Pos[r]
			if dst.Cnt[g] == 0 || (op == First && p < dst.Pos[g]) || (op == Last && p > dst.Pos[g]) {
				dst.Pos[g] = p
				if dst.IsInt {
					dst.SumI[g] = src.SumI[r]
				} else {
					dst.SumF[g] = src.SumF[r]
				}
			}
		case Var, Std:
			if c == 0 {
				continue
			}
			na, nb := float64(dst.Cnt[g]), float64(c)
			n := na + nb
			d := src.Mean[r] - dst.Mean[g]
			dst.Mean[g] += d * nb / n
			dst.M2[g] += src.M2[r] + d*d*na*nb/n
		case Corr:
			if c == 0 {
				continue
			}
			na, nb := float64(dst.Cnt[g]), float64(c)
			n := na + nb
			dx, dy := src.Mean[r]-dst.Mean[g], src.MeanY[r]-dst.MeanY[g]
			dst.Mean[g] += dx * nb / n
			dst.MeanY[g] += dy * nb / n
			dst.M2[g] += src.M2[r] + dx*dx*na*nb/n
			dst.M2Y[g] += src.M2Y[r] + dy*dy*na*nb/n
			dst.CXY[g] += src.CXY[r] + dx*dy*na*nb/n
		}
		dst.Cnt[g] += c
	}
	return nil
}

// Split divides p into n partials by key hash; every key lands in one of them, the same one
// for the same key in any partial.
func (p *Partial) Split(n int) []*Partial {
	if n <= 1 {
		return []*Partial{p}
	}
	bucket := make([]int, p.N)
	counts := make([]int, n)
	for r := 0; r < p.N; r++ {
		b := bucketOf(p.Keys, r, n)
		bucket[r] = b
		counts[b]++
	}
	out := make([]*Partial, n)
	local := make([]int32, p.N)
	for b := range out {
		out[b] = &Partial{Keys: make([][]int64, len(p.Keys)), States: make([]State, len(p.States))}
	}
	for r := 0; r < p.N; r++ {
		q := out[bucket[r]]
		local[r] = int32(q.N)
		q.N++
		for k := range p.Keys {
			q.Keys[k] = append(q.Keys[k], p.Keys[k][r])
		}
	}
	for si, s := range p.States {
		for b, q := range out {
			q.States[si] = newLike(&s, counts[b])
		}
		if s.pairs() {
			for i, g := range s.G {
				q := &out[bucket[g]].States[si]
				q.G = append(q.G, local[g])
				if s.IsInt {
					q.VI = append(q.VI, s.VI[i])
				} else {
					q.VF = append(q.VF, s.VF[i])
				}
			}
			continue
		}
		for r := 0; r < p.N; r++ {
			copyGroup(&out[bucket[r]].States[si], int(local[r]), &s, r)
		}
	}
	return out
}

// copyGroup copies group g of src's algebraic state into group i of dst.
func copyGroup(dst *State, i int, src *State, g int) {
	if src.Spec.Op == Top {
		n := src.Spec.N
		dst.Cnt[i] = src.Cnt[g]
		if src.SumI != nil {
			copy(dst.SumI[i*n:i*n+n], src.SumI[g*n:g*n+n])
		} else {
			copy(dst.SumF[i*n:i*n+n], src.SumF[g*n:g*n+n])
		}
		return
	}
	for _, f := range [...]struct{ d, s []float64 }{{dst.SumF, src.SumF}, {dst.Mean, src.Mean}, {dst.M2, src.M2},
		{dst.MeanY, src.MeanY}, {dst.M2Y, src.M2Y}, {dst.CXY, src.CXY}, {dst.Final, src.Final}} {
		if f.s != nil {
			f.d[i] = f.s[g]
		}
	}
	for _, f := range [...]struct{ d, s []int64 }{{dst.Cnt, src.Cnt}, {dst.SumI, src.SumI}, {dst.Pos, src.Pos}} {
		if f.s != nil {
			f.d[i] = f.s[g]
		}
	}
}

// gatherState sets group i of dst to group gs[i] of src, field by field.
func gatherState(dst, src *State, gs []int32) {
	if src.Spec.Op == Top {
		for i, g := range gs {
			copyGroup(dst, i, src, int(g))
		}
		return
	}
	for _, f := range [...]struct{ d, s []float64 }{{dst.SumF, src.SumF}, {dst.Mean, src.Mean}, {dst.M2, src.M2},
		{dst.MeanY, src.MeanY}, {dst.M2Y, src.M2Y}, {dst.CXY, src.CXY}, {dst.Final, src.Final}} {
		if f.s != nil {
			for i, g := range gs {
				f.d[i] = f.s[g]
			}
		}
	}
	for _, f := range [...]struct{ d, s []int64 }{{dst.Cnt, src.Cnt}, {dst.SumI, src.SumI}, {dst.Pos, src.Pos}} {
		if f.s != nil {
			for i, g := range gs {
				f.d[i] = f.s[g]
			}
		}
	}
}

// Add merges q into p where both number the same groups the same way (dense codes), group g
// of q into group g of p.
func (p *Partial) Add(q *Partial) error {
	if p.N != q.N || len(p.States) != len(q.States) {
		return fmt.Errorf("hashagg.Add: %d groups and %d states into %d and %d", q.N, len(q.States), p.N, len(p.States))
	}
	var m []int32 // the identity, for the states addSame does not take
	for si := range p.States {
		dst, src := &p.States[si], &q.States[si]
		if dst.Spec == src.Spec && dst.IsInt == src.IsInt && addSame(dst, src) {
			continue
		}
		if m == nil {
			m = make([]int32, q.N)
			for g := range m {
				m[g] = int32(g)
			}
		}
		if err := merge(dst, src, m); err != nil {
			return err
		}
	}
	return nil
}

// addSame merges src into dst group by group as merge does with the identity map, one loop
// per field, and reports whether it could (Sum, Count, Size, Mean).
func addSame(dst, src *State) bool {
	switch dst.Spec.Op {
	case Sum:
		if dst.IsInt {
			addInto(dst.SumI, src.SumI)
		} else {
			addInto(dst.SumF, src.SumF)
		}
	case Count, Size:
		addInto(dst.Cnt, src.Cnt)
	case Mean:
		addInto(dst.SumF, src.SumF)
		addInto(dst.Cnt, src.Cnt)
	default:
		return false
	}
	return true
}

func addInto[T int64 | float64](dst, src []T) {
	src = src[:len(dst)]
	for g, x := range src {
		dst[g] += x
	}
}

// Select returns the partial of p's groups gs, in that order, with keys (one slice per key
// column, len(gs) each). Holistic values of groups not in gs are dropped.
func (p *Partial) Select(gs []int32, keys [][]int64) *Partial {
	out := &Partial{Keys: keys, N: len(gs), States: make([]State, len(p.States))}
	inv := make([]int32, p.N)
	for i := range inv {
		inv[i] = -1
	}
	for i, g := range gs {
		inv[g] = int32(i)
	}
	for si := range p.States {
		s := &p.States[si]
		st := newLike(s, len(gs))
		if s.pairs() {
			st.G = make([]int32, 0, len(s.G))
			if s.IsInt {
				st.VI = make([]int64, 0, len(s.G))
			} else {
				st.VF = make([]float64, 0, len(s.G))
			}
			for j, g := range s.G {
				if ng := inv[g]; ng >= 0 {
					st.G = append(st.G, ng)
					if s.IsInt {
						st.VI = append(st.VI, s.VI[j])
					} else {
						st.VF = append(st.VF, s.VF[j])
					}
				}
			}
		} else {
			gatherState(&st, s, gs)
		}
		out.States[si] = st
	}
	return out
}

// Concat joins partials of the same specs whose groups are disjoint (no key in two of them),
// in order; it does not re-group.
func Concat(ps ...*Partial) (*Partial, error) {
	if len(ps) == 1 {
		return ps[0], nil
	}
	nk, ns, total, err := sameShape("Concat", ps)
	if err != nil {
		return nil, err
	}
	out := &Partial{Keys: make([][]int64, nk), N: total, States: make([]State, ns)}
	for k := range out.Keys {
		out.Keys[k] = make([]int64, 0, total)
		for _, p := range ps {
			out.Keys[k] = append(out.Keys[k], p.Keys[k]...)
		}
	}
	for si := range out.States {
		s0 := &ps[0].States[si]
		st := newLike(s0, total)
		base := 0
		for _, p := range ps {
			s := &p.States[si]
			if s.Spec != s0.Spec || s.IsInt != s0.IsInt || s.finished() != s0.finished() {
				return nil, fmt.Errorf("hashagg.Concat: states differ (%v, %v)", s.Spec, s0.Spec)
			}
			if s.pairs() {
				for _, g := range s.G {
					st.G = append(st.G, g+int32(base))
				}
				st.VI = append(st.VI, s.VI...)
				st.VF = append(st.VF, s.VF...)
			} else {
				for g := 0; g < p.N; g++ {
					copyGroup(&st, base+g, s, g)
				}
			}
			base += p.N
		}
		out.States[si] = st
	}
	return out, nil
}

// Result is one finalized column: Int when IsInt, else Float; Valid marks the groups that
// have a value (nil: all). PerGroup, when not 0, is the values per group (Top: group g's are
// [g*PerGroup, (g+1)*PerGroup), Valid marking those kept).
type Result struct {
	IsInt    bool
	Int      []int64
	Float    []float64
	Valid    []bool
	PerGroup int
}

// Finalize turns p's states into one Result per Spec, one row per group.
func (p *Partial) Finalize() []Result {
	out := make([]Result, len(p.States))
	for si, s := range p.States {
		out[si] = finalize(&s, p.N)
	}
	return out
}

func validWhere(cnt []int64, min int64) []bool {
	v := make([]bool, len(cnt))
	all := true
	for i, c := range cnt {
		v[i] = c >= min
		all = all && v[i]
	}
	if all {
		return nil
	}
	return v
}

func finalize(s *State, n int) Result {
	switch s.Spec.Op {
	case Sum:
		if s.IsInt {
			return Result{IsInt: true, Int: s.SumI}
		}
		return Result{Float: s.SumF}
	case Count, Size:
		return Result{IsInt: true, Int: s.Cnt}
	case Min, Max, First, Last:
		if s.IsInt {
			return Result{IsInt: true, Int: s.SumI, Valid: validWhere(s.Cnt, 1)}
		}
		return Result{Float: s.SumF, Valid: validWhere(s.Cnt, 1)}
	case Mean:
		f := make([]float64, n)
		for g := range f {
			f[g] = s.SumF[g] / float64(s.Cnt[g])
		}
		return Result{Float: f, Valid: validWhere(s.Cnt, 1)}
	case Var, Std:
		f := make([]float64, n)
		for g := range f {
			f[g] = math.NaN()
			if s.Cnt[g] > 1 {
				f[g] = s.M2[g] / float64(s.Cnt[g]-1)
				if s.Spec.Op == Std {
					f[g] = math.Sqrt(f[g])
				}
			}
		}
		return Result{Float: f, Valid: validWhere(s.Cnt, 2)}
	case Corr:
		f := make([]float64, n)
		var valid []bool
		for g := range f {
			d := math.Sqrt(s.M2[g] * s.M2Y[g])
			if s.Cnt[g] < 2 || !(d > 0) {
				if valid == nil {
					valid = make([]bool, n)
					for i := range valid {
						valid[i] = true
					}
				}
				f[g], valid[g] = math.NaN(), false
				continue
			}
			f[g] = max(-1, min(1, s.CXY[g]/d))
		}
		return Result{Float: f, Valid: valid}
	case Top:
		k := s.Spec.N
		valid := make([]bool, n*k)
		for g := 0; g < n; g++ {
			for i := 0; i < int(s.Cnt[g]); i++ {
				valid[g*k+i] = true
			}
		}
		return Result{IsInt: s.IsInt, Int: s.SumI, Float: s.SumF, Valid: valid, PerGroup: k}
	}
	if s.finished() {
		if s.Spec.Op == NUnique {
			u := make([]int64, n)
			for g, x := range s.Final {
				u[g] = int64(x)
			}
			return Result{IsInt: true, Int: u}
		}
		return Result{Float: s.Final, Valid: validWhere(s.Cnt, 1)}
	}
	// Holistic: bucket the pairs by group (in pair order within a group), then sort or select
	// each group's values, groups spread over the cores.
	start, vi, vf := bucketPairs(s, n)
	workers := runtime.GOMAXPROCS(0)
	cnt := make([]int64, n)
	if s.Spec.Op == NUnique {
		u := make([]int64, n)
		forGroups(n, workers, func(g int) {
			lo, hi := start[g], start[g+1]
			cnt[g] = int64(hi - lo)
			if s.IsInt {
				x := vi[lo:hi]
				slices.Sort(x)
				u[g] = int64(len(slices.Compact(x)))
			} else {
				x := vf[lo:hi]
				slices.Sort(x)
				u[g] = int64(len(slices.Compact(x)))
			}
		})
		return Result{IsInt: true, Int: u}
	}
	q := s.Spec.Q
	if s.Spec.Op == Median {
		q = 0.5
	}
	f := make([]float64, n)
	forGroups(n, workers, func(g int) {
		lo, hi := start[g], start[g+1]
		cnt[g] = int64(hi - lo)
		if hi == lo {
			f[g] = math.NaN()
			return
		}
		var x []float64
		if s.IsInt {
			x = make([]float64, hi-lo)
			for i, v := range vi[lo:hi] {
				x[i] = float64(v)
			}
		} else {
			x = vf[lo:hi]
		}
		f[g] = quantileSelect(x, q) // reorders x within its group: the pairs stay valid
	})
	return Result{Float: f, Valid: validWhere(cnt, 1)}
}

// forGroups runs f(0..n-1) on at most workers goroutines, in ranges of groups.
func forGroups(n, workers int, f func(g int)) {
	per := max(1, (n+4*workers-1)/(4*workers))
	parallel((n+per-1)/per, workers, func(r int) {
		for g := r * per; g < min(n, (r+1)*per); g++ {
			f(g)
		}
	})
}

// bucketPairs returns s's pair values grouped by group: group g's are vi or vf[start[g]:
// start[g+1]], in pair order. With few groups against the pairs, chunks of pairs count and
// place theirs in parallel.
func bucketPairs(s *State, n int) (start []int, vi []int64, vf []float64) {
	if start, ok := groupedPairs(s.G, n); ok {
		// Already grouped (dataframe's dense path writes them so): taken as they are; a
		// quantile's selection reorders values within a group only, which leaves the pairs
		// valid. NUnique compacts them: a copy.
		if s.Spec.Op == NUnique {
			return start, slices.Clone(s.VI), slices.Clone(s.VF)
		}
		return start, s.VI, s.VF
	}
	if s.IsInt {
		vi = make([]int64, len(s.G))
	} else {
		vf = make([]float64, len(s.G))
	}
	chunks := min(runtime.GOMAXPROCS(0), len(s.G)/(1<<16))
	if chunks < 2 || n > len(s.G)/(4*chunks) {
		chunks = 1
	}
	per := (len(s.G) + chunks - 1) / max(chunks, 1)
	at := make([][]int, chunks) // chunk c's next slot of each group
	parallel(chunks, chunks, func(c int) {
		h := make([]int, n)
		for _, g := range s.G[c*per : min(len(s.G), (c+1)*per)] {
			h[g]++
		}
		at[c] = h
	})
	start = BucketOffsets(at, n)
	parallel(chunks, chunks, func(c int) {
		lo, hi := c*per, min(len(s.G), (c+1)*per)
		a := at[c]
		if s.IsInt {
			for i, g := range s.G[lo:hi] {
				vi[a[g]] = s.VI[lo+i]
				a[g]++
			}
			return
		}
		for i, g := range s.G[lo:hi] {
			vf[a[g]] = s.VF[lo+i]
			a[g]++
		}
	})
	return start, vi, vf
}

// groupedPairs returns where each group's pairs start when g (the pairs' groups, all in [0,
// n)) is in ascending order; false otherwise. Chunks check the order in parallel, and each
// group's start is a binary search.
func groupedPairs(g []int32, n int) ([]int, bool) {
	workers := runtime.GOMAXPROCS(0)
	const chunk = 1 << 16
	nc := (len(g) + chunk - 1) / chunk
	bad := make([]bool, nc)
	parallel(nc, workers, func(c int) {
		lo, hi := max(1, c*chunk), min(len(g), (c+1)*chunk)
		for i := lo; i < hi; i++ {
			if g[i] < g[i-1] {
				bad[c] = true
				return
			}
		}
	})
	if slices.Contains(bad, true) {
		return nil, false
	}
	start := make([]int, n+1)
	forGroups(n+1, workers, func(x int) {
		start[x], _ = slices.BinarySearch(g, int32(x))
	})
	return start, true
}

// Interpolate returns the q-quantile of sorted x by linear interpolation (NumPy's and pandas'
// default).
func Interpolate(x []float64, q float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	h := q * float64(len(x)-1)
	lo := int(math.Floor(h))
	if lo >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[lo] + (h-float64(lo))*(x[lo+1]-x[lo])
}

// sameShape checks that partials of op (at least one) have the same numbers of keys and states,
// and returns those and their total number of groups.
func sameShape(op string, ps []*Partial) (nk, ns, total int, err error) {
	if len(ps) == 0 {
		return 0, 0, 0, fmt.Errorf("hashagg.%s: no partials", op)
	}
	nk, ns = len(ps[0].Keys), len(ps[0].States)
	for i, p := range ps {
		if len(p.Keys) != nk || len(p.States) != ns {
			return 0, 0, 0, fmt.Errorf("hashagg.%s: partial %d has %d keys and %d states, partial 0 %d and %d", op, i, len(p.Keys), len(p.States), nk, ns)
		}
		total += p.N
	}
	return nk, ns, total, nil
}
