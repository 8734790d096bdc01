package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// syncBuffer is a bytes.Buffer safe for a process writing while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lab is a JupyterLab server started for one test.
type lab struct {
	URL   string
	Token string
	Root  string
	cmd   *exec.Cmd
	// runtimeDir is the JUPYTER_RUNTIME_DIR, where kernels' connection files live.
	runtimeDir string
	log        *syncBuffer
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startLab starts JupyterLab from the test virtualenv on 127.0.0.1 with temporary Jupyter
// directories holding our kernelspec, serving root. It is stopped (by its process group) when
// the test ends.
func startLab(t *testing.T, env []string, root string) *lab {
	t.Helper()
	py := testenv.Python(t)
	var tok [16]byte
	rand.Read(tok[:])
	l := &lab{Token: hex.EncodeToString(tok[:]), Root: root, log: &syncBuffer{}}
	// No news or update checks: the machine may have no network, and their prompts cover cells.
	for _, kv := range env {
		if dir, ok := strings.CutPrefix(kv, "JUPYTER_RUNTIME_DIR="); ok {
			l.runtimeDir = dir
		}
		if dir, ok := strings.CutPrefix(kv, "JUPYTER_CONFIG_DIR="); ok {
			pc := filepath.Join(dir, "labconfig")
			os.MkdirAll(pc, 0o755)
			cfg := `{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}`
			if err := os.WriteFile(filepath.Join(pc, "page_config.json"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	port := freePort(t)
	l.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	l.cmd = exec.Command(py, "-m", "jupyter", "lab",
		"--no-browser", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", port), "--ServerApp.port_retries=0",
		"--IdentityProvider.token="+l.Token, "--ServerApp.root_dir="+root, "--allow-root",
		"--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
		"--ServerApp.terminals_enabled=False")
	l.cmd.Env = append(env, "HOME="+t.TempDir())
	l.cmd.Stdout, l.cmd.Stderr = l.log, l.log
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kernels run in sessions of their own and inherit JupyterLab's output; without a
	// WaitDelay, Wait blocks until the last of them closes it, however long that is.
	l.cmd.WaitDelay = 10 * time.Second
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("start jupyter lab: %v", err)
	}
	t.Cleanup(func() { l.stop(t) })
	deadline := time.Now().Add(90 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(l.URL + "/api/status?token=" + l.Token)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jupyter lab did not answer on %s within 90s:\n%s", l.URL, l.log.String())
		}
		if l.cmd.ProcessState != nil {
			t.Fatalf("jupyter lab exited:\n%s", l.log.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stop ends JupyterLab and its kernels: SIGTERM to its process group, SIGKILL after 10 s.
func (l *lab) stop(t *testing.T) {
	pgid := l.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { l.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	// Kernels run in sessions of their own; JupyterLab shuts them down on SIGTERM, and any it
	// left (after a SIGKILL) are found by their connection file in our runtime dir. They are
	// killed before waiting on more, since they hold JupyterLab's output open.
	for _, pid := range processesMentioning(l.runtimeDir) {
		t.Logf("killing leftover kernel process %d", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("jupyter lab (pid %d) did not exit 30 s after SIGKILL", pgid)
	}
	if t.Failed() {
		t.Logf("jupyter lab log:\n%s", l.log.String())
	}
}

// processesMentioning returns the processes whose command line contains s.
func processesMentioning(s string) []int {
	if s == "" {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// withoutKernelspec copies a notebook with its kernelspec and language_info removed, so that
// JupyterLab asks which kernel to use.
func withoutKernelspec(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if md, ok := nb["metadata"].(map[string]any); ok {
		delete(md, "kernelspec")
		delete(md, "language_info")
	}
	out, _ := json.MarshalIndent(nb, "", " ")
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// browserExpect is what the browser script checks.
type browserExpect struct {
	Selector       string `json:"selector"`
	Text           string `json:"text"`
	CompletePrefix string `json:"complete_prefix"`
	CompleteMember string `json:"complete_member"`
	RunTimeoutMS   int    `json:"run_timeout_ms"`
	DashboardLink  bool   `json:"dashboard_link"`
	// ShotSelector, when set, is an element that must render in an output before the
	// screenshot is taken.
	ShotSelector string `json:"shot_selector,omitempty"`
	// NoRun shows the outputs the notebook was saved with, running none of its cells.
	NoRun bool `json:"no_run,omitempty"`
	// HideCode collapses every cell's code, so the picture shows outputs (with NoRun).
	HideCode bool `json:"hide_code,omitempty"`
}

// runBrowser opens notebook (a path relative to the lab's root) in chromium and checks exp.
// It keeps the screenshot as name (see keepScreenshot) and returns its path.
func runBrowser(t *testing.T, l *lab, notebook, name string, exp browserExpect) string {
	t.Helper()
	py := testenv.Python(t)
	chromium := testenv.Chromium(t)
	dir := t.TempDir()
	shot := filepath.Join(dir, "notebook.png")
	ex, _ := json.Marshal(exp)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "browser.py"),
		l.URL, notebook, chromium, filepath.Join(dir, "profile"), shot)
	cmd.Env = append(os.Environ(), "GPUNOTES_E2E_EXPECT="+string(ex), "PYTHONUNBUFFERED=1",
		"GPUNOTES_E2E_TOKEN="+l.Token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("browser:\n%s", out)
	if err != nil {
		t.Fatalf("browser test failed: %v (screenshots in %s)", err, dir)
	}
	if _, err := os.Stat(shot); err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	keepScreenshot(t, shot, name)
	return shot
}

// keepScreenshot copies shot to name in the directory GPUNOTES_SCREENSHOTS names, when set,
// so that `GPUNOTES_SCREENSHOTS=docs` retakes the README's pictures.
func keepScreenshot(t *testing.T, shot, name string) {
	t.Helper()
	dir := os.Getenv("GPUNOTES_SCREENSHOTS")
	if dir == "" {
		return
	}
	b, err := os.ReadFile(shot)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err != nil {
		t.Errorf("keep screenshot %s: %v", name, err)
	}
}

func requireNotebook(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(testenv.RepoRoot(t), "notebooks", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("notebook %s: %v", name, err)
	}
	return p
}

// TestBrowserNotebook02 opens notebooks/02-local-cuda-cluster.ipynb in JupyterLab in chromium,
// picks "Go (gpunotes)", runs all cells, sees the cluster's worker table, interrupts a for {}
// cell, completes "gpuarray.", takes a screenshot, then starts a cluster in a new cell and opens
// its dashboard through the link in its repr.
func TestBrowserNotebook02(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	env := testenv.InstallKernel(t)
	root := t.TempDir()
	withoutKernelspec(t, requireNotebook(t, "02-local-cuda-cluster.ipynb"), filepath.Join(root, "02-local-cuda-cluster.ipynb"))
	l := startLab(t, env, root)
	runBrowser(t, l, "02-local-cuda-cluster.ipynb", "notebook-02-jupyterlab.png", browserExpect{
		// The cluster's worker table: one row per worker, with its scheduler-side address.
		Selector:       `table:has(th:has-text("Last seen"))`,
		Text:           "127.0.0.1",
		CompletePrefix: "gpuarray.NewR",
		CompleteMember: "NewRandomState",
		RunTimeoutMS:   240000,
		DashboardLink:  true,
		// The picture shows the cluster repr's live dashboard link.
		ShotSelector: `tr:has-text("Dashboard") a[href^="http://127.0.0.1:"]`,
	})
	if strings.Contains(l.log.String(), "Traceback (most recent call last)") {
		t.Logf("jupyter lab logged a Python traceback:\n%s", l.log.String())
	}
}

// TestBrowserNotebook15 opens notebooks/15-dataframes.ipynb in JupyterLab in chromium, picks
// "Go (gpunotes)", runs all cells, sees the frames render as HTML tables, completes
// "dataframe." and takes a screenshot.
func TestBrowserNotebook15(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	env := testenv.InstallKernel(t)
	root := t.TempDir()
	withoutKernelspec(t, requireNotebook(t, "15-dataframes.ipynb"), filepath.Join(root, "15-dataframes.ipynb"))
	l := startLab(t, env, root)
	runBrowser(t, l, "15-dataframes.ipynb", "notebook-15-jupyterlab.png", browserExpect{
		// Describe's table: a "statistic" column naming its rows, one column per numeric column.
		Selector:       `table.dataframe:has(th:has-text("statistic"))`,
		Text:           "mean",
		CompletePrefix: "dataframe.Read",
		CompleteMember: "ReadParquet",
		RunTimeoutMS:   240000,
	})
	if strings.Contains(l.log.String(), "Traceback (most recent call last)") {
		t.Logf("jupyter lab logged a Python traceback:\n%s", l.log.String())
	}
}

// TestBrowserGPURun opens docs/01-cpu-vs-gpu-h200.ipynb, notebook 01 as `gpunotes run`
// executed it at the blog's full size on an H200 (bench/RESULTS.md records the run), in
// JupyterLab in chromium without running it, sees the results table and the machine line
// name the GPU, and takes the README's picture of a GPU run. The kernel still starts, so the
// interrupt and completion checks run as in the other browser tests.
func TestBrowserGPURun(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	src := filepath.Join(testenv.RepoRoot(t), "docs", "01-cpu-vs-gpu-h200.ipynb")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("the executed GPU notebook: %v", err)
	}
	if !strings.Contains(string(b), "GPUs: NVIDIA H200") {
		t.Fatalf("%s was not executed on an H200: its machine line is missing", src)
	}
	env := testenv.InstallKernel(t)
	root := t.TempDir()
	dst := filepath.Join(root, "01-cpu-vs-gpu-h200.ipynb")
	withoutKernelspec(t, src, dst)
	// Saved outputs of an untrusted notebook show as text where they are SVG; the notebook is
	// the project's own run, so sign it with this lab's key as its user would.
	trust := exec.Command(testenv.Python(t), "-m", "jupyter", "trust", dst)
	trust.Env = append(env, "HOME="+t.TempDir())
	if out, err := trust.CombinedOutput(); err != nil {
		t.Fatalf("jupyter trust: %v\n%s", err, out)
	}
	l := startLab(t, env, root)
	runBrowser(t, l, "01-cpu-vs-gpu-h200.ipynb", "notebook-01-h200-jupyterlab.png", browserExpect{
		Selector:       `table.gpunotes-results`,
		Text:           "One GPU",
		CompletePrefix: "gpuarray.OnG",
		CompleteMember: "OnGPU",
		RunTimeoutMS:   240000,
		NoRun:          true,
		HideCode:       true,
		// The picture shows the chart below the table.
		ShotSelector: `svg`,
	})
}
