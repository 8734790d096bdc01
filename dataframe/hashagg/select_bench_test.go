package hashagg_test

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
)

// BenchmarkMedianGrouped finalizes the median of 1000 groups of 1000 values each (db-benchmark
// q6's group size at 1e7 rows), the pairs grouped as dataframe's dense path writes them: the
// per-group selection alone.
func BenchmarkMedianGrouped(b *testing.B) {
	const groups, per = 1000, 1000
	r := rand.New(rand.NewPCG(1, 2))
	g := make([]int32, groups*per)
	v := make([]float64, groups*per)
	for i := range g {
		g[i] = int32(i / per)
		v[i] = float64(int64(r.Float64()*100*1e6)) / 1e6
	}
	work := make([]float64, len(v))
	for _, op := range []hashagg.Op{hashagg.Median, hashagg.Std} {
		b.Run(op.String(), func(b *testing.B) {
			var cpu int64 // CPU time of the timed parts: wall time is the machine's load here
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				copy(work, v)
				p, err := hashagg.NewPartial([]hashagg.Spec{{Op: op}}, []hashagg.Values{{Float: work}}, groups)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := cpuNow()
				if op == hashagg.Median {
					p.States[0].G, p.States[0].VF = g, work
				} else if err := p.Fold(g, nil, []hashagg.Values{{Float: work}}); err != nil {
					b.Fatal(err)
				}
				_ = p.Finalize()
				cpu += cpuNow() - t0
			}
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuNow is the process's CPU time so far in nanoseconds.
func cpuNow() int64 {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return r.Utime.Nano() + r.Stime.Nano()
}
