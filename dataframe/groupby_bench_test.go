package dataframe_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

var benchGroupbyOnce = sync.OnceValue(func() *dataframe.Frame { return groupbyFrame(1_000_000, 100, 8) })

// groupbyFrame is db-benchmark's groupby table G1_n_k_0_0 (as cmd_bench_frame.go's): id1-id3
// categoricals of k, k and n/k values, id4-id6 int32, v1 in 1..5, v2 in 1..15, v3 in [0, 100).
func groupbyFrame(n, k, parts int) *dataframe.Frame {
	r := rand.New(rand.NewPCG(108, 0))
	nk := max(1, n/k)
	names := func(m int, format string) []string {
		s := make([]string, m)
		for i := range s {
			s[i] = fmt.Sprintf(format, i+1)
		}
		return s
	}
	small, big := names(k, "id%03d"), names(nk, "id%010d")
	id1, id2, id3 := make([]string, n), make([]string, n), make([]string, n)
	id4, id5, id6, v1, v2 := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	v3 := make([]float64, n)
	for i := 0; i < n; i++ {
		id1[i], id2[i], id3[i] = small[r.IntN(k)], small[r.IntN(k)], big[r.IntN(nk)]
		id4[i], id5[i], id6[i] = int32(1+r.IntN(k)), int32(1+r.IntN(k)), int32(1+r.IntN(nk))
		v1[i], v2[i] = int32(1+r.IntN(5)), int32(1+r.IntN(15))
		v3[i] = float64(int64(r.Float64()*100*1e6)) / 1e6
	}
	return dataframe.FromSlices([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v1", "v2", "v3"},
		[]any{id1, id2, id3, id4, id5, id6, v1, v2, v3}, dataframe.NPartitions(parts)).
		AsType("id1", dataframe.Category).AsType("id2", dataframe.Category).AsType("id3", dataframe.Category).Persist()
}

// BenchmarkGroupBy runs db-benchmark's groupby questions over 1e6 rows in 8 partitions.
func BenchmarkGroupBy(b *testing.B) {
	x := benchGroupbyOnce()
	if err := x.Err(); err != nil {
		b.Fatal(err)
	}
	qs := []struct {
		name string
		f    func() *dataframe.Frame
	}{
		{"q1", func() *dataframe.Frame { return x.GroupBy("id1").Agg(dataframe.Sum("v1")) }},
		{"q2", func() *dataframe.Frame { return x.GroupBy("id1", "id2").Agg(dataframe.Sum("v1")) }},
		{"q3", func() *dataframe.Frame { return x.GroupBy("id3").Agg(dataframe.Sum("v1"), dataframe.Mean("v3")) }},
		{"q4", func() *dataframe.Frame {
			return x.GroupBy("id4").Agg(dataframe.Mean("v1"), dataframe.Mean("v2"), dataframe.Mean("v3"))
		}},
		{"q5", func() *dataframe.Frame {
			return x.GroupBy("id6").Agg(dataframe.Sum("v1"), dataframe.Sum("v2"), dataframe.Sum("v3"))
		}},
		{"q6", func() *dataframe.Frame {
			return x.GroupBy("id4", "id5").Agg(dataframe.Median("v3").As("median_v3"), dataframe.Std("v3").As("sd_v3"))
		}},
		{"q7", func() *dataframe.Frame { return x.GroupBy("id3").Agg(dataframe.Max("v1"), dataframe.Min("v2")) }},
		{"q10", func() *dataframe.Frame {
			return x.GroupBy("id1", "id2", "id3", "id4", "id5", "id6").Agg(dataframe.Sum("v3"), dataframe.Size().As("count"))
		}},
	}
	for _, q := range qs {
		b.Run(q.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := q.f().Compute(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var benchManyGroupsOnce = sync.OnceValue(func() *dataframe.Frame { return groupbyFrame(1_000_000, 10, 8) })

// BenchmarkGroupByManyGroups groups 1e6 rows into 1e5 groups (id3, id6 of G1_1e6_1e1), where
// per-group states outgrow the caches, as db-benchmark's q3, q5, q7 and q8 at 1e7 rows.
func BenchmarkGroupByManyGroups(b *testing.B) {
	x := benchManyGroupsOnce()
	if err := x.Err(); err != nil {
		b.Fatal(err)
	}
	qs := []struct {
		name string
		f    func() *dataframe.Frame
	}{
		{"q3", func() *dataframe.Frame { return x.GroupBy("id3").Agg(dataframe.Sum("v1"), dataframe.Mean("v3")) }},
		{"q5", func() *dataframe.Frame {
			return x.GroupBy("id6").Agg(dataframe.Sum("v1"), dataframe.Sum("v2"), dataframe.Sum("v3"))
		}},
		{"q7", func() *dataframe.Frame { return x.GroupBy("id3").Agg(dataframe.Max("v1"), dataframe.Min("v2")) }},
		{"q8", func() *dataframe.Frame { return x.GroupBy("id6").NLargest(2, "v3") }},
	}
	for _, mode := range []struct {
		name string
		max  uint64
	}{{"dense", 1 << 22}, {"hashed", 1 << 14}} {
		reset := dataframe.SetDenseMax(mode.max)
		for _, q := range qs {
			b.Run(q.name+"-"+mode.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := q.f().Compute(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		reset()
	}
}

var bench1e7Once = sync.OnceValue(func() *dataframe.Frame { return groupbyFrame(10_000_000, 100, 8) })

// BenchmarkGroupBy1e7 runs db-benchmark's q1-q7 and q10 over G1_1e7_1e2 (8 partitions),
// only when GPUNOTES_BENCH_1E7 is set (the table takes 10-60 s and 2 GB to build). cpu-ms/op
// is the process's CPU time per operation, steadier than wall time on a shared machine.
func BenchmarkGroupBy1e7(b *testing.B) {
	if os.Getenv("GPUNOTES_BENCH_1E7") == "" {
		b.Skip("set GPUNOTES_BENCH_1E7=1 to run")
	}
	x := bench1e7Once()
	if err := x.Err(); err != nil {
		b.Fatal(err)
	}
	qs := []struct {
		name string
		f    func() *dataframe.Frame
	}{
		{"q1", func() *dataframe.Frame { return x.GroupBy("id1").Agg(dataframe.Sum("v1")) }},
		{"q2", func() *dataframe.Frame { return x.GroupBy("id1", "id2").Agg(dataframe.Sum("v1")) }},
		{"q3", func() *dataframe.Frame { return x.GroupBy("id3").Agg(dataframe.Sum("v1"), dataframe.Mean("v3")) }},
		{"q4", func() *dataframe.Frame {
			return x.GroupBy("id4").Agg(dataframe.Mean("v1"), dataframe.Mean("v2"), dataframe.Mean("v3"))
		}},
		{"q5", func() *dataframe.Frame {
			return x.GroupBy("id6").Agg(dataframe.Sum("v1"), dataframe.Sum("v2"), dataframe.Sum("v3"))
		}},
		{"q6", func() *dataframe.Frame {
			return x.GroupBy("id4", "id5").Agg(dataframe.Median("v3").As("median_v3"), dataframe.Std("v3").As("sd_v3"))
		}},
		{"q7", func() *dataframe.Frame {
			return x.GroupBy("id3").Agg(dataframe.Max("v1"), dataframe.Min("v2")).
				Assign("range_v1_v2", dataframe.Col("v1").Sub(dataframe.Col("v2"))).Select("id3", "range_v1_v2")
		}},
		{"q10", func() *dataframe.Frame {
			return x.GroupBy("id1", "id2", "id3", "id4", "id5", "id6").Agg(dataframe.Sum("v3"), dataframe.Size().As("count"))
		}},
	}
	for _, q := range qs {
		b.Run(q.name, func(b *testing.B) {
			var r0, r1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			// GPUNOTES_BENCH_PROFILE=dir writes a CPU profile per question (dir/q5.prof).
			if dir := os.Getenv("GPUNOTES_BENCH_PROFILE"); dir != "" {
				f, err := os.Create(filepath.Join(dir, q.name+".prof"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					b.Fatal(err)
				}
				defer pprof.StopCPUProfile()
			}
			for i := 0; i < b.N; i++ {
				if _, err := q.f().Compute(); err != nil {
					b.Fatal(err)
				}
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			cpu := r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano()
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
