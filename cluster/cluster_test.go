package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
)

var workerBin string

// TestMain finds the gpunotes binary (GPUNOTES_BIN, as `make test` sets it) or builds one, and
// doubles as the "kernel" process of the parent-death test.
func TestMain(m *testing.M) {
	if os.Getenv("GPUNOTES_CLUSTER_TEST_PARENT") == "1" {
		parentMain()
		return
	}
	workerBin = os.Getenv("GPUNOTES_BIN")
	var tmp string
	if workerBin == "" {
		var err error
		tmp, err = os.MkdirTemp("", "gpunotes-cluster-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		workerBin = filepath.Join(tmp, "gpunotes")
		cmd := exec.Command("go", "build", "-o", workerBin, "..")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build gpunotes for the cluster tests:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	os.Exit(code)
}

// parentMain starts a cluster, prints its worker PIDs and waits to be killed.
func parentMain() {
	c, err := cluster.NewLocalCUDA(cluster.Options{CPUOnly: true, NWorkers: 2, Binary: os.Getenv("GPUNOTES_BIN")})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for _, pid := range c.WorkerPIDs() {
		fmt.Println("pid", pid)
	}
	fmt.Println("ready")
	select {}
}

const (
	incSrc   = "func inc(x int) int { return x + 1 }"
	addSrc   = "func add(a, b int) int { return a + b }"
	pidSrc   = "import \"os\"\nfunc pid() int { return os.Getpid() }"
	sleepSrc = "import \"time\"\nfunc nap(ms int, x int) int { time.Sleep(time.Duration(ms) * time.Millisecond); return x * 2 }"
	panicSrc = "func boom(x int) int { var m map[string]int; m[\"x\"] = x; return x }"
	errSrc   = "import \"errors\"\nfunc fails(x int) (int, error) { return 0, errors.New(\"no good\") }"
)

var (
	inc   = cluster.Source{Code: incSrc, Func: "inc"}
	add   = cluster.Source{Code: addSrc, Func: "add"}
	pidFn = cluster.Source{Code: pidSrc, Func: "pid"}
	nap   = cluster.Source{Code: sleepSrc, Func: "nap"}
)

func newCluster(t testing.TB, o cluster.Options) *cluster.LocalCUDA {
	t.Helper()
	o.Binary = workerBin
	o.CPUOnly = true
	c, err := cluster.NewLocalCUDA(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie is dead too (its parent has not reaped it yet).
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data))
	return len(f) > 2 && f[2] != "Z"
}

func TestSubmitMapGatherAndDependencies(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	ctx := ctxT(t)
	t.Logf("2 CPU workers ready in %v", c.StartTime())
	if ws := c.WorkerInfo(); len(ws) != 2 || ws[0].Name != "cpu0" || ws[1].Name != "cpu1" {
		t.Fatalf("workers %+v", ws)
	}
	v, err := c.Submit(inc, 41).Result(ctx)
	if err != nil || v != 42 {
		t.Fatalf("inc(41) = %v, %v", v, err)
	}
	xs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	fs := c.Map(inc, xs)
	got, err := c.GatherContext(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if g != i+1 {
			t.Fatalf("Map result %d = %v", i, g)
		}
	}
	// Futures as arguments: add(inc(1), inc(2)) = 5, computed where the inputs are.
	a, b := c.Submit(inc, 1), c.Submit(inc, 2)
	s := c.Submit(add, a, b)
	if v, err := s.Result(ctx); err != nil || v != 5 {
		t.Fatalf("add(inc 1, inc 2) = %v, %v", v, err)
	}
	if s.Status() != cluster.StateMemory || !s.Done() {
		t.Fatalf("status %s", s.Status())
	}
	// A returned error fails the task with its message.
	_, err = c.Submit(cluster.Source{Code: errSrc, Func: "fails"}, 1).Result(ctx)
	var te *cluster.TaskError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "no good") {
		t.Fatalf("returned error: %v", err)
	}
	if !strings.Contains(c.HTML(), "<table") || !strings.Contains(c.HTML(), "cpu1") || !strings.Contains(c.String(), "cpu0") {
		t.Fatal("reprs lack the worker table")
	}
}

func TestWorkerRestriction(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	ctx := ctxT(t)
	pids := c.WorkerPIDs()
	for _, name := range []string{"cpu0", "cpu1"} {
		for i := 0; i < 4; i++ {
			v, err := c.Submit(pidFn, cluster.Workers(name)).Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v != pids[name] {
				t.Fatalf("task restricted to %s ran in pid %v, want %d", name, v, pids[name])
			}
		}
	}
	_, err := c.Submit(pidFn, cluster.Workers("nope")).Result(ctx)
	if err == nil || !strings.Contains(err.Error(), "no such worker") {
		t.Fatalf("unknown worker restriction: %v", err)
	}
	// Resources: a task needing more than any worker offers waits; Cancel ends it.
	f := c.Submit(inc, 1, cluster.Resources(map[string]float64{"GPU": 1}))
	time.Sleep(50 * time.Millisecond)
	if f.Status() != cluster.StateWaiting {
		t.Fatalf("GPU task on CPU workers: %s", f.Status())
	}
	c.Cancel(f)
	if _, err := f.Result(ctx); !errors.Is(err, cluster.ErrCancelled) {
		t.Fatalf("cancelled future: %v", err)
	}
}

func TestWorkerKilledMidTaskIsRestartedAndTaskRetried(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	ctx := ctxT(t)
	old := c.WorkerPIDs()["cpu0"]
	f := c.Submit(nap, 1500, 21, cluster.Workers("cpu0"))
	deadline := time.Now().Add(10 * time.Second)
	for f.Status() != cluster.StateProcessing {
		if time.Now().After(deadline) {
			t.Fatal("task never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	v, err := f.Result(ctx)
	if err != nil || v != 42 {
		t.Fatalf("result after the worker was killed: %v, %v", v, err)
	}
	now := c.WorkerPIDs()["cpu0"]
	if now == old || now == 0 {
		t.Fatalf("cpu0 pid %d after restart (was %d)", now, old)
	}
	r := c.Restarts()["cpu0"]
	if !strings.Contains(r, "1 restarts") || !strings.Contains(r, "killed") {
		t.Fatalf("restart record %q", r)
	}
	var row cluster.WorkerInfo
	for _, w := range c.WorkerInfo() {
		if w.Name == "cpu0" {
			row = w
		}
	}
	if row.Restarts != 1 || !strings.Contains(c.HTML(), "Restarts") {
		t.Fatalf("table does not show the restart: %+v", row)
	}
	// A task that kills its worker every time gives up after the retry limit.
	kill := cluster.Source{Code: "import \"time\"\nfunc hang() int { time.Sleep(time.Hour); return 0 }", Func: "hang"}
	g := c.Submit(kill, cluster.Workers("cpu1"), cluster.Retries(1))
	for k := 0; k < 2; k++ {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var pid int
			for _, w := range c.WorkerInfo() {
				if w.Name == "cpu1" && w.Processing > 0 {
					pid = w.PID
				}
			}
			if pid != 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("hang never started")
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err = g.Result(ctx)
	if err == nil || !strings.Contains(err.Error(), "KilledWorker") {
		t.Fatalf("task killing its worker twice with Retries(1): %v", err)
	}
	if v, err := c.Submit(inc, 1).Result(ctx); err != nil || v != 2 {
		t.Fatalf("cluster after KilledWorker: %v %v", v, err)
	}
}

func TestPanicGivesTracebackAndClusterKeepsServing(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 1})
	ctx := ctxT(t)
	_, err := c.Submit(cluster.Source{Code: panicSrc, Func: "boom"}, 3).Result(ctx)
	var te *cluster.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("panic: %v", err)
	}
	if !strings.Contains(te.Message, "nil map") || te.Traceback == "" || te.Worker != "cpu0" {
		t.Fatalf("task error %+v", te)
	}
	if v, err := c.Submit(inc, 9).Result(ctx); err != nil || v != 10 {
		t.Fatalf("after a panic: %v %v", v, err)
	}
	if len(c.Restarts()) != 0 {
		t.Fatalf("a panicking task restarted a worker: %v", c.Restarts())
	}
}

func TestCloseLeavesNoProcesses(t *testing.T) {
	c, err := cluster.NewLocalCUDA(cluster.Options{CPUOnly: true, NWorkers: 3, Binary: workerBin})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.WorkerPIDs()
	if len(pids) != 3 {
		t.Fatalf("pids %v", pids)
	}
	f := c.Submit(nap, 5000, 1)
	_ = f
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("worker %s (pid %d) still alive after Close", name, pid)
		}
	}
	if _, err := f.Result(context.Background()); err == nil {
		t.Error("a task of a closed cluster returned no error")
	}
}

func TestKernelKilledWorkersExit(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GPUNOTES_CLUSTER_TEST_PARENT=1", "GPUNOTES_BIN="+workerBin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "pid ") {
			p, _ := strconv.Atoi(strings.TrimPrefix(line, "pid "))
			pids = append(pids, p)
		}
		if line == "ready" || strings.HasPrefix(line, "error") {
			if line != "ready" {
				t.Fatal(line)
			}
			break
		}
	}
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				syscall.Kill(p, syscall.SIGKILL)
				t.Fatalf("worker %d outlived its killed parent by 5 s", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestWorkerWithoutTokenIsRefused(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cluster.RunWorker(ctx, cluster.WorkerConfig{Scheduler: c.Address(), Token: "wrong", Name: "intruder"}, nil)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("worker with a bad token: %v", err)
	}
	for _, w := range c.WorkerInfo() {
		if w.Name == "intruder" {
			t.Fatal("intruder joined")
		}
	}
}

func TestManyTasksAndClients(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 2})
	ctx := ctxT(t)
	xs := make([]int, 1000)
	for i := range xs {
		xs[i] = i
	}
	start := time.Now()
	got, err := c.GatherContext(ctx, c.Map(inc, xs))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if g != i+1 {
			t.Fatalf("task %d = %v", i, g)
		}
	}
	t.Logf("1000 tasks in %v", time.Since(start))
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for k := 0; k < 10; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.NewClient()
			fs := make([]*cluster.Future, 50)
			for i := range fs {
				fs[i] = cl.Submit(add, k, i)
			}
			res, err := cl.GatherContext(ctx, fs)
			if err != nil {
				errs <- err
				return
			}
			for i, r := range res {
				if r != k+i {
					errs <- fmt.Errorf("client %d task %d = %v", k, i, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// AsCompleted yields every future once.
	fs := c.Map(inc, []int{1, 2, 3, 4, 5})
	var seen []int
	for f := range c.AsCompleted(fs) {
		v, err := f.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, v.(int))
	}
	sort.Ints(seen)
	if fmt.Sprint(seen) != "[2 3 4 5 6]" {
		t.Fatalf("AsCompleted gave %v", seen)
	}
	if err := c.Wait(fs); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSubmitRoundTrip measures a trivial Submit from the client to a worker and back;
// it reports the p50 and p99 of the round trips besides the mean.
func BenchmarkSubmitRoundTrip(b *testing.B) {
	c := newCluster(b, cluster.Options{NWorkers: 1})
	ctx := context.Background()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := c.Submit(inc, i).Result(ctx); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

func TestFunctionsThatCannotBeShipped(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 1})
	ctx := ctxT(t)
	y := 3
	_, err := c.Submit(func(x int) int { return x + y }, 1).Result(ctx)
	if err == nil || !strings.Contains(err.Error(), "top level") || !strings.Contains(err.Error(), "closures") {
		t.Fatalf("closure: %v", err)
	}
	cluster.SetSourceResolver(nil)
	_, err = c.Submit("inc", 1).Result(ctx)
	if err == nil || !strings.Contains(err.Error(), "no source resolver") {
		t.Fatalf("name without a resolver: %v", err)
	}
	cluster.SetSourceResolver(func(name string) (string, error) {
		if name == "inc" {
			return incSrc, nil
		}
		return "", fmt.Errorf("%s is not a top-level func", name)
	})
	defer cluster.SetSourceResolver(nil)
	if v, err := c.Submit("inc", 1).Result(ctx); err != nil || v != 2 {
		t.Fatalf("inc by name: %v %v", v, err)
	}
	_, err = c.Submit("local", 1).Result(ctx)
	if err == nil || !strings.Contains(err.Error(), "closure over local variables") {
		t.Fatalf("unknown name: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		o    cluster.Options
		want string
	}{
		{cluster.Options{NWorkers: -1, CPUOnly: true}, "must not be negative"},
		{cluster.Options{MemoryLimit: "lots", CPUOnly: true}, "MemoryLimit"},
		{cluster.Options{Devices: []string{"0"}, CPUOnly: true}, "Devices"},
		{cluster.Options{Binary: "/nonexistent/gpunotes", CPUOnly: true}, "worker binary"},
		{cluster.Options{Listen: "256.0.0.1:1", CPUOnly: true}, "listen"},
	}
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/dev/nvidiactl"); err != nil {
			cases = append(cases, struct {
				o    cluster.Options
				want string
			}{cluster.Options{WorkersPerGPU: 2}, "needs GPUs"})
		}
	}
	for _, tc := range cases {
		if tc.o.Binary == "" {
			tc.o.Binary = workerBin
		}
		c, err := cluster.NewLocalCUDA(tc.o)
		if err == nil {
			c.Close()
			t.Errorf("%+v: no error", tc.o)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %q lacks %q", tc.o, err, tc.want)
		}
	}
}
