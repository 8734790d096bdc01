package cluster_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
)

// hosts is a tiny network of "machines" on this one: a bridge in the root namespace (where the
// test, its clients and the scheduler run, at IP .1) and one network namespace per host, each
// joined to the bridge by a veth pair (host i at IP .(i+2)). Traffic between namespaces goes
// through the bridge, as between machines on a switch.
type hosts struct {
	t      testing.TB
	bridge string
	subnet string // "10.213.N"
	names  []string
	veths  []string // root-side veth of each host
}

// needNetns skips (or under CI=true fails) where namespaces cannot be made.
func needNetns(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "network namespaces need root"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "the ip command (iproute2) is missing"
	} else {
		probe := "gpnprobe" + randHex(3)
		if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
			why = fmt.Sprintf("ip netns add failed: %v: %s", err, bytes.TrimSpace(out))
		} else {
			_ = exec.Command("ip", "netns", "del", probe).Run()
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("multi-host test cannot make network namespaces under CI: %s", why)
	}
	t.Skipf("multi-host test skipped: %s", why)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ipRun(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// newHosts makes n namespaces joined by a bridge; everything is removed in t.Cleanup.
func newHosts(t testing.TB, n int) *hosts {
	t.Helper()
	needNetns(t)
	id := randHex(2)
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	h := &hosts{t: t, bridge: "gpnbr" + id, subnet: fmt.Sprintf("10.213.%d", b[0])}
	t.Cleanup(func() {
		for i, ns := range h.names {
			_ = exec.Command("ip", "netns", "del", ns).Run()
			_ = exec.Command("ip", "link", "del", h.veths[i]).Run()
		}
		_ = exec.Command("ip", "link", "del", h.bridge).Run()
	})
	ipRun(t, "link", "add", h.bridge, "type", "bridge")
	ipRun(t, "addr", "add", h.subnet+".1/24", "dev", h.bridge)
	ipRun(t, "link", "set", h.bridge, "up")
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("gpn%s%c", id, 'a'+i)
		root, inner := fmt.Sprintf("gpn%s%cr", id, 'a'+i), fmt.Sprintf("gpn%s%ci", id, 'a'+i)
		ipRun(t, "netns", "add", ns)
		h.names = append(h.names, ns)
		h.veths = append(h.veths, root)
		ipRun(t, "link", "add", root, "type", "veth", "peer", "name", inner)
		ipRun(t, "link", "set", inner, "netns", ns)
		ipRun(t, "link", "set", root, "master", h.bridge)
		ipRun(t, "link", "set", root, "up")
		ipRun(t, "-n", ns, "addr", "add", fmt.Sprintf("%s.%d/24", h.subnet, i+2), "dev", inner)
		ipRun(t, "-n", ns, "link", "set", inner, "up")
		ipRun(t, "-n", ns, "link", "set", "lo", "up")
	}
	return h
}

// ip returns host i's address.
func (h *hosts) ip(i int) string { return fmt.Sprintf("%s.%d", h.subnet, i+2) }

// rootIP is the root namespace's address on the bridge (where the scheduler listens).
func (h *hosts) rootIP() string { return h.subnet + ".1" }

// linkDown cuts host i off the network, as a pulled cable.
func (h *hosts) linkDown(i int) { ipRun(h.t, "link", "set", h.veths[i], "down") }

// logBuf collects a process's output for assertions.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// proc is a process started by a test, killed with its process group in t.Cleanup.
type proc struct {
	cmd  *exec.Cmd
	log  *logBuf
	done chan struct{}
	err  error
}

func startProc(t testing.TB, ns string, args ...string) (*proc, io.Reader) {
	t.Helper()
	return startProcToken(t, ns, "", args...)
}

// startProcToken is startProc with GPUNOTES_CLUSTER_TOKEN set to token: tokens never go in
// argv.
func startProcToken(t testing.TB, ns, token string, args ...string) (*proc, io.Reader) {
	t.Helper()
	var cmd *exec.Cmd
	if ns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", ns, workerBin}, args...)...)
	} else {
		cmd = exec.Command(workerBin, args...)
	}
	p := &proc{cmd: cmd, log: &logBuf{}, done: make(chan struct{})}
	cmd.Stderr = p.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "GPUNOTES_CLUSTER_TOKEN="+token)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p, stdout
}

func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// startScheduler runs `gpunotes scheduler` in the root namespace and returns it with its
// address and dashboard URL.
func startScheduler(t testing.TB, listen, token string, extra ...string) (p *proc, addr, dash string) {
	t.Helper()
	args := append([]string{"scheduler", "--listen", listen}, extra...)
	p, stdout := startProcToken(t, "", token, args...)
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		f := strings.Fields(l)
		if !ok || len(f) != 4 || f[0] != "scheduler" {
			p.kill()
			t.Fatalf("scheduler did not start: %q\n%s", l, p.log)
		}
		if f[3] == "off" {
			f[3] = ""
		}
		return p, f[1], f[3]
	case <-time.After(20 * time.Second):
		t.Fatalf("scheduler did not start within 20 s:\n%s", p.log)
	}
	return nil, "", ""
}

// startWorkers runs `gpunotes cuda-worker` (CPU workers) in namespace ns.
func startWorkers(t testing.TB, ns, addr, token, prefix string, nworkers, nthreads int) *proc {
	t.Helper()
	p, stdout := startProcToken(t, ns, token, "cuda-worker", addr, "--cpu", "--name-prefix", prefix,
		"--nworkers", fmt.Sprint(nworkers), "--nthreads", fmt.Sprint(nthreads), "--reconnect", "500ms")
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

// waitWorkers waits until the client sees exactly the named workers.
func waitWorkers(t testing.TB, c *cluster.Client, timeout time.Duration, names ...string) []cluster.WorkerInfo {
	t.Helper()
	want := strings.Join(names, ",")
	deadline := time.Now().Add(timeout)
	var got []string
	for time.Now().Before(deadline) {
		ws := c.WorkerInfo()
		got = got[:0]
		for _, w := range ws {
			got = append(got, w.Name)
		}
		if strings.Join(got, ",") == want {
			return ws
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("workers %v did not join within %v (have %v)", names, timeout, got)
	return nil
}

// dashState reads the dashboard's JSON.
func dashState(t testing.TB, dash string) cluster.DashboardState {
	t.Helper()
	u := strings.Replace(dash, "/?", "/api/state?", 1)
	if !strings.Contains(u, "/api/state") {
		u += "api/state"
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %s", resp.Status)
	}
	var st cluster.DashboardState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return st
}
