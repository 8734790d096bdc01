package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// The benchmarks below are not run by `go test`; bench/cluster.sh runs them with
// -bench and -benchtime=1x and appends the figures to bench/RESULTS.md.

// seed is the seed experiment: (x + 1)[::2, ::2].sum() with x = Normal(10, 1) of (n, n).
func seed(n, chunk int) *gpuarray.Array {
	rs := gpuarray.NewRandomState(42)
	x := rs.Normal(10, 1, gpuarray.Shape(n, n), gpuarray.Chunks(chunk, chunk))
	return x.Add(1).Slice(gpuarray.Every(2), gpuarray.Every(2)).Sum()
}

func runSeed(b *testing.B, s gpuarray.Scheduler, n, chunk int) {
	b.Helper()
	// Warm up: the workers start their executors.
	if _, err := seed(2000, 1000).Float64(gpuarray.On(s)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var sum float64
	start := time.Now()
	for i := 0; i < b.N; i++ {
		v, err := seed(n, chunk).Float64(gpuarray.On(s))
		if err != nil {
			b.Fatal(err)
		}
		sum = v
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/seed")
	b.Logf("sum %.6g", sum)
}

var seedCases = []struct{ n, chunk int }{{20000, 10000}, {20000, 5000}}

// BenchmarkSeedTwoHosts: a scheduler in the root namespace, one CPU worker (one thread) in
// each of two network namespaces.
func BenchmarkSeedTwoHosts(b *testing.B) {
	h := newHosts(b, 2)
	token := randHex(16)
	_, addr, _ := startScheduler(b, h.rootIP()+":0", token, "--dashboard", "off")
	startWorkers(b, h.names[0], addr, token, "a", 1, 1)
	startWorkers(b, h.names[1], addr, token, "b", 1, 1)
	c := connect(b, addr, token)
	waitWorkers(b, c, 30*time.Second, "a-cpu0", "b-cpu0")
	for _, sc := range seedCases {
		b.Run(fmt.Sprintf("n=%d/chunk=%d", sc.n, sc.chunk), func(b *testing.B) { runSeed(b, c, sc.n, sc.chunk) })
	}
}

// BenchmarkSeedLocalCluster: the same on a local cluster of two CPU workers of one thread.
func BenchmarkSeedLocalCluster(b *testing.B) {
	c, err := cluster.NewLocalCUDA(cluster.Options{CPUOnly: true, NWorkers: 2, ThreadsPerWorker: 1, Binary: workerBin, Dashboard: "off"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, sc := range seedCases {
		b.Run(fmt.Sprintf("n=%d/chunk=%d", sc.n, sc.chunk), func(b *testing.B) { runSeed(b, c.Client, sc.n, sc.chunk) })
	}
}

// BenchmarkFetch1GBAcrossHosts makes a 1 GiB []byte on host a and hands it to a task on host
// b, which fetches it from a's worker directly. It reports the fetch's throughput as the
// worker measured it (bytes on the wire / time from connect to the last byte).
func BenchmarkFetch1GBAcrossHosts(b *testing.B) {
	h := newHosts(b, 2)
	token := randHex(16)
	_, addr, dash := startScheduler(b, h.rootIP()+":0", token, "--dashboard", "127.0.0.1:0")
	startWorkers(b, h.names[0], addr, token, "a", 1, 1)
	startWorkers(b, h.names[1], addr, token, "b", 1, 1)
	c := connect(b, addr, token)
	waitWorkers(b, c, 30*time.Second, "a-cpu0", "b-cpu0")
	mk := cluster.Source{Code: "func mk(n int) []byte { return make([]byte, n) }", Func: "mk"}
	size := cluster.Source{Code: "func size(b []byte) int { return len(b) }", Func: "size"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const n = 1 << 30
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x := c.Submit(mk, n, cluster.Workers("a-cpu0"))
		if err := c.Wait([]*cluster.Future{x}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		y := c.Submit(size, x, cluster.Workers("b-cpu0"))
		v, err := y.Result(ctx)
		if err != nil || v != n {
			b.Fatalf("size = %v, %v", v, err)
		}
		wall := time.Since(start)
		for _, e := range dashState(b, dash).Stream {
			if e.Key == y.Key() {
				b.ReportMetric(float64(e.FetchBytes)/e.FetchSeconds/1e6, "MB/s-fetch")
				b.ReportMetric(e.FetchSeconds, "s-fetch")
				b.ReportMetric(wall.Seconds(), "s-task")
				b.Logf("fetched %d bytes from host a in %.3f s (%.0f MB/s); the dependent task took %.3f s end to end",
					e.FetchBytes, e.FetchSeconds, float64(e.FetchBytes)/e.FetchSeconds/1e6, wall.Seconds())
			}
		}
		x.Release()
		y.Release()
	}
}
