package hashagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestPlanDenseEligibility(t *testing.T) {
	specs := []Spec{{Op: Sum, Col: 0}, {Op: Var, Col: 1}, {Op: Max, Col: 1}, {Op: Size}}
	p, err := PlanDense([]DenseKey{{Min: 5, Card: 100}, {Min: -3, Card: 7}}, specs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Groups != 700 || p.Strides[0] != 7 || p.Strides[1] != 1 {
		t.Fatalf("groups %d strides %v, want 700 [7 1]", p.Groups, p.Strides)
	}
	if p.Cols[0] != DenseCount|DenseSum || p.Cols[1] != DenseCount|DenseSum|DenseSumSq|DenseMax {
		t.Fatalf("tables %b %b", p.Cols[0], p.Cols[1])
	}
	for _, tc := range []struct {
		keys  []DenseKey
		specs []Spec
		why   string
	}{
		{[]DenseKey{{0, 1 << 13}, {0, 1 << 12}}, specs[:1], "multiply past"},
		{[]DenseKey{{0, 1 << 25}}, specs[:1], "multiply past"},
		{[]DenseKey{{0, 10}}, []Spec{{Op: Median, Col: 0}}, "needs the rows"},
		{[]DenseKey{{0, 10}}, []Spec{{Op: NUnique, Col: 0}}, "needs the rows"},
		{[]DenseKey{{0, 10}}, []Spec{{Op: First, Col: 0}}, "needs the rows"},
		{[]DenseKey{{0, 0}}, specs[:1], "0 codes"},
	} {
		_, err := PlanDense(tc.keys, tc.specs, 2)
		if err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("PlanDense(%v, %v): %v, want an error with %q", tc.keys, tc.specs, err, tc.why)
		}
	}
	key := []Key{{Values: []int64{5, 104, 105, 50}}, {Values: []int64{-3, 3, 0, 0}, Valid: []bool{true, true, true, false}}}
	for i, want := range []int64{0, 699, -1, -1} {
		if got := p.Code(key, i); got != want {
			t.Errorf("code of row %d: %d, want %d", i, got, want)
		}
	}
	for _, c := range []int64{0, 1, 6, 7, 350, 699} {
		ks := p.KeysOf(c)
		if got := p.Code([]Key{{Values: ks[:1]}, {Values: ks[1:]}}, 0); got != c {
			t.Errorf("code %d: keys %v code %d", c, ks, got)
		}
	}
}

// denseTables folds rows into per-code tables on the CPU, as the device kernel does.
func denseTables(p *DensePlan, codes []int64, vals []Values) ([]int64, []DenseColumn) {
	rows := make([]int64, p.Groups)
	for _, c := range codes {
		if c >= 0 {
			rows[c]++
		}
	}
	cols := make([]DenseColumn, len(vals))
	for j, v := range vals {
		d := DenseColumn{IsInt: v.IsInt(), Count: make([]int64, p.Groups), SumSq: make([]float64, p.Groups)}
		if d.IsInt {
			d.SumI, d.MinI, d.MaxI = make([]int64, p.Groups), make([]int64, p.Groups), make([]int64, p.Groups)
		} else {
			d.SumF, d.MinF, d.MaxF = make([]float64, p.Groups), make([]float64, p.Groups), make([]float64, p.Groups)
		}
		for i, c := range codes {
			if c < 0 || !v.valid(i) {
				continue
			}
			first := d.Count[c] == 0
			d.Count[c]++
			x := v.f(i)
			d.SumSq[c] += x * x
			if d.IsInt {
				y := v.Int[i]
				d.SumI[c] += y
				if first || y < d.MinI[c] {
					d.MinI[c] = y
				}
				if first || y > d.MaxI[c] {
					d.MaxI[c] = y
				}
			} else {
				d.SumF[c] += x
				if first || x < d.MinF[c] {
					d.MinF[c] = x
				}
				if first || x > d.MaxF[c] {
					d.MaxF[c] = x
				}
			}
		}
		cols[j] = d
	}
	return rows, cols
}

// TestDensePartialMatchesHashTable checks a dense plan's partial, from per-code tables, finalizes
// to the hash table's results: the same groups, integer states equal, floats within 1e-9.
func TestDensePartialMatchesHashTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 5000
	k1, k2 := make([]int64, n), make([]int64, n)
	valid := make([]bool, n)
	vi, vf := make([]int64, n), make([]float64, n)
	for i := range k1 {
		k1[i], k2[i] = 10+r.Int64N(13), r.Int64N(4)
		valid[i] = r.IntN(20) != 0
		vi[i] = r.Int64N(1000) - 500
		vf[i] = r.NormFloat64()*10 + 3
		if r.IntN(15) == 0 {
			vf[i] = math.NaN()
		}
	}
	keys := []Key{{Values: k1}, {Values: k2, Valid: valid}}
	vals := []Values{{Int: vi}, {Float: vf}}
	specs := []Spec{{Op: Sum, Col: 0}, {Op: Sum, Col: 1}, {Op: Count, Col: 1}, {Op: Size}, {Op: Min, Col: 0}, {Op: Max, Col: 1}, {Op: Mean, Col: 0}, {Op: Var, Col: 1}, {Op: Std, Col: 0}}
	p, err := PlanDense([]DenseKey{{Min: 10, Card: 13}, {Min: 0, Card: 5}}, specs, 2)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]int64, n)
	for i := range codes {
		codes[i] = p.Code(keys, i)
	}
	rows, cols := denseTables(p, codes, vals)
	dp, err := p.Partial(specs, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Group(keys)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := Aggregate(g, specs, vals)
	if err != nil {
		t.Fatal(err)
	}
	if dp.N != hp.N {
		t.Fatalf("dense: %d groups, hash table %d", dp.N, hp.N)
	}
	at := map[string]int{}
	for i := 0; i < hp.N; i++ {
		at[fmt.Sprint(hp.Keys[0][i], hp.Keys[1][i])] = i
	}
	dr, hr := dp.Finalize(), hp.Finalize()
	for i := 0; i < dp.N; i++ {
		j, ok := at[fmt.Sprint(dp.Keys[0][i], dp.Keys[1][i])]
		if !ok {
			t.Fatalf("dense group %d, %d not in the hash table's", dp.Keys[0][i], dp.Keys[1][i])
		}
		for s := range specs {
			d, h := dr[s], hr[s]
			if d.IsInt != h.IsInt {
				t.Fatalf("spec %v: int %v vs %v", specs[s], d.IsInt, h.IsInt)
			}
			if d.IsInt && d.Int[i] != h.Int[j] {
				t.Fatalf("group %d spec %v: %d, hash table %d", i, specs[s], d.Int[i], h.Int[j])
			}
			if !d.IsInt && math.Abs(d.Float[i]-h.Float[j]) > 1e-9*math.Max(1, math.Abs(h.Float[j])) {
				t.Fatalf("group %d spec %v: %v, hash table %v", i, specs[s], d.Float[i], h.Float[j])
			}
		}
	}
	// The partial combines with a hash-table partial as any other.
	c, err := Combine(dp, hp)
	if err != nil || c.N != hp.N {
		t.Fatalf("Combine: %v, %d groups", err, c.N)
	}
}
