package cluster_test

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/display"
)

const grabSrc = `func grab(name string) (bool, error) { return cluster.NewLock(name).Acquire(0) }`

var grab = cluster.Source{Code: grabSrc, Func: "grab"}

func TestLockOfSIGKILLedWorkerIsReleasedWhenItsLeaseEnds(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	ctx := ctxT(t)
	f := c.Submit(grab, "held-by-a-worker", cluster.Workers("cpu1"))
	v, err := f.Result(ctx)
	if err != nil || v != true {
		t.Fatalf("the worker's Acquire: %v %v", v, err)
	}
	// The lease stays with cpu1's connection after the function returned. Release the future
	// so that cpu1's death does not run grab again.
	f.Release()
	l := cluster.NewLock("held-by-a-worker")
	if ok, err := l.Acquire(-1); err != nil || ok {
		t.Fatalf("Acquire while the worker holds the lock: %v %v", ok, err)
	}
	if locked, err := l.Locked(); err != nil || !locked {
		t.Fatalf("Locked() = %v %v while the worker holds it", locked, err)
	}
	if err := syscall.Kill(c.WorkerPIDs()["cpu1"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ok, err := l.Acquire(120 * time.Second)
	if err != nil || !ok {
		t.Fatalf("Acquire after the holder was killed: %v %v", ok, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err == nil {
		t.Fatal("a second Release gave no error")
	}
	// A semaphore of two leases: a third waits.
	a, b, d := cluster.NewSemaphore("two", 2), cluster.NewSemaphore("two", 2), cluster.NewSemaphore("two", 2)
	for _, s := range []*cluster.Semaphore{a, b} {
		if ok, err := s.Acquire(0); err != nil || !ok {
			t.Fatalf("semaphore Acquire: %v %v", ok, err)
		}
	}
	if ok, err := d.Acquire(-1); err != nil || ok {
		t.Fatalf("a third lease of two: %v %v", ok, err)
	}
	if n, err := a.Held(); err != nil || n != 2 {
		t.Fatalf("Held = %d %v", n, err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Acquire(0); err != nil || !ok {
		t.Fatalf("Acquire after a Release: %v %v", ok, err)
	}
	if _, err := cluster.NewSemaphore("two", 3).Acquire(-1); err == nil {
		t.Fatal("a semaphore handle with another lease count gave no error")
	}
}

const counterSrc = `func count(lock, v string, n int) (int, error) {
	l := cluster.NewLock(lock)
	x := cluster.NewVariable(v)
	last := 0
	for i := 0; i < n; i++ {
		if _, err := l.Acquire(0); err != nil {
			return 0, err
		}
		cur, err := x.Get(0)
		if err != nil {
			return 0, err
		}
		last = cur.(int) + 1
		if err := x.Set(last); err != nil {
			return 0, err
		}
		if err := l.Release(); err != nil {
			return 0, err
		}
	}
	q := cluster.NewQueue("done-" + v)
	return last, q.Put(n)
}`

// TestLockSerializesSubmittedFunctions has functions on three workers increment one variable
// under one lock: no increment is lost.
func TestLockSerializesSubmittedFunctions(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3, ThreadsPerWorker: 1})
	if err := cluster.NewVariable("counter").Set(0); err != nil {
		t.Fatal(err)
	}
	fn := cluster.Source{Code: counterSrc, Func: "count"}
	var fs []*cluster.Future
	for _, w := range []string{"cpu0", "cpu1", "cpu2"} {
		fs = append(fs, c.Submit(fn, "counter-lock", "counter", 40, cluster.Workers(w)))
	}
	if _, err := c.GatherContext(ctxT(t), fs); err != nil {
		t.Fatal(err)
	}
	v, err := cluster.NewVariable("counter").Get(-1)
	if err != nil || v != 120 {
		t.Fatalf("counter = %v %v, want 120", v, err)
	}
	q := cluster.NewQueue("done-counter")
	if n, err := q.Len(); err != nil || n != 3 {
		t.Fatalf("queue length %d %v, want 3", n, err)
	}
	for i := 0; i < 3; i++ {
		if x, err := q.Get(-1); err != nil || x != 40 {
			t.Fatalf("queue item %v %v", x, err)
		}
	}
	if _, err := q.Get(-1); err == nil {
		t.Fatal("Get of an empty queue without waiting gave no error")
	}
}

func TestQueueVariableEventAndDatasetsSurviveClientReconnect(t *testing.T) {
	token := randHex(16)
	_, addr, _ := startScheduler(t, "127.0.0.1:0", token, "--dashboard", "off")
	startWorkers(t, "", addr, token, "r", 2, 1)
	c1, err := cluster.Connect(addr, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.WaitForWorkers(2, 120*time.Second); err != nil {
		t.Fatal(err)
	}
	q := cluster.NewQueue("jobs")
	for _, v := range []any{"a", 2, 3.5} {
		if err := q.Put(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.NewVariable("config").Set(map[string]any{"n": 7}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.NewEvent("ready").Set(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Publish("answer", 42); err != nil {
		t.Fatal(err)
	}
	// A lock the first client holds ends with its connection.
	if ok, err := cluster.NewLock("client-lock").Acquire(0); err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	if err := c1.Scale(3); err == nil || !strings.Contains(err.Error(), "does not start workers") {
		t.Fatalf("Scale on a standalone scheduler's client: %v", err)
	}
	if err := c1.Restart(); err == nil {
		t.Fatal("Restart on a standalone scheduler's client gave no error")
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := cluster.Connect(addr, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c2.Close() })
	for _, want := range []any{"a", 2, 3.5} {
		got, err := q.Get(10 * time.Second)
		if err != nil || got != want {
			t.Fatalf("queue after reconnect: %v %v, want %v", got, err, want)
		}
	}
	v, err := cluster.NewVariable("config").Get(-1)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(map[string]any); !ok || m["n"] != 7 {
		t.Fatalf("variable after reconnect: %#v", v)
	}
	if ok, err := cluster.NewEvent("ready").IsSet(); err != nil || !ok {
		t.Fatalf("event after reconnect: %v %v", ok, err)
	}
	if ok, err := cluster.NewLock("client-lock").Acquire(120 * time.Second); err != nil || !ok {
		t.Fatalf("the disconnected client's lock: %v %v", ok, err)
	}
	names, err := c2.Datasets()
	if err != nil || len(names) != 1 || names[0] != "answer" {
		t.Fatalf("Datasets: %v %v", names, err)
	}
	if v, err := c2.GetDataset("answer"); err != nil || v != 42 {
		t.Fatalf("GetDataset: %v %v", v, err)
	}
	// A published future keeps its result for other clients.
	f := c2.Submit(inc, 9)
	if err := c2.Publish("ten", f); err != nil {
		t.Fatal(err)
	}
	g, err := c2.GetDataset("ten")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := g.(*cluster.Future).Result(ctxT(t)); err != nil || v != 10 {
		t.Fatalf("published future: %v %v", v, err)
	}
	// Worker-side: a submitted function reads the queue the client filled.
	if err := q.Put(5); err != nil {
		t.Fatal(err)
	}
	take := cluster.Source{Code: `import "time"
func take(name string) (any, error) { return cluster.NewQueue(name).Get(30 * time.Second) }`, Func: "take"}
	if v, err := c2.Submit(take, "jobs").Result(ctxT(t)); err != nil || v != 5 {
		t.Fatalf("a worker's Get: %v %v", v, err)
	}
	logs, err := c2.WorkerLogs(20)
	if err != nil || len(logs) != 2 {
		t.Fatalf("WorkerLogs: %v %v", logs, err)
	}
	for name, lines := range logs {
		if len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), "joined scheduler") {
			t.Errorf("worker %s logged %q", name, lines)
		}
	}
}

// sinkRec records displays (a cell's output) for Progress.
type sinkRec struct {
	mu      sync.Mutex
	shown   []display.Data
	updates []display.Data
}

func (s *sinkRec) Display(d display.Data, update bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if update {
		s.updates = append(s.updates, d)
	} else {
		s.shown = append(s.shown, d)
	}
}
func (s *sinkRec) Clear(bool) {}

func TestProgressAndTaskStreamShowEveryTask(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	rec := &sinkRec{}
	restore := display.Bind(ctxT(t), rec)
	defer restore()
	since := time.Now()
	incs := c.Map(inc, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	naps := c.Map(nap, []int{50, 50, 50, 50, 50}, []int{1, 2, 3, 4, 5})
	all := append(append([]*cluster.Future{}, incs...), naps...)
	if err := c.Progress(all); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	if len(rec.shown) != 1 {
		t.Fatalf("Progress showed %d displays, want 1 updated in place", len(rec.shown))
	}
	last := rec.shown[0]
	for _, u := range rec.updates {
		if u.DisplayID != last.DisplayID {
			t.Fatalf("an update of display %s, not the progress display %s", u.DisplayID, last.DisplayID)
		}
		last = u
	}
	rec.mu.Unlock()
	h, _ := last.MIME["text/html"].(string)
	if !strings.Contains(h, "10 / 10") || !strings.Contains(h, "5 / 5") || !strings.Contains(h, ">inc<") || !strings.Contains(h, ">nap<") {
		t.Fatalf("final progress display: %s", h)
	}
	ts, err := c.GetTaskStream(since)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, e := range ts.Events {
		keys[e.Key] = true
		if e.Worker == "" || e.Stop.Before(e.Start) {
			t.Errorf("event %+v", e)
		}
	}
	for _, f := range all {
		if !keys[f.Key()] {
			t.Errorf("task %s is not in the stream", f.Key())
		}
	}
	if k := ts.Kinds(); k["inc"] != 10 || k["nap"] != 5 {
		t.Errorf("kinds %v", k)
	}
	page := ts.HTML()
	for _, f := range all {
		if !strings.Contains(page, f.Key()) {
			t.Errorf("task %s is not in the stream's HTML", f.Key())
		}
	}
	if n := strings.Count(ts.SVG(), "<rect"); n < 15 {
		t.Errorf("the chart has %d bars, want one per task (15)", n)
	}
	// A performance report: stream, memory, transfers, code.
	path := filepath.Join(t.TempDir(), "report.html")
	err = c.PerformanceReport(path, func() error {
		_, err := c.GatherContext(ctxT(t), c.Map(add, []int{1, 2, 3}, []int{10, 20, 30}))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Task stream</h2>", "Worker memory", "Transfers", "func add(a, b int) int", "add-"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	boom := errors.New("measured failure")
	if err := c.PerformanceReport(path, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("PerformanceReport of a failing function: %v", err)
	}
}

func TestPrioritiesFireAndForgetWaitFor(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 1, ThreadsPerWorker: 1})
	ctx := ctxT(t)
	// Hold the only thread (and the queue behind it) until the rest is submitted.
	gate := cluster.NewEvent("prio-gate")
	blockers := c.Map(gated, []string{"prio-gate", "prio-gate"}, []int{0, 0})
	low := c.Map(inc, []int{1, 2, 3}, cluster.Priority(-5))
	high := c.WithPriority(10).Map(inc, []int{4, 5, 6})
	if err := gate.Set(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GatherContext(ctx, append(append(append([]*cluster.Future{}, blockers...), low...), high...)); err != nil {
		t.Fatal(err)
	}
	ts, err := c.GetTaskStream(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	stop := map[string]time.Time{}
	for _, e := range ts.Events {
		stop[e.Key] = e.Stop
	}
	for _, h := range high {
		for _, l := range low {
			if stop[h.Key()].After(stop[l.Key()]) {
				t.Errorf("high-priority %s finished after low-priority %s", h.Key(), l.Key())
			}
		}
	}
	// Fire and forget: the task runs though its future is released at once.
	f := c.Submit(cluster.Source{Code: `func mark(name string) error { return cluster.NewEvent(name).Set() }`, Func: "mark"}, "faf-ran")
	if err := c.FireAndForget(f); err != nil {
		t.Fatal(err)
	}
	f.Release()
	if ok, err := cluster.NewEvent("faf-ran").Wait(120 * time.Second); err != nil || !ok {
		t.Fatalf("fire-and-forget task did not run: %v %v", ok, err)
	}
	// WaitFor: the first of a finished and a gated future.
	quick := c.Submit(inc, 1)
	if _, err := quick.Result(ctx); err != nil {
		t.Fatal(err)
	}
	slow := c.Submit(gated, "never-set", 1)
	done, notDone, err := c.WaitFor([]*cluster.Future{quick, slow}, cluster.FirstCompleted, 0)
	if err != nil || len(done) != 1 || done[0] != quick || len(notDone) != 1 {
		t.Fatalf("FirstCompleted: done %v, not done %v, %v", done, notDone, err)
	}
	_ = cluster.NewEvent("never-set").Set()
	done, notDone, err = c.WaitFor([]*cluster.Future{quick, slow}, cluster.AllCompleted, 0)
	if err != nil || len(done) != 2 || len(notDone) != 0 {
		t.Fatalf("AllCompleted: done %v, not done %v, %v", done, notDone, err)
	}
	var vals []int
	for r := range c.AsCompletedResults(c.Map(inc, []int{10, 20, 30})) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		vals = append(vals, r.Value.(int))
	}
	sort.Ints(vals)
	if len(vals) != 3 || vals[0] != 11 || vals[2] != 31 {
		t.Fatalf("AsCompletedResults: %v", vals)
	}
}
