package slurm_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/cluster/slurm"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// skipOrFail skips the test with the reason, or fails it under CI=true.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// freePortPair returns a port p such that p and p+1 are free on loopback. The range is this
// test's own: notebook 06 starts its SLURM in 26800-27200, and ports from 32768 up are the
// kernel's ephemeral ones.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 100 {
		p := 18000 + 2*rand.IntN(1000)
		l1, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1))
		l1.Close()
		if err != nil {
			continue
		}
		l2.Close()
		return p
	}
	t.Fatal("no free pair of ports")
	return 0
}

// stopPID stops a daemon we started: SIGTERM, then SIGKILL after 10 s.
func stopPID(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s: pid %d ignored SIGTERM for 10 s; killing it", filepath.Base(file), pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// startSLURM starts munged, slurmctld and slurmd on loopback with testdata/start-slurm.sh,
// points SLURM_CONF at its slurm.conf, and stops the daemons when the test ends. It skips
// (fails under CI=true) when SLURM cannot start here.
func startSLURM(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "a test SLURM needs root (slurmd runs jobs as their users)")
	}
	for _, cmd := range []string{"slurmctld", "slurmd", "munged", "mungekey", "sbatch", "squeue", "scancel", "sinfo"} {
		if _, err := exec.LookPath(cmd); err != nil {
			if _, err2 := os.Stat("/usr/sbin/" + cmd); err2 != nil {
				skipOrFail(t, "%s is not installed (run .ci/apt-deps.sh): %v", cmd, err)
			}
		}
	}
	// munged wants every directory on its socket's path searchable by all: not t.TempDir().
	d, err := os.MkdirTemp("", "gpunotes-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []string{"slurmd.bgpid", "slurmctld.bgpid", "munged.pid"} {
			stopPID(t, filepath.Join(d, f))
		}
		if t.Failed() {
			for _, f := range []string{"log/slurmctld.log", "log/slurmd.log"} {
				if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
					t.Logf("%s (end):\n%s", f, tailString(string(b), 2000))
				}
			}
		}
		_ = os.RemoveAll(d)
	})
	port := freePortPair(t)
	cmd := exec.Command("testdata/start-slurm.sh", d)
	cmd.Env = append(os.Environ(), "SLURM_TEST_PORT="+strconv.Itoa(port), "PATH="+os.Getenv("PATH")+":/usr/sbin")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		skipOrFail(t, "SLURM did not start: %v\n%s", err, out)
	}
	t.Logf("SLURM up in %v (ports %d, %d)", time.Since(start).Round(time.Millisecond), port, port+1)
	t.Setenv("SLURM_CONF", filepath.Join(d, "slurm.conf"))
	return d
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// squeueAll lists every job SLURM still has pending or running ("" when none).
func squeueAll(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("squeue", "--noheader", "--format=%i %j %T").CombinedOutput()
	if err != nil {
		t.Fatalf("squeue: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRealSLURM runs a cluster whose workers are jobs of a real SLURM on this machine: two
// jobs start workers, a Submit and a gpuarray computation run on them, Scale(1) cancels one
// job, Adapt grows the cluster for queued tasks and shrinks it when idle, Close cancels the rest, and squeue is empty.
// The bad-input cases run against the same SLURM.
func TestRealSLURM(t *testing.T) {
	d := startSLURM(t)
	bin := testenv.Binary(t)
	logs := filepath.Join(d, "joblogs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	start := time.Now()
	c, err := slurm.New(slurm.Options{Jobs: 2, Partition: "debug", Walltime: "00:10:00", Binary: bin,
		LogDirectory: logs, WorkerArgs: []string{"--nthreads", "1"}, StartTimeout: 90 * time.Second,
		ExtraDirectives: []string{"--comment=gpunotes-test"}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()
	t.Logf("2 jobs submitted and their workers joined in %v", time.Since(start).Round(time.Millisecond))
	ws := c.WorkerInfo()
	if len(ws) != 2 {
		t.Fatalf("workers %v, want 2", ws)
	}
	jobs := c.Jobs()
	if len(jobs) != 2 {
		t.Fatalf("jobs %v, want 2", jobs)
	}
	html := c.HTML()
	for _, want := range []string{jobs[0].ID, jobs[1].ID, "RUNNING", ws[0].Name, ws[1].Name, c.Address()} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, html)
		}
	}
	t.Logf("repr:\n%s", c.String())

	// A Submit and a gpuarray computation on SLURM-started workers.
	inc := cluster.Source{Code: "import \"os\"\nfunc incPID(x int) []int { return []int{x + 1, os.Getpid()} }", Func: "incPID"}
	v, err := c.Submit(inc, 41).Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v); !strings.HasPrefix(got, "[42 ") || strings.HasSuffix(got, fmt.Sprintf(" %d]", os.Getpid())) {
		t.Fatalf("incPID(41) = %v, want [42 pid of a worker]", got)
	}
	build := func() *gpuarray.Array {
		rs := gpuarray.NewRandomState(42)
		return rs.Normal(10, 1, gpuarray.Shape(600, 500), gpuarray.Chunks(150, 125)).Add(1).Slice(gpuarray.Every(2), gpuarray.Every(2)).Sum()
	}
	want, err := build().Float64(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	got, err := build().Float64(gpuarray.On(c.Client))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("sum on SLURM workers %v, inline %v", got, want)
	}
	var done int64
	waitFor(t, "workers report the tasks they ran", 10*time.Second, func() bool {
		done = 0
		for _, w := range c.WorkerInfo() {
			done += w.TasksDone
		}
		return done > 1
	})
	t.Logf("sum %v equals the inline sum; the workers report %d tasks done", got, done)

	// Scale down: one job is cancelled, its worker leaves.
	if err := c.Scale(1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "one worker left after Scale(1)", 60*time.Second, func() bool { return len(c.WorkerInfo()) == 1 })
	waitFor(t, "one job left in squeue after Scale(1)", 60*time.Second, func() bool {
		return len(strings.Split(squeueAll(t), "\n")) == 1
	})
	if v, err := c.Submit(inc, 1).Result(ctx); err != nil || !strings.HasPrefix(fmt.Sprint(v), "[2 ") {
		t.Fatalf("Submit after Scale(1): %v, %v", v, err)
	}

	// Adapt: queued tasks bring a second job.
	nap := cluster.Source{Code: "import \"time\"\nfunc nap(x int) int { time.Sleep(1500 * time.Millisecond); return x }", Func: "nap"}
	fs := c.Map(nap, []int{1, 2, 3, 4, 5, 6})
	if err := c.Adapt(1, 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Adapt(1, 2) starts a second worker for queued tasks", 90*time.Second, func() bool { return len(c.WorkerInfo()) == 2 })
	if _, err := c.GatherContext(ctx, fs); err != nil {
		t.Fatal(err)
	}
	// With the queue empty, Adapt gives the second job back (after three idle looks).
	waitFor(t, "Adapt(1, 2) scales back to one worker when idle", 60*time.Second, func() bool { return len(c.WorkerInfo()) == 1 })
	waitFor(t, "one job left in squeue after Adapt scaled down", 60*time.Second, func() bool {
		return len(strings.Split(squeueAll(t), "\n")) == 1
	})
	c.StopAdapt()

	// Close cancels every job: nothing is left in squeue.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if q := squeueAll(t); q != "" {
		t.Fatalf("jobs left in squeue after Close:\n%s", q)
	}

	t.Run("rejected", func(t *testing.T) {
		_, err := slurm.New(slurm.Options{Jobs: 1, Partition: "nosuchpartition", Binary: bin, LogDirectory: logs})
		if err == nil || !strings.Contains(err.Error(), "SLURM rejected the worker job") || !strings.Contains(err.Error(), "nvalid partition") {
			t.Fatalf("got %v, want SLURM's message about the partition", err)
		}
	})
	t.Run("never starts", func(t *testing.T) {
		_, err := slurm.New(slurm.Options{Jobs: 1, Binary: bin, LogDirectory: logs, ExtraDirectives: []string{"--begin=now+1hour"},
			StartTimeout: 3 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "PENDING") || !strings.Contains(err.Error(), "has not started") {
			t.Fatalf("got %v, want a timeout naming the pending job", err)
		}
		if q := squeueAll(t); q != "" {
			t.Fatalf("the failed cluster left jobs in squeue:\n%s", q)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		_, err := slurm.New(slurm.Options{Jobs: 1, Binary: bin, LogDirectory: logs, Prologue: []string{"export GPUNOTES_CLUSTER_TOKEN=wrong"},
			StartTimeout: 60 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("got %v, want the refusal", err)
		}
		t.Logf("wrong token: %v", err)
		if q := squeueAll(t); q != "" {
			t.Fatalf("the failed cluster left jobs in squeue:\n%s", q)
		}
	})
}
