package cluster_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

const (
	fillSrc = "func fill(n int, v int) []int { s := make([]int, n); for i := range s { s[i] = v }; return s }"
	sumSrc  = "func total(s []int) int { t := 0; for _, v := range s { t += v }; return t }"
)

var (
	fill  = cluster.Source{Code: fillSrc, Func: "fill"}
	total = cluster.Source{Code: sumSrc, Func: "total"}
)

func connect(t testing.TB, addr, token string) *cluster.Client {
	t.Helper()
	c, err := cluster.Connect(addr, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMultiHostAcrossNamespaces runs a scheduler in the root namespace and a worker in each of
// two namespaces: Submit, Map and array Compute work through Connect, a task's input held on
// the other host is fetched worker to worker, and a client can disconnect and reconnect.
func TestMultiHostAcrossNamespaces(t *testing.T) {
	h := newHosts(t, 2)
	token := randHex(16)
	sched, addr, dash := startScheduler(t, h.rootIP()+":0", token, "--dashboard", "127.0.0.1:0")
	startWorkers(t, h.names[0], addr, token, "a", 1, 1)
	startWorkers(t, h.names[1], addr, token, "b", 1, 1)
	c := connect(t, addr, token)
	ws := waitWorkers(t, c, 30*time.Second, "a-cpu0", "b-cpu0")
	for i, w := range ws {
		if !strings.Contains(w.Address, h.ip(i)+":") {
			t.Fatalf("worker %s at %s, want host %s", w.Name, w.Address, h.ip(i))
		}
	}
	ctx := ctxT(t)

	// Map over both hosts.
	fs := c.Map(inc, []int{1, 2, 3, 4, 5, 6, 7, 8})
	vals, err := c.GatherContext(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vals) != "[2 3 4 5 6 7 8 9]" {
		t.Fatalf("Map: %v", vals)
	}

	// A result made on host a is the input of a task on host b: b fetches it from a.
	const n = 1 << 20
	x := c.Submit(fill, n, 3, cluster.Workers("a-cpu0"))
	y := c.Submit(total, x, cluster.Workers("b-cpu0"))
	v, err := y.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v != 3*n {
		t.Fatalf("total = %v, want %d", v, 3*n)
	}
	var fetched int64
	for _, e := range dashState(t, dash).Stream {
		if e.Key == y.Key() {
			fetched = e.FetchBytes
			if e.Worker != "b-cpu0" {
				t.Fatalf("%s ran on %s", e.Key, e.Worker)
			}
		}
	}
	if fetched < n {
		t.Fatalf("task %s fetched %d bytes from its peer, want >= %d (the input should move worker to worker)", y.Key(), fetched, n)
	}

	// Array Compute on the remote cluster equals the local result bit for bit.
	build := func() *gpuarray.Array {
		rs := gpuarray.NewRandomState(7)
		return rs.Normal(10, 1, gpuarray.Shape(600, 500), gpuarray.Chunks(150, 125)).Add(1).Slice(gpuarray.Every(2), gpuarray.Every(2)).Sum()
	}
	local, err := build().Float64(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := build().Float64(gpuarray.On(c), gpuarray.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if local != remote {
		t.Fatalf("remote sum %v != local %v", remote, local)
	}

	// A task error comes back as a TaskError with the worker's message.
	_, err = c.Submit(cluster.Source{Code: errSrc, Func: "fails"}, 1).Result(ctx)
	var te *cluster.TaskError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "no good") {
		t.Fatalf("error = %v, want a TaskError saying no good", err)
	}

	// The notebook goes away and comes back: the scheduler keeps serving.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := connect(t, addr, token)
	waitWorkers(t, c2, 10*time.Second, "a-cpu0", "b-cpu0")
	v, err = c2.Submit(inc, 41).Result(ctx)
	if err != nil || v != 42 {
		t.Fatalf("after reconnect: %v, %v", v, err)
	}
	if !strings.Contains(sched.log.String(), "disconnected") {
		t.Fatalf("scheduler log does not mention the client leaving:\n%s", sched.log)
	}
	if _, err := cluster.Connect(addr, "wrong"+token); !errors.Is(err, cluster.ErrRefused) {
		t.Fatalf("client with a wrong token: %v, want ErrRefused", err)
	}
}

// TestLinkDownMidCompute cuts one host off while a tree of tasks runs on both: the scheduler
// drops its worker, runs its tasks (and recomputes the results it held) on the other host,
// and the result is correct.
func TestLinkDownMidCompute(t *testing.T) {
	h := newHosts(t, 2)
	token := randHex(16)
	sched, addr, _ := startScheduler(t, h.rootIP()+":0", token, "--dashboard", "off", "--heartbeat", "2s")
	startWorkers(t, h.names[0], addr, token, "a", 1, 1)
	startWorkers(t, h.names[1], addr, token, "b", 1, 1)
	c := connect(t, addr, token)
	waitWorkers(t, c, 30*time.Second, "a-cpu0", "b-cpu0")
	ctx := ctxT(t)

	const leaves = 24
	xs := make([]int, leaves)
	ms := make([]int, leaves)
	want := 0
	for i := range xs {
		xs[i], ms[i] = i, 150
		want += 2 * i
	}
	level := c.Map(nap, ms, xs)
	for len(level) > 1 {
		var next []*cluster.Future
		for i := 0; i+1 < len(level); i += 2 {
			next = append(next, c.Submit(add, level[i], level[i+1]))
		}
		if len(level)%2 == 1 {
			next = append(next, level[len(level)-1])
		}
		level = next
	}
	time.Sleep(900 * time.Millisecond)
	var onB int
	for _, w := range c.WorkerInfo() {
		if w.Name == "b-cpu0" {
			onB = w.InMemory + w.Processing
		}
	}
	if onB == 0 {
		t.Fatal("host b holds no task when its link goes down; the test would prove nothing")
	}
	h.linkDown(1)
	t.Logf("link of host b down with %d of its tasks in memory or processing", onB)
	v, err := level[0].Result(ctx)
	if err != nil {
		t.Fatalf("result after the link went down: %v\nscheduler log:\n%s", err, sched.log)
	}
	if v != want {
		t.Fatalf("sum = %v, want %d", v, want)
	}
	ws := c.WorkerInfo()
	if len(ws) != 1 || ws[0].Name != "a-cpu0" {
		t.Fatalf("workers after the link went down: %v", ws)
	}
	if !strings.Contains(sched.log.String(), "b-cpu0") || !strings.Contains(sched.log.String(), "silent") {
		t.Fatalf("scheduler log does not say b went silent:\n%s", sched.log)
	}
}

// TestSchedulerRestartWorkersReconnect kills the scheduler and starts a new one at the same
// address: the workers on the other host join it by themselves.
func TestSchedulerRestartWorkersReconnect(t *testing.T) {
	h := newHosts(t, 1)
	token := randHex(16)
	sched, addr, _ := startScheduler(t, h.rootIP()+":0", token, "--dashboard", "off")
	startWorkers(t, h.names[0], addr, token, "a", 2, 1)
	c := connect(t, addr, token)
	waitWorkers(t, c, 30*time.Second, "a-cpu0", "a-cpu1")
	ctx := ctxT(t)
	if v, err := c.Submit(inc, 1).Result(ctx); err != nil || v != 2 {
		t.Fatalf("before restart: %v %v", v, err)
	}
	sched.kill()
	// The old client notices.
	deadline := time.Now().Add(20 * time.Second)
	for c.Submit(inc, 1).Status() != cluster.StateErred && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	_, addr2, _ := startScheduler(t, strings.TrimPrefix(addr, "tcp://"), token, "--dashboard", "off")
	if addr2 != addr {
		t.Fatalf("restarted scheduler at %s, want %s", addr2, addr)
	}
	c2 := connect(t, addr, token)
	waitWorkers(t, c2, 20*time.Second, "a-cpu0", "a-cpu1")
	t.Logf("workers rejoined %v after the scheduler restarted", time.Since(start).Round(time.Millisecond))
	vals, err := c2.GatherContext(ctx, c2.Map(inc, []int{1, 2, 3, 4}))
	if err != nil || fmt.Sprint(vals) != "[2 3 4 5]" {
		t.Fatalf("after restart: %v %v", vals, err)
	}
}

// TestWrongTokenIsRefusedAndLogged starts workers on another host with a wrong token: they are
// refused, cuda-worker exits with an error, and the scheduler logs the refusal with the
// worker's address.
func TestWrongTokenIsRefusedAndLogged(t *testing.T) {
	h := newHosts(t, 1)
	token := randHex(16)
	sched, addr, _ := startScheduler(t, h.rootIP()+":0", token, "--dashboard", "off")
	p := startWorkers(t, h.names[0], addr, "not-"+token, "bad", 1, 1)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("cuda-worker with a wrong token still runs:\n%s", p.log)
	}
	if p.err == nil {
		t.Fatalf("cuda-worker with a wrong token exited 0:\n%s", p.log)
	}
	if !strings.Contains(p.log.String(), "refused") {
		t.Fatalf("cuda-worker's log does not say it was refused:\n%s", p.log)
	}
	log := sched.log.String()
	if !strings.Contains(log, "refused worker") || !strings.Contains(log, h.ip(0)+":") {
		t.Fatalf("scheduler log does not record the refusal with address %s:\n%s", h.ip(0), log)
	}
	c := connect(t, addr, token)
	if ws := c.WorkerInfo(); len(ws) != 0 {
		t.Fatalf("refused workers joined: %v", ws)
	}
}

// TestSchedulerTokenAlways: a scheduler given no token generates one (as Jupyter Server does)
// and logs it, on loopback too, and refuses a client with another or none; a token in argv is
// refused. Beyond loopback, the dashboard wants the token on every request.
func TestSchedulerTokenAlways(t *testing.T) {
	p, addr, _ := startScheduler(t, "127.0.0.1:0", "", "--dashboard", "off")
	var tok string
	deadline := time.Now().Add(10 * time.Second)
	for tok == "" && time.Now().Before(deadline) {
		if i := strings.Index(p.log.String(), "GPUNOTES_CLUSTER_TOKEN="); i >= 0 {
			tok = strings.Fields(p.log.String()[i+len("GPUNOTES_CLUSTER_TOKEN="):])[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(tok) != 64 {
		t.Fatalf("no generated token in the log:\n%s", p.log)
	}
	for _, bad := range []string{"", "wrong"} {
		if _, err := cluster.Connect(addr, bad); err == nil {
			t.Fatalf("a client with token %q was let in", bad)
		}
	}
	connect(t, addr, tok)
	file := filepath.Join(t.TempDir(), "token")
	p2, addr2, _ := startScheduler(t, "127.0.0.1:0", "", "--dashboard", "off", "--token-file", file)
	waitLog(t, p2.log, "wrote it to")
	b, err := os.ReadFile(file)
	if st, _ := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", err, st)
	}
	connect(t, addr2, strings.TrimSpace(string(b)))
	argv, _ := startProc(t, "", "scheduler", "--listen", "127.0.0.1:0", "--token", "visible")
	select {
	case <-argv.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a scheduler ran with --token in argv")
	}
	if argv.err == nil || !strings.Contains(argv.log.String(), "process list") {
		t.Fatalf("--token: exit %v, log:\n%s", argv.err, argv.log)
	}
	token := randHex(16)
	_, _, dash := startScheduler(t, "127.0.0.1:0", token, "--dashboard", "0.0.0.0:0")
	if !strings.Contains(dash, "token="+token) {
		t.Fatalf("dashboard URL %s lacks the token", dash)
	}
	bare := dash[:strings.Index(dash, "?")]
	for u, want := range map[string]int{bare: 403, bare + "api/state": 403, bare + "?token=x": 403, dash: 200} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", u, resp.StatusCode, want)
		}
	}
	if st := dashState(t, dash); st.Scheduler == "" {
		t.Fatal("dashboard state without a scheduler address")
	}
}
