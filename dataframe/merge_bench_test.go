package dataframe_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// BenchmarkMergeInner merges 1e6 left rows (k, v) with 1e5 right rows (k, w) on int64 keys
// drawn from 2e5 values, hash-partitioned (no broadcast), and computes the result.
func BenchmarkMergeInner(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	col := func(n, card int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(rng.IntN(card))
		}
		return v
	}
	l := dataframe.FromSlices([]string{"k", "v"}, []any{col(1_000_000, 200_000), col(1_000_000, 1000)}, dataframe.NPartitions(4))
	r := dataframe.FromSlices([]string{"k", "w"}, []any{col(100_000, 200_000), col(100_000, 1000)}, dataframe.NPartitions(2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := dataframe.Merge(l, r, dataframe.On("k"), dataframe.BroadcastRows(0)).Compute(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMergeBigInt32 is db-benchmark's q5 at 1e6 rows: 1e6 left rows against 1e6 right
// rows with unique int32 keys (90% matching), a float64 payload each side and a categorical
// on the right, with the default strategy (the right side is broadcast).
func BenchmarkMergeBigInt32(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(7, 8))
	keys := func(off int) []int32 {
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(i + off)
		}
		rng.Shuffle(n, func(i, j int) { v[i], v[j] = v[j], v[i] })
		return v
	}
	vals := func() []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.Float64()
		}
		return v
	}
	cats := make([]string, n)
	for i := range cats {
		cats[i] = []string{"a", "b", "c"}[rng.IntN(3)]
	}
	l := dataframe.FromSlices([]string{"k", "v1"}, []any{keys(0), vals()}, dataframe.NPartitions(8))
	r := dataframe.FromSlices([]string{"k", "c", "v2"}, []any{keys(n / 10), cats, vals()}, dataframe.NPartitions(8)).
		AsType("c", dataframe.Category)
	l, r = l.Persist(), r.Persist()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := dataframe.Merge(l, r, dataframe.On("k")).Compute(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMergeMediumInt32 is db-benchmark's q2 at 1e6 rows: 1e6 left rows (int32 keys of
// 1000 values, a categorical and a float64 payload) against 1000 unique right rows.
func BenchmarkMergeMediumInt32(b *testing.B) {
	const n, m = 1_000_000, 1000
	rng := rand.New(rand.NewPCG(9, 10))
	lk, lc, lv := make([]int32, n), make([]string, n), make([]float64, n)
	for i := range lk {
		lk[i], lc[i], lv[i] = int32(1+rng.IntN(m)), []string{"a", "b", "c"}[rng.IntN(3)], rng.Float64()
	}
	rk, rv := make([]int32, m), make([]float64, m)
	for i := range rk {
		rk[i], rv[i] = int32(i+1), rng.Float64()
	}
	l := dataframe.FromSlices([]string{"k", "c", "v1"}, []any{lk, lc, lv}, dataframe.NPartitions(8)).AsType("c", dataframe.Category).Persist()
	r := dataframe.FromSlices([]string{"k", "v2"}, []any{rk, rv}).Persist()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := dataframe.Merge(l, r, dataframe.On("k")).Compute(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMergeDenseBig is db-benchmark's q5 at 2e6 rows: x of 2e6 rows (three int32 ids,
// three categoricals as int32 codes and a float64) against 2e6 right rows of unique int32
// keys over 2.2e6 values (90% matching, over DefaultBroadcastRows: the direct-address join
// with the row-major gather), both persisted.
func BenchmarkMergeDenseBig(b *testing.B) {
	const n = 2_000_000
	rng := rand.New(rand.NewPCG(11, 12))
	side := func(off int, tag string) *dataframe.Frame {
		k := rng.Perm(n + n/10)[:n]
		k32, a, c := make([]int32, n), make([]int32, n), make([]int32, n)
		v := make([]float64, n)
		for i := range k32 {
			k32[i], a[i], c[i], v[i] = int32(k[i]+off), int32(rng.IntN(100)), int32(rng.IntN(1000)), rng.Float64()
		}
		return dataframe.FromSlices([]string{"id3", tag + "a", tag + "c", tag + "v"}, []any{k32, a, c, v}, dataframe.NPartitions(8)).Persist()
	}
	x, big := side(0, "x"), side(0, "b")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := dataframe.Merge(x, big, dataframe.On("id3")).Compute(); err != nil {
			b.Fatal(err)
		}
	}
}
