package hashagg_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
)

// TestPartitionedEqualsWhole checks that grouping in random partitions, combining (also after
// Split) and finalizing gives what a naive map over all rows gives.
func TestPartitionedEqualsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		n := 1 + r.IntN(3000)
		ng := 1 + r.IntN(200)
		k1, k2 := make([]int64, n), make([]int64, n)
		kv := make([]bool, n)
		vi := make([]int64, n)
		vf := make([]float64, n)
		for i := range k1 {
			k1[i], k2[i] = int64(r.IntN(ng)), int64(r.IntN(3))
			kv[i] = r.Float64() > 0.05
			vi[i] = r.Int64N(1000) - 500
			vf[i] = r.NormFloat64()
			if r.Float64() < 0.1 {
				vf[i] = math.NaN()
			}
		}
		specs := []hashagg.Spec{{Op: hashagg.Sum, Col: 0}, {Op: hashagg.Count, Col: 1}, {Op: hashagg.Min, Col: 0}, {Op: hashagg.Max, Col: 1},
			{Op: hashagg.Var, Col: 1}, {Op: hashagg.First, Col: 1}, {Op: hashagg.Last, Col: 0}, {Op: hashagg.NUnique, Col: 0},
			{Op: hashagg.Quantile, Col: 1, Q: 0.7}, {Op: hashagg.Size}}
		var parts []*hashagg.Partial
		for lo := 0; lo < n; {
			hi := min(n, lo+1+r.IntN(700))
			g, err := hashagg.Group([]hashagg.Key{{Values: k1[lo:hi], Valid: kv[lo:hi]}, {Values: k2[lo:hi]}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := hashagg.Aggregate(g, specs, []hashagg.Values{{Int: vi[lo:hi], Offset: int64(lo)}, {Float: vf[lo:hi], Offset: int64(lo)}})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, p.Split(1+r.IntN(3))...)
			lo = hi
		}
		all, err := hashagg.Combine(parts...)
		if err != nil {
			t.Fatal(err)
		}
		res := all.Finalize()
		// The naive reference.
		type key [2]int64
		rows := map[key][]int{}
		for i := range k1 {
			if kv[i] {
				k := key{k1[i], k2[i]}
				rows[k] = append(rows[k], i)
			}
		}
		if all.N != len(rows) {
			t.Fatalf("trial %d: %d groups, want %d", trial, all.N, len(rows))
		}
		for g := 0; g < all.N; g++ {
			rs := rows[key{all.Keys[0][g], all.Keys[1][g]}]
			var sum, mn, last int64
			mn = math.MaxInt64
			var fs []float64
			first := math.NaN()
			maxf := math.Inf(-1)
			uniq := map[int64]bool{}
			for _, i := range rs {
				sum += vi[i]
				mn = min(mn, vi[i])
				last = vi[i]
				uniq[vi[i]] = true
				if !math.IsNaN(vf[i]) {
					if len(fs) == 0 {
						first = vf[i]
					}
					fs = append(fs, vf[i])
					maxf = math.Max(maxf, vf[i])
				}
			}
			if res[0].Int[g] != sum || res[1].Int[g] != int64(len(fs)) || res[2].Int[g] != mn || res[6].Int[g] != last ||
				res[7].Int[g] != int64(len(uniq)) || res[9].Int[g] != int64(len(rs)) {
				t.Fatalf("trial %d group %d: sum %d count %d min %d last %d nunique %d size %d; want %d %d %d %d %d %d", trial, g,
					res[0].Int[g], res[1].Int[g], res[2].Int[g], res[6].Int[g], res[7].Int[g], res[9].Int[g], sum, len(fs), mn, last, len(uniq), len(rs))
			}
			if len(fs) > 0 && (res[3].Float[g] != maxf || res[5].Float[g] != first) {
				t.Fatalf("trial %d group %d: max %v first %v, want %v %v", trial, g, res[3].Float[g], res[5].Float[g], maxf, first)
			}
			if len(fs) > 1 {
				m := 0.0
				for _, x := range fs {
					m += x
				}
				m /= float64(len(fs))
				v := 0.0
				for _, x := range fs {
					v += (x - m) * (x - m)
				}
				v /= float64(len(fs) - 1)
				if math.Abs(res[4].Float[g]-v) > 1e-9*math.Max(1, v) {
					t.Fatalf("trial %d group %d: var %v, want %v", trial, g, res[4].Float[g], v)
				}
			}
		}
	}
}
