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
