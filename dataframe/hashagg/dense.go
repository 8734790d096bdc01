package hashagg

import (
	"fmt"
	"math"
)

// Dense group codes: when every key is a dense range of codes (a categorical's codes, a
// small-range integer) and the product of their cardinalities is small, a row's group is its
// mixed-radix code and a device kernel folds values into tables indexed by it, with no hash
// table (gpuarray/cuda's group-aggregate kernel). PlanDense decides whether a grouping can be
// so and how; DensePlan.Partial turns the kernel's tables into a Partial that Combine, Split
// and Finalize take as any other.

// MaxDenseGroups is the most mixed-radix codes a dense plan allows (tables of a few words per
// code in device memory).
const MaxDenseGroups = 1 << 24

// DenseKey is the range of one key's values: Min, Min+1, …, Min+Card-1.
type DenseKey struct {
	Min, Card int64
}

// DenseStates is the set of per-code tables a value column needs.
type DenseStates uint8

// The tables of a dense aggregation (as the device kernel's states).
const (
	DenseCount DenseStates = 1 << iota
	DenseSum
	DenseSumSq
	DenseMin
	DenseMax
)

// DensePlan is a grouping by dense codes: code = Σ (key_i - Min_i) × Stride_i, the first key
// varying slowest.
type DensePlan struct {
	Keys    []DenseKey
	Strides []int64
	Groups  int
	// Cols holds, per value column that a Spec reads, the tables it needs.
	Cols []DenseStates
}

// PlanDense returns the dense plan of keys and specs over ncols value columns, or an error
// saying why the grouping is not dense (too many codes, an aggregation that needs the rows).
func PlanDense(keys []DenseKey, specs []Spec, ncols int) (*DensePlan, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("hashagg.PlanDense: no keys")
	}
	p := &DensePlan{Keys: keys, Strides: make([]int64, len(keys)), Groups: 1, Cols: make([]DenseStates, ncols)}
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if k.Card <= 0 {
			return nil, fmt.Errorf("hashagg.PlanDense: key %d has %d codes", i, k.Card)
		}
		p.Strides[i] = int64(p.Groups)
		if k.Card > MaxDenseGroups || int64(p.Groups)*k.Card > MaxDenseGroups {
			return nil, fmt.Errorf("hashagg.PlanDense: the keys' codes multiply past %d groups", MaxDenseGroups)
		}
		p.Groups *= int(k.Card)
	}
	for si, s := range specs {
		var need DenseStates
		switch s.Op {
		case Size:
			continue
		case Count:
			need = DenseCount
		case Sum, Mean:
			need = DenseCount | DenseSum
		case Min:
			need = DenseCount | DenseMin
		case Max:
			need = DenseCount | DenseMax
		case Var, Std:
			need = DenseCount | DenseSum | DenseSumSq
		default:
			return nil, fmt.Errorf("hashagg.PlanDense: %v needs the rows (spec %d)", s.Op, si)
		}
		if s.Col < 0 || s.Col >= ncols {
			return nil, fmt.Errorf("hashagg.PlanDense: spec %d (%v) reads value column %d of %d", si, s.Op, s.Col, ncols)
		}
		p.Cols[s.Col] |= need
	}
	return p, nil
}

// Code returns the dense code of row i of keys, -1 when a key is null or outside its range.
func (p *DensePlan) Code(keys []Key, i int) int64 {
	code := int64(0)
	for k, key := range keys {
		if key.Valid != nil && !key.Valid[i] {
			return -1
		}
		v := key.Values[i] - p.Keys[k].Min
		if v < 0 || v >= p.Keys[k].Card {
			return -1
		}
		code += v * p.Strides[k]
	}
	return code
}

// KeysOf returns the key values of code.
func (p *DensePlan) KeysOf(code int64) []int64 {
	out := make([]int64, len(p.Keys))
	for k, dk := range p.Keys {
		out[k] = dk.Min + code/p.Strides[k]%dk.Card
	}
	return out
}

// DenseColumn is the per-code tables of one value column (nil where not kept); Min and Max
// of a code with a zero Count are ignored.
type DenseColumn struct {
	IsInt      bool
	Count      []int64
	SumI       []int64
	SumF       []float64
	SumSq      []float64
	MinI, MaxI []int64
	MinF, MaxF []float64
}

// Partial builds the partial of specs from the tables: rows counts each code's rows (codes
// with none are no group), cols the tables of each value column. Var and Std take M2 as
// sumsq - sum²/n, whose rounding error is about n ulp of sumsq (cancellation where the mean
// is large against the spread).
func (p *DensePlan) Partial(specs []Spec, rows []int64, cols []DenseColumn) (*Partial, error) {
	if len(rows) != p.Groups {
		return nil, fmt.Errorf("hashagg.DensePlan.Partial: %d row counts for %d codes", len(rows), p.Groups)
	}
	var codes []int
	for c, r := range rows {
		if r > 0 {
			codes = append(codes, c)
		}
	}
	n := len(codes)
	out := &Partial{Keys: make([][]int64, len(p.Keys)), N: n, States: make([]State, len(specs))}
	for k := range out.Keys {
		out.Keys[k] = make([]int64, n)
	}
	for g, c := range codes {
		for k, v := range p.KeysOf(int64(c)) {
			out.Keys[k][g] = v
		}
	}
	for si, s := range specs {
		if s.Op == Size {
			st := newState(s, false, n)
			for g, c := range codes {
				st.Cnt[g] = rows[c]
			}
			out.States[si] = st
			continue
		}
		if s.Col < 0 || s.Col >= len(cols) {
			return nil, fmt.Errorf("hashagg.DensePlan.Partial: spec %d reads value column %d of %d", si, s.Col, len(cols))
		}
		dc := cols[s.Col]
		need := p.Cols[s.Col]
		if dc.Count == nil || (need&DenseSum != 0 && dc.SumI == nil && dc.SumF == nil) || (need&DenseSumSq != 0 && dc.SumSq == nil) ||
			(need&DenseMin != 0 && dc.MinI == nil && dc.MinF == nil) || (need&DenseMax != 0 && dc.MaxI == nil && dc.MaxF == nil) {
			return nil, fmt.Errorf("hashagg.DensePlan.Partial: value column %d lacks a table that %v needs", s.Col, s.Op)
		}
		st := newState(s, dc.IsInt, n)
		for g, c := range codes {
			cnt := dc.Count[c]
			if st.Cnt != nil { // a Sum keeps no count
				st.Cnt[g] = cnt
			}
			switch s.Op {
			case Sum:
				if dc.IsInt {
					st.SumI[g] = dc.SumI[c]
				} else {
					st.SumF[g] = dc.SumF[c]
				}
			case Mean:
				if dc.IsInt {
					st.SumF[g] = float64(dc.SumI[c])
				} else {
					st.SumF[g] = dc.SumF[c]
				}
			case Min, Max:
				if cnt == 0 {
					continue
				}
				switch {
				case s.Op == Min && dc.IsInt:
					st.SumI[g] = dc.MinI[c]
				case s.Op == Min:
					st.SumF[g] = dc.MinF[c]
				case dc.IsInt:
					st.SumI[g] = dc.MaxI[c]
				default:
					st.SumF[g] = dc.MaxF[c]
				}
			case Var, Std:
				if cnt == 0 {
					continue
				}
				sum := 0.0
				if dc.IsInt {
					sum = float64(dc.SumI[c])
				} else {
					sum = dc.SumF[c]
				}
				nf := float64(cnt)
				st.Mean[g] = sum / nf
				st.M2[g] = math.Max(0, dc.SumSq[c]-sum*sum/nf)
			}
		}
		out.States[si] = st
	}
	return out, nil
}
