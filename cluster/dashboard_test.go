package cluster_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// TestDashboardServedOnLoopback: a local cluster serves its dashboard on 127.0.0.1, shows the
// link in its HTML repr, and the page has no dependencies beyond itself.
func TestDashboardServedOnLoopback(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 1})
	u := c.Dashboard()
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("dashboard at %q, want loopback", u)
	}
	if !strings.Contains(c.HTML(), `<a href="`+u+`"`) {
		t.Fatal("the cluster's HTML does not link the dashboard")
	}
	if !strings.Contains(c.String(), "Dashboard: "+u+"\n") || !strings.Contains(c.NewClient().String(), "Dashboard: "+u+"\n") {
		t.Fatalf("the text reprs do not name the dashboard:\n%s\n%s", c.String(), c.NewClient().String())
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, dep := range []string{"<script src", "<link ", `src="http`, `href="http`, "@import", "url(http"} {
		if strings.Contains(string(page), dep) {
			t.Fatalf("dashboard page refers elsewhere (%q)", dep)
		}
	}
	if _, err := c.Submit(inc, 1).Result(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	st := dashState(t, u)
	if len(st.Workers) != 1 || len(st.Stream) != 1 || st.Stream[0].Prefix != "inc" || st.Done != 1 {
		t.Fatalf("dashboard state: %d workers, stream %+v, done %d", len(st.Workers), st.Stream, st.Done)
	}
	off := newCluster(t, cluster.Options{NWorkers: 1, Dashboard: "off"})
	if off.Dashboard() != "" {
		t.Fatalf("Dashboard \"off\" serves at %s", off.Dashboard())
	}
	if !strings.Contains(off.String(), "Dashboard: off\n") {
		t.Fatalf("the text repr of a cluster without dashboard:\n%s", off.String())
	}
}

// TestDashboardInBrowser opens the dashboard in headless chromium (playwright) while tasks
// run, and checks that the tables, the task stream and the plot update.
func TestDashboardInBrowser(t *testing.T) {
	py := testenv.Python(t)
	chromium := testenv.Chromium(t)
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			fs := c.Map(nap, []int{60, 60, 60, 60}, []int{1, 2, 3, 4})
			_, _ = c.GatherContext(ctx, fs)
		}
	}()
	dir := t.TempDir()
	shot := filepath.Join(dir, "dashboard.png")
	bctx, bcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer bcancel()
	cmd := exec.CommandContext(bctx, py, filepath.Join("testdata", "dashboard.py"), c.Dashboard(), chromium,
		filepath.Join(dir, "profile"), shot, "2")
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("browser:\n%s", out)
	if err != nil {
		t.Fatalf("dashboard browser test failed: %v", err)
	}
	if dst := os.Getenv("GPUNOTES_DASHBOARD_SCREENSHOT"); dst != "" {
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Errorf("copy screenshot: %v", err)
		}
	}
}

// TestDashboardHostCheck: the loopback dashboard answers only requests whose Host is a
// loopback name (or one of GPUNOTES_DASHBOARD_HOSTS), so a page of another site that rebinds
// its DNS name to 127.0.0.1 cannot read /api/state. Jupyter Server on loopback refuses such a
// Host with 403 in the same way (allow_remote_access is off there).
func TestDashboardHostCheck(t *testing.T) {
	t.Setenv("GPUNOTES_DASHBOARD_HOSTS", "notebook.lab.internal")
	c := newCluster(t, cluster.Options{NWorkers: 1})
	u := c.Dashboard()
	port := u[strings.LastIndex(u, ":")+1 : len(u)-1]
	for host, want := range map[string]int{
		"evil.example:" + port: 403, "evil.example": 403, "127.0.0.1.evil.example:" + port: 403,
		"localhost:" + port: 200, "127.0.0.1:" + port: 200, "[::1]:" + port: 200, "notebook.lab.internal:" + port: 200,
	} {
		req, _ := http.NewRequest("GET", u+"api/state", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
