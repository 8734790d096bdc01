package cluster_test

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/interp"
)

// BenchmarkScale1To8 times Scale(8) on a local cluster of one CPU worker until all eight have
// joined, and dask's LocalCluster.scale(8) in the same run (GPUNOTES_PYTHON, with
// distributed), reported as ratio dask/ours.
func BenchmarkScale1To8(b *testing.B) {
	var ours, theirs time.Duration
	for i := 0; i < b.N; i++ {
		c, err := cluster.NewLocalCUDA(cluster.Options{CPUOnly: true, NWorkers: 1, ThreadsPerWorker: 1, Binary: workerBin, Dashboard: "off"})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := c.Scale(8); err != nil {
			b.Fatal(err)
		}
		if err := c.WaitForWorkers(8, 10*time.Minute); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		c.Close()
		if py := os.Getenv("GPUNOTES_PYTHON"); py != "" {
			out, err := exec.Command(py, "testdata/dask_scale.py", "8").CombinedOutput()
			if err != nil {
				b.Fatalf("dask: %v\n%s", err, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "dask_scale_seconds" {
					s, _ := strconv.ParseFloat(f[1], 64)
					theirs += time.Duration(s * float64(time.Second))
				}
			}
		}
	}
	b.ReportMetric(ours.Seconds()/float64(b.N), "s/scale")
	if theirs > 0 {
		b.ReportMetric(theirs.Seconds()/float64(b.N), "dask-s/scale")
		b.ReportMetric(theirs.Seconds()/ours.Seconds(), "dask/ours")
	}
}

const lockLoopSrc = `import (
	"sort"
	"time"
)

func lockLoop(name string, n int) ([]float64, error) {
	l := cluster.NewLock(name)
	us := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		if _, err := l.Acquire(0); err != nil {
			return nil, err
		}
		if err := l.Release(); err != nil {
			return nil, err
		}
		us = append(us, float64(time.Since(t).Nanoseconds())/1e3)
	}
	sort.Float64s(us)
	return us, nil
}`

// BenchmarkLockRoundTripFromWorker: Acquire + Release of a Lock from a submitted function on
// a CPU worker, over loopback; p50 and p90 in microseconds.
func BenchmarkLockRoundTripFromWorker(b *testing.B) {
	c, err := cluster.NewLocalCUDA(cluster.Options{CPUOnly: true, NWorkers: 1, ThreadsPerWorker: 1, Binary: workerBin, Dashboard: "off"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	fn := cluster.Source{Code: lockLoopSrc, Func: "lockLoop"}
	var all []float64
	for i := 0; i < b.N; i++ {
		v, err := c.Submit(fn, "bench-lock", 1000).Result(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		us, ok := v.([]float64)
		if !ok || len(us) != 1000 {
			b.Fatalf("lockLoop returned %T", v)
		}
		all = append(all, us...)
	}
	sort.Float64s(all)
	b.ReportMetric(all[len(all)/2], "p50-µs")
	b.ReportMetric(all[len(all)*9/10], "p90-µs")
}

// evaluator runs shipped source in an interpreter session of this process (the kernel's
// part for RunOnScheduler).
type evaluator struct{ s *interp.Session }

func (e evaluator) Call(ctx context.Context, src, fn string, args []any) ([]any, error) {
	return e.s.Call(ctx, src, fn, args)
}

func TestRunOnSchedulerAndWorkerPlugins(t *testing.T) {
	s, err := interp.New(interp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cluster.SetSchedulerEvaluator(evaluator{s})
	defer cluster.SetSchedulerEvaluator(nil)
	c := newCluster(t, cluster.Options{NWorkers: 1, ThreadsPerWorker: 1})
	v, err := c.RunOnScheduler(pidFn)
	if err != nil || v != os.Getpid() {
		t.Fatalf("RunOnScheduler(pid) = %v %v, want this process %d", v, err, os.Getpid())
	}
	dir := t.TempDir()
	src := `import (
	"fmt"
	"os"
	"path/filepath"
)

func setup() error { return os.WriteFile(filepath.Join(` + strconv.Quote(dir) + `, fmt.Sprint(os.Getpid())), []byte("up"), 0o644) }

func teardown() error { return os.Remove(filepath.Join(` + strconv.Quote(dir) + `, fmt.Sprint(os.Getpid()))) }`
	files := func() []string {
		es, _ := os.ReadDir(dir)
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		sort.Strings(out)
		return out
	}
	pids := func() []string {
		var out []string
		for _, p := range c.WorkerPIDs() {
			out = append(out, strconv.Itoa(p))
		}
		sort.Strings(out)
		return out
	}
	if err := c.RegisterWorkerPlugin("marker", cluster.Source{Code: src, Func: "setup"}, "teardown"); err != nil {
		t.Fatal(err)
	}
	if got, want := files(), pids(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after registering: files %v, workers %v", got, want)
	}
	// A worker that joins later runs setup too.
	if err := c.Scale(2); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForWorkers(2, 120*time.Second); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the new worker's setup", func() bool { return len(files()) == 2 })
	if got, want := files(), pids(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after Scale(2): files %v, workers %v", got, want)
	}
	if err := c.UnregisterWorkerPlugin("marker"); err != nil {
		t.Fatal(err)
	}
	if got := files(); len(got) != 0 {
		t.Fatalf("after unregistering, teardown left %v", got)
	}
	bad := cluster.Source{Code: `import "errors"
func nope() error { return errors.New("setup refused") }`, Func: "nope"}
	if err := c.RegisterWorkerPlugin("bad", bad, ""); err == nil || !strings.Contains(err.Error(), "setup refused") {
		t.Fatalf("a failing setup: %v", err)
	}
}
