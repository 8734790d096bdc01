package hashagg

import (
	"fmt"
	"math"
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
)

var opNames = [...]string{"sum", "count", "size", "min", "max", "mean", "var", "std", "first", "last", "nunique", "median", "quantile"}

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

// Spec is one aggregation: Op over value column Col (ignored for Size), Q for Quantile.
type Spec struct {
	Op  Op
	Col int
	Q   float64
}

// Values is one value column of a partition: Int for integer-like data, else Float. Valid,
// when not nil, marks the rows that are not null. Pos, when not nil, gives each row's global
// position (First, Last); otherwise positions are the row index plus Offset.
type Values struct {
	Int    []int64
	Float  []float64
	Valid  []bool
	Pos    []int64
	Offset int64
}

// IsInt reports whether v holds integers.
func (v Values) IsInt() bool { return v.Float == nil }

func (v Values) len() int {
	if v.Float != nil {
		return len(v.Float)
	}
	return len(v.Int)
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
	return float64(v.Int[i])
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
	Cnt   []int64   // count of valid values (Size: rows)
	SumI  []int64   // Sum of integers; Min, Max, First, Last of integers
	SumF  []float64 // Sum of floats; Min, Max, First, Last of floats
	Mean  []float64 // Mean, Var, Std: running mean
	M2    []float64 // Var, Std: sum of squared deviations
	Pos   []int64   // First, Last: the row position of the value kept
	// Holistic: (group, value) pairs.
	G  []int32
	VI []int64
	VF []float64
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
		st.Cnt = make([]int64, n)
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
	}
	return st
}

// Aggregate folds vals into one State per spec over the groups g.
func Aggregate(g *Groups, specs []Spec, vals []Values) (*Partial, error) {
	p := &Partial{Keys: g.Keys, N: g.N, States: make([]State, len(specs))}
	ids := g.IDs
	for si, s := range specs {
		var v Values
		if s.Op != Size {
			if s.Col < 0 || s.Col >= len(vals) {
				return nil, fmt.Errorf("hashagg.Aggregate: spec %d (%v) reads value column %d of %d", si, s.Op, s.Col, len(vals))
			}
			v = vals[s.Col]
			if v.len() != len(ids) {
				return nil, fmt.Errorf("hashagg.Aggregate: value column %d has %d rows, keys %d", s.Col, v.len(), len(ids))
			}
		}
		if s.Op == Quantile && (s.Q < 0 || s.Q > 1 || math.IsNaN(s.Q)) {
			return nil, fmt.Errorf("hashagg.Aggregate: quantile %v outside [0, 1]", s.Q)
		}
		st := newState(s, s.Op != Size && v.IsInt(), g.N)
		fold(&st, ids, v)
		p.States[si] = st
	}
	return p, nil
}

func fold(st *State, ids []int32, v Values) {
	op := st.Spec.Op
	if op == Size {
		for _, g := range ids {
			if g >= 0 {
				st.Cnt[g]++
			}
		}
		return
	}
	allValid := v.Valid == nil && v.Float == nil
	switch {
	case op == Sum && st.IsInt && allValid:
		for i, g := range ids {
			if g >= 0 {
				st.SumI[g] += v.Int[i]
				st.Cnt[g]++
			}
		}
		return
	case op == Sum && !st.IsInt && v.Valid == nil:
		for i, g := range ids {
			if x := v.Float[i]; g >= 0 && x == x {
				st.SumF[g] += x
				st.Cnt[g]++
			}
		}
		return
	case op == Mean && v.Valid == nil:
		for i, g := range ids {
			if g >= 0 {
				if x := v.f(i); x == x {
					st.SumF[g] += x
					st.Cnt[g]++
				}
			}
		}
		return
	}
	for i, g := range ids {
		if g < 0 || !v.valid(i) {
			continue
		}
		switch op {
		case Sum:
			if st.IsInt {
				st.SumI[g] += v.Int[i]
			} else {
				st.SumF[g] += v.Float[i]
			}
			st.Cnt[g]++
		case Count:
			st.Cnt[g]++
		case Min, Max:
			first := st.Cnt[g] == 0
			st.Cnt[g]++
			if st.IsInt {
				x := v.Int[i]
				if first || (op == Min && x < st.SumI[g]) || (op == Max && x > st.SumI[g]) {
					st.SumI[g] = x
				}
			} else {
				x := v.Float[i]
				if first || (op == Min && x < st.SumF[g]) || (op == Max && x > st.SumF[g]) {
					st.SumF[g] = x
				}
			}
		case First, Last:
			p := v.pos(i)
			if st.Cnt[g] == 0 || (op == First && p < st.Pos[g]) || (op == Last && p > st.Pos[g]) {
				st.Pos[g] = p
				if st.IsInt {
					st.SumI[g] = v.Int[i]
				} else {
					st.SumF[g] = v.Float[i]
				}
			}
			st.Cnt[g]++
		case Mean:
			st.SumF[g] += v.f(i)
			st.Cnt[g]++
		case Var, Std:
			st.Cnt[g]++
			x := v.f(i)
			d := x - st.Mean[g]
			st.Mean[g] += d / float64(st.Cnt[g])
			st.M2[g] += d * (x - st.Mean[g])
		case NUnique, Median, Quantile:
			st.G = append(st.G, g)
			if st.IsInt {
				st.VI = append(st.VI, v.Int[i])
			} else {
				st.VF = append(st.VF, v.Float[i])
			}
		}
	}
}

// Combine merges partials of the same specs (re-grouping on their keys) into one.
func Combine(ps ...*Partial) (*Partial, error) {
	if len(ps) == 0 {
		return nil, fmt.Errorf("hashagg.Combine: no partials")
	}
	if len(ps) == 1 {
		return ps[0], nil
	}
	nk, ns := len(ps[0].Keys), len(ps[0].States)
	total := 0
	for i, p := range ps {
		if len(p.Keys) != nk || len(p.States) != ns {
			return nil, fmt.Errorf("hashagg.Combine: partial %d has %d keys and %d states, partial 0 %d and %d", i, len(p.Keys), len(p.States), nk, ns)
		}
		total += p.N
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
		st := newState(s0.Spec, s0.IsInt, out.N)
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
	if op.holistic() {
		for _, g := range src.G {
			dst.G = append(dst.G, m[g])
		}
		dst.VI = append(dst.VI, src.VI...)
		dst.VF = append(dst.VF, src.VF...)
		return nil
	}
	for r, g := range m {
		c := src.Cnt[r]
		switch op {
		case Sum:
			if dst.IsInt {
				dst.SumI[g] += src.SumI[r]
			} else {
				dst.SumF[g] += src.SumF[r]
			}
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
			q.States[si] = newState(s.Spec, s.IsInt, counts[b])
		}
		if s.Spec.Op.holistic() {
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
			q, l := &out[bucket[r]].States[si], local[r]
			if s.Cnt != nil {
				q.Cnt[l] = s.Cnt[r]
			}
			if s.SumI != nil {
				q.SumI[l] = s.SumI[r]
			}
			if s.SumF != nil {
				q.SumF[l] = s.SumF[r]
			}
			if s.Mean != nil {
				q.Mean[l] = s.Mean[r]
			}
			if s.M2 != nil {
				q.M2[l] = s.M2[r]
			}
			if s.Pos != nil {
				q.Pos[l] = s.Pos[r]
			}
		}
	}
	return out
}

// Result is one finalized column: Int when IsInt, else Float; Valid marks the groups that
// have a value (nil: all).
type Result struct {
	IsInt bool
	Int   []int64
	Float []float64
	Valid []bool
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
	}
	// Holistic: bucket the pairs by group, sort each group's values.
	start := make([]int, n+1)
	for _, g := range s.G {
		start[g+1]++
	}
	for g := 0; g < n; g++ {
		start[g+1] += start[g]
	}
	at := slices.Clone(start[:n])
	var vi []int64
	var vf []float64
	if s.IsInt {
		vi = make([]int64, len(s.G))
	} else {
		vf = make([]float64, len(s.G))
	}
	for i, g := range s.G {
		if s.IsInt {
			vi[at[g]] = s.VI[i]
		} else {
			vf[at[g]] = s.VF[i]
		}
		at[g]++
	}
	cnt := make([]int64, n)
	if s.Spec.Op == NUnique {
		u := make([]int64, n)
		for g := 0; g < n; g++ {
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
		}
		return Result{IsInt: true, Int: u}
	}
	q := s.Spec.Q
	if s.Spec.Op == Median {
		q = 0.5
	}
	f := make([]float64, n)
	for g := 0; g < n; g++ {
		lo, hi := start[g], start[g+1]
		cnt[g] = int64(hi - lo)
		if hi == lo {
			f[g] = math.NaN()
			continue
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
		slices.Sort(x)
		f[g] = Interpolate(x, q)
	}
	return Result{Float: f, Valid: validWhere(cnt, 1)}
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
