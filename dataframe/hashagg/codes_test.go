package hashagg_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
)

// TestAggregateCodesEqualsGroup checks that the radix-partitioned grouping by packed codes
// (enough rows for many buckets) gives the groups and results of Group and Aggregate, for
// int32, int64 and float values, algebraic and holistic specs, Corr and Top.
func TestAggregateCodesEqualsGroup(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ng := range []int{5, 3000, 200000} {
		n := 150_000
		codes := make([]uint64, n)
		keys := make([]int64, n)
		valid := make([]bool, n)
		v32 := make([]int32, n)
		vf := make([]float64, n)
		for i := range codes {
			keys[i] = int64(r.IntN(ng)) * 7919
			codes[i], valid[i] = uint64(keys[i]), r.Float64() > 0.03
			if !valid[i] {
				codes[i] = math.MaxUint64
			}
			v32[i] = int32(r.IntN(100) - 50)
			vf[i] = r.NormFloat64()
			if r.Float64() < 0.05 {
				vf[i] = math.NaN()
			}
		}
		vals := []hashagg.Values{{Int32: v32}, {Float: vf}}
		for _, specs := range [][]hashagg.Spec{
			{{Op: hashagg.Sum, Col: 0}, {Op: hashagg.Mean, Col: 1}, {Op: hashagg.Min, Col: 0}, {Op: hashagg.Std, Col: 1},
				{Op: hashagg.Corr, Col: 0, Col2: 1}, {Op: hashagg.Top, Col: 1, N: 2, Largest: true}, {Op: hashagg.Size}},
			{{Op: hashagg.Median, Col: 1}, {Op: hashagg.NUnique, Col: 0}, {Op: hashagg.Last, Col: 0}},
			// Only states that read no positions: the value columns go to the buckets too.
			{{Op: hashagg.Sum, Col: 1}, {Op: hashagg.Mean, Col: 0}, {Op: hashagg.Max, Col: 1}, {Op: hashagg.Min, Col: 0},
				{Op: hashagg.Var, Col: 1}, {Op: hashagg.Count, Col: 1}, {Op: hashagg.Size}},
			// One float column, scattered with the codes (db-benchmark's q10), and none.
			{{Op: hashagg.Sum, Col: 1}, {Op: hashagg.Size}},
			{{Op: hashagg.Size}},
		} {
			p, groups, err := hashagg.AggregateCodes(codes, math.MaxUint64, []int{40_000, 60_000, 50_000}, specs, vals, 2)
			if err != nil {
				t.Fatal(err)
			}
			g, err := hashagg.Group([]hashagg.Key{{Values: keys, Valid: valid}})
			if err != nil {
				t.Fatal(err)
			}
			q, err := hashagg.Aggregate(g, specs, vals)
			if err != nil {
				t.Fatal(err)
			}
			if p.N != q.N || len(groups) != q.N {
				t.Fatalf("ng %d: %d groups (%d codes), Group %d", ng, p.N, len(groups), q.N)
			}
			at := map[int64]int{}
			for i, k := range q.Keys[0] {
				at[k] = i
			}
			pr, qr := p.Finalize(), q.Finalize()
			for si := range specs {
				k := max(1, pr[si].PerGroup)
				for gi, c := range groups {
					qi := at[int64(c)]
					for j := 0; j < k; j++ {
						a, b := gi*k+j, qi*k+j
						va, vb := pr[si].Valid == nil || pr[si].Valid[a], qr[si].Valid == nil || qr[si].Valid[b]
						if va != vb {
							t.Fatalf("ng %d spec %v group %d: valid %v, Group %v", ng, specs[si], c, va, vb)
						}
						if !va {
							continue
						}
						var x, y float64
						if pr[si].IsInt {
							x, y = float64(pr[si].Int[a]), float64(qr[si].Int[b])
						} else {
							x, y = pr[si].Float[a], qr[si].Float[b]
						}
						if x != y && math.Abs(x-y) > 1e-9*math.Max(1, math.Abs(y)) {
							t.Fatalf("ng %d spec %v group %d: %v, Group %v", ng, specs[si], c, x, y)
						}
					}
				}
			}
		}
	}
}

// TestQuantileSelectEqualsSort checks the selection-based quantile against sorting.
func TestQuantileSelectEqualsSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n := 1 + r.IntN(500)
		if trial%10 == 0 { // long runs of equal values in partitions of thousands
			n = 2000 + r.IntN(3000)
		}
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(r.IntN(1 + r.IntN(50)))
		}
		q := r.Float64()
		g := make([]int32, n)
		specs := []hashagg.Spec{{Op: hashagg.Quantile, Col: 0, Q: q}}
		p, err := hashagg.Aggregate(&hashagg.Groups{IDs: g, N: 1, Keys: [][]int64{{0}}}, specs, []hashagg.Values{{Float: x}})
		if err != nil {
			t.Fatal(err)
		}
		s := slices.Clone(x)
		slices.Sort(s)
		if got, want := p.Finalize()[0].Float[0], hashagg.Interpolate(s, q); got != want {
			t.Fatalf("n %d q %v: %v, sorted %v", n, q, got, want)
		}
	}
}
