package cluster_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

func doubled(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = 2 * x
	}
	return out
}

// waitUntil polls cond until it holds or a generous deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 120 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const gateSrc = `import "time"

func gated(ev string, x int) (int, error) {
	ok, err := cluster.NewEvent(ev).Wait(0)
	if err != nil {
		return 0, err
	}
	_ = ok
	time.Sleep(time.Millisecond)
	return x * 3, nil
}`

var gated = cluster.Source{Code: gateSrc, Func: "gated"}

func TestAdaptGrowsAndShrinksUnderABurstLeavingNoProcess(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 1, ThreadsPerWorker: 1})
	if err := c.Adapt(1, 3); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	note := func() int {
		pids := c.WorkerPIDs()
		for _, p := range pids {
			seen[p] = true
		}
		return len(pids)
	}
	ev := cluster.NewEvent("adapt-gate")
	xs := make([]int, 20)
	for i := range xs {
		xs[i] = i
	}
	evs := make([]string, len(xs))
	for i := range evs {
		evs[i] = "adapt-gate"
	}
	fs := c.Map(gated, evs, xs)
	// Tasks wait on the event, so they stay queued until the cluster has grown to its max.
	waitUntil(t, "grow to 3 workers", func() bool { return note() == 3 && len(c.WorkerInfo()) == 3 })
	if err := ev.Set(); err != nil {
		t.Fatal(err)
	}
	got, err := c.GatherContext(ctxT(t), fs)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i*3 {
			t.Fatalf("result %d = %v, want %d", i, v, i*3)
		}
	}
	waitUntil(t, "shrink to 1 worker", func() bool { return note() == 1 && len(c.WorkerInfo()) == 1 })
	c.StopAdapt()
	live := c.WorkerPIDs()
	for pid := range seen {
		isLive := false
		for _, p := range live {
			isLive = isLive || p == pid
		}
		if !isLive && alive(pid) {
			t.Errorf("retired worker process %d is still running", pid)
		}
	}
	if len(seen) < 3 {
		t.Errorf("saw %d worker processes, want at least 3", len(seen))
	}
	c.Close()
	for pid := range seen {
		if alive(pid) {
			t.Errorf("worker process %d outlived Close", pid)
		}
	}
}

func TestRetireMovesKeptChunks(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3, ThreadsPerWorker: 1})
	x := gpuarray.NewRandomState(7).Normal(0, 1, gpuarray.Shape(400, 300), gpuarray.Chunks(100, 100))
	want, err := x.ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	p := c.Persist(x)
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	where, err := c.WhoHas(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(where) != 12 {
		t.Fatalf("WhoHas: %d chunks, want 12: %v", len(where), where)
	}
	hw, err := c.HasWhat()
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for name, keys := range hw {
		if len(keys) > 0 && (victim == "" || name < victim) {
			victim = name
		}
	}
	if victim == "" {
		t.Fatalf("no worker holds chunks: %v", hw)
	}
	before := c.WorkerPIDs()
	if err := c.RetireWorkers(victim); err != nil {
		t.Fatal(err)
	}
	if alive(before[victim]) {
		waitUntil(t, "retired worker exits", func() bool { return !alive(before[victim]) })
	}
	hw, err = c.HasWhat()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hw[victim]; ok {
		t.Fatalf("retired worker %s still listed: %v", victim, hw)
	}
	n := 0
	for _, keys := range hw {
		n += len(keys)
	}
	if n != 12 {
		t.Fatalf("after retiring %s the others hold %d chunks, want 12: %v", victim, n, hw)
	}
	// No recomputation: the stream has no persist task after the retirement.
	since := time.Now()
	got, err := p.Mul(2).ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, doubled(want)) {
		t.Fatal("2*x after the retirement differs from the inline values")
	}
	ts, err := c.GetTaskStream(since)
	if err != nil {
		t.Fatal(err)
	}
	if k := ts.Kinds()["persist"]; k != 0 {
		t.Errorf("%d persisted chunks were computed again after the move", k)
	}
	if err := c.Rebalance(); err != nil {
		t.Fatal(err)
	}
	if err := c.Replicate(p, 2); err != nil {
		t.Fatal(err)
	}
	where, err = c.WhoHas(p)
	if err != nil {
		t.Fatal(err)
	}
	for k, ws := range where {
		if len(ws) != 2 || ws[0] == ws[1] {
			t.Fatalf("after Replicate(p, 2) chunk %s is on %v", k, ws)
		}
	}
	// A replicated chunk survives its holder's death without recomputation.
	var holder string
	for _, ws := range where {
		holder = ws[0]
		break
	}
	since = time.Now()
	if err := syscall.Kill(c.WorkerPIDs()[holder], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got, err = p.Mul(2).ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, doubled(want)) {
		t.Fatalf("2*x after losing %s differs from the inline values", holder)
	}
	ts, _ = c.GetTaskStream(since)
	if k := ts.Kinds()["persist"]; k != 0 {
		t.Errorf("%d replicated chunks were computed again after %s died", k, holder)
	}
}

func TestRestartGivesNewPIDs(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	before := c.WorkerPIDs()
	x := gpuarray.NewRandomState(3).Normal(0, 1, gpuarray.Shape(200), gpuarray.Chunks(50))
	want, err := x.ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	p := c.Persist(x)
	sub := c.Submit(inc, 1)
	if err := c.Wait([]*cluster.Future{sub}); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	after := c.WorkerPIDs()
	if len(after) != 2 {
		t.Fatalf("after Restart: %v", after)
	}
	for name, pid := range after {
		if pid == before[name] {
			t.Errorf("worker %s kept PID %d", name, pid)
		}
	}
	for _, w := range c.WorkerInfo() {
		if w.PID != after[w.Name] {
			t.Errorf("scheduler lists %s with PID %d, process is %d", w.Name, w.PID, after[w.Name])
		}
	}
	got, err := p.ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, want) {
		t.Fatal("the persisted array after Restart differs from the inline values")
	}
	if _, err := sub.Result(ctxT(t)); err == nil || !strings.Contains(err.Error(), "restarted") {
		t.Fatalf("a submitted call held across Restart: %v, want an error saying its worker was restarted", err)
	}
	if err := c.RestartWorkers("cpu1"); err != nil {
		t.Fatal(err)
	}
	if pid := c.WorkerPIDs()["cpu1"]; pid == after["cpu1"] {
		t.Errorf("RestartWorkers(cpu1) kept PID %d", pid)
	}
	if pid := c.WorkerPIDs()["cpu0"]; pid != after["cpu0"] {
		t.Errorf("RestartWorkers(cpu1) restarted cpu0 too (%d -> %d)", after["cpu0"], pid)
	}
}

func TestScaleWaitForWorkersAndRunOnWorkers(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 1, ThreadsPerWorker: 1})
	if err := c.Scale(3); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForWorkers(3, 120*time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := c.RunOnWorkers(pidFn)
	if err != nil {
		t.Fatal(err)
	}
	pids := c.WorkerPIDs()
	if len(res) != 3 {
		t.Fatalf("RunOnWorkers on %d workers: %v", len(res), res)
	}
	for name, v := range res {
		if v != pids[name] {
			t.Errorf("RunOnWorkers: %s says PID %v, its process is %d", name, v, pids[name])
		}
	}
	some, err := c.RunOnWorkers(inc, 41, cluster.Workers("cpu2"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(some, map[string]any{"cpu2": 42}) {
		t.Fatalf("RunOnWorkers(inc, 41, Workers(cpu2)) = %v", some)
	}
	if err := c.Scale(1); err != nil {
		t.Fatal(err)
	}
	if n := len(c.WorkerInfo()); n != 1 {
		var names []string
		for _, w := range c.WorkerInfo() {
			names = append(names, w.Name)
		}
		sort.Strings(names)
		t.Fatalf("after Scale(1): %d workers %v", n, names)
	}
	if _, err := c.RunOnWorkers(cluster.Source{Code: "func bad() int { panic(\"no\") }", Func: "bad"}); err == nil {
		t.Fatal("a panicking RunOnWorkers function gave no error")
	}
	_ = fmt.Sprint
	_ = context.Background
}
