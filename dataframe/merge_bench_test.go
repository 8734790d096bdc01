package dataframe_test

import (
	"math"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

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

// BenchmarkMergeJoinTask is db-benchmark's five join questions (bench frame --task join) at
// 1e7 rows of x: id1..id3 int32 keys of key sets of 10, 1e4 and 1e7 keys (join-datagen.R's
// split: 90% on both sides, 10% left only, 10% right only), id4..id6 their categoricals,
// v1/v2 float64; small, medium and big right sides of unique keys, all persisted. It reports
// the process's CPU seconds per merge (cpu-s/op) beside the wall time, the figure to read on
// a shared machine.
func BenchmarkMergeJoinTask(b *testing.B) {
	const n = 10_000_000
	rng := rand.New(rand.NewPCG(108, 1))
	type level struct {
		both, left, right int // keys 0..both-1, both..both+left-1, then right ones
		cats              []string
	}
	var levels []level
	for _, m := range []int{n / 1_000_000, n / 1_000, n} {
		both := max(1, int(math.Round(0.9*float64(m))))
		lv := level{both: both, left: m - both, right: int(math.Round(0.1 * float64(m)))}
		lv.cats = make([]string, lv.both+lv.left+lv.right)
		for j := range lv.cats {
			lv.cats[j] = "id" + strconv.Itoa(j)
		}
		levels = append(levels, lv)
	}
	// draw is size keys of lv's keys on both sides and its left or right ones, every one of
	// them at least once, shuffled (sample_all: a permutation when size is their number).
	draw := func(lv level, size int, right bool) []int32 {
		var keys []int32
		for j := 0; j < lv.both; j++ {
			keys = append(keys, int32(j))
		}
		lo, k := lv.both, lv.left
		if right {
			lo, k = lv.both+lv.left, lv.right
		}
		for j := 0; j < k; j++ {
			keys = append(keys, int32(lo+j))
		}
		out := append(make([]int32, 0, size), keys...)
		for len(out) < size {
			out = append(out, keys[rng.IntN(len(keys))])
		}
		out = out[:size]
		rng.Shuffle(size, func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	vals := func(size int) []float64 {
		v := make([]float64, size)
		for i := range v {
			v[i] = rng.Float64() * 100
		}
		return v
	}
	frame := func(names []string, cols []any, parts int) *dataframe.Frame {
		return dataframe.FromSlices(names, cols, dataframe.NPartitions(parts)).Persist()
	}
	m := []int{n / 1_000_000, n / 1_000, n}
	xk := []([]int32){draw(levels[0], n, false), draw(levels[1], n, false), draw(levels[2], n, false)}
	x := frame([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v1"}, []any{xk[0], xk[1], xk[2],
		dataframe.Categorical(xk[0], levels[0].cats), dataframe.Categorical(xk[1], levels[1].cats), dataframe.Categorical(xk[2], levels[2].cats), vals(n)}, 8)
	sk := draw(levels[0], m[0], true)
	small := frame([]string{"id1", "id4", "v2"}, []any{sk, dataframe.Categorical(sk, levels[0].cats), vals(len(sk))}, 1)
	mk := []([]int32){draw(levels[0], m[1], true), draw(levels[1], m[1], true)}
	medium := frame([]string{"id1", "id2", "id4", "id5", "v2"}, []any{mk[0], mk[1],
		dataframe.Categorical(mk[0], levels[0].cats), dataframe.Categorical(mk[1], levels[1].cats), vals(len(mk[1]))}, 1)
	bk := []([]int32){draw(levels[0], n, true), draw(levels[1], n, true), draw(levels[2], n, true)}
	big := frame([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v2"}, []any{bk[0], bk[1], bk[2],
		dataframe.Categorical(bk[0], levels[0].cats), dataframe.Categorical(bk[1], levels[1].cats), dataframe.Categorical(bk[2], levels[2].cats), vals(n)}, 8)
	qs := []struct {
		name string
		r    *dataframe.Frame
		on   string
		how  string
	}{{"q1", small, "id1", "inner"}, {"q2", medium, "id2", "inner"}, {"q3", medium, "id2", "left"}, {"q4", medium, "id5", "inner"}, {"q5", big, "id3", "inner"}}
	for _, q := range qs {
		b.Run(q.name, func(b *testing.B) {
			var before, after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			for i := 0; i < b.N; i++ {
				if _, err := dataframe.Merge(x, q.r, dataframe.On(q.on), dataframe.How(q.how)).Compute(); err != nil {
					b.Fatal(err)
				}
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
