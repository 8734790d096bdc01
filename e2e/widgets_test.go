package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// widgetCells is the notebook the widget browser test runs: a slider whose observer, a
// declared func, records the value and shows it in a label, and an Output that captured a
// print.
var widgetCells = []string{
	`import "fmt"`,
	"s := widget.NewIntSlider(10, 0, 100, widget.T{\"description\": \"n\"})\n" +
		"lbl := widget.NewLabel(\"seen 10\")\n" +
		"seen := 10\n" +
		"func onSlide(c widget.Change) {\n\tseen = c.Int()\n\tlbl.SetValue(fmt.Sprint(\"seen \", seen))\n}\n" +
		"s.Observe(\"value\", onSlide)\n" +
		"widget.NewVBox(s, lbl)",
	"co := widget.NewOutput()\nco.Capture(func() { fmt.Println(\"captured in the page\") })\nco",
}

// peerCells is the same slider and label in Python (ipykernel + ipywidgets), the peer whose
// round trip the test logs beside ours.
var peerCells = []string{
	"import ipywidgets as w\n" +
		"s = w.IntSlider(10, 0, 100, description='n')\n" +
		"lbl = w.Label('seen 10')\n" +
		"def on(c):\n    lbl.value = f\"seen {c['new']}\"\n" +
		"s.observe(on, 'value')\n" +
		"w.VBox([s, lbl])",
}

func writeNotebook(t *testing.T, path string, cells []string) {
	t.Helper()
	var cs []map[string]any
	for _, c := range cells {
		cs = append(cs, map[string]any{"cell_type": "code", "metadata": map[string]any{}, "source": c,
			"outputs": []any{}, "execution_count": nil})
	}
	// No kernelspec: JupyterLab asks, and the script picks Go (gpunotes), as users do.
	nb := map[string]any{"nbformat": 4, "nbformat_minor": 5, "cells": cs, "metadata": map[string]any{}}
	b, _ := json.MarshalIndent(nb, "", " ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserWidgets runs a slider in JupyterLab with jupyterlab_widgets in chromium: it
// renders (not "Loading widget..."), keyboard steps on its handle reach the Go callback, a
// later cell sees the value, SetValue in Go moves the handle, and after a save and a page
// reload the widgets render again from the kernel and still reach Go. It logs the slider's
// round trip p50 (ROUNDTRIP_P50_MS); no time is asserted.
func TestBrowserWidgets(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	env := testenv.InstallKernel(t)
	root := t.TempDir()
	writeNotebook(t, filepath.Join(root, "widgets.ipynb"), widgetCells)
	writeNotebook(t, filepath.Join(root, "peer.ipynb"), peerCells)
	l := startLab(t, env, root)
	py := testenv.Python(t)
	chromium := testenv.Chromium(t)
	dir := t.TempDir()
	shot := filepath.Join(dir, "widgets.png")
	browse := func(l *lab, notebook, kernel, shot string, extra ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "widgets.py"),
			l.URL, notebook, chromium, filepath.Join(t.TempDir(), "profile"), shot)
		cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1", "GPUNOTES_E2E_TOKEN="+l.Token, "GPUNOTES_E2E_KERNEL="+kernel)
		cmd.Env = append(cmd.Env, extra...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		return cmd.CombinedOutput()
	}
	// The peer first, when this environment has ipykernel: its round trip is logged beside ours.
	peer := exec.Command(py, "-c", "import ipykernel, ipywidgets").Run() == nil
	if peer {
		out, err := browse(l, "peer.ipynb", "Python 3 (ipykernel)", filepath.Join(dir, "peer.png"))
		t.Logf("peer browser:\n%s", out)
		if err != nil {
			t.Errorf("the ipykernel peer run failed: %v", err)
		}
	}
	out, err := browse(l, "widgets.ipynb", "Go (gpunotes)", shot)
	t.Logf("browser:\n%s", out)
	if err != nil {
		if keep := os.Getenv("GPUNOTES_E2E_KEEP"); keep != "" {
			b, _ := os.ReadFile(shot + ".failed.png")
			_ = os.WriteFile(keep, b, 0o644)
		}
		t.Fatalf("widget browser test failed: %v (screenshots in %s)", err, dir)
	}
	if !strings.Contains(string(out), "ROUNDTRIP_P50_MS") {
		t.Fatalf("no round trip measured")
	}
	// The same round trips through a server whose kernel websockets set TCP_NODELAY
	// (deploy/jupyter/gpunotes_nodelay.py): jupyter_server leaves Nagle's algorithm on, so
	// a frame written while the one before is unacknowledged waits for the browser's delayed
	// ACK (about 40 ms on Linux), for every kernel.
	nd, trace := noDelayEnv(t, env)
	root2 := t.TempDir()
	writeNotebook(t, filepath.Join(root2, "widgets.ipynb"), widgetCells)
	writeNotebook(t, filepath.Join(root2, "peer.ipynb"), peerCells)
	l2 := startLab(t, nd, root2)
	if peer {
		out, err := browse(l2, "peer.ipynb", "Python 3 (ipykernel)", filepath.Join(dir, "peer-nodelay.png"), "GPUNOTES_E2E_TAG=nodelay", "GPUNOTES_E2E_SERVER_TRACE="+trace)
		t.Logf("peer browser, TCP_NODELAY:\n%s", out)
		if err != nil {
			t.Errorf("the ipykernel peer run with TCP_NODELAY failed: %v", err)
		}
	}
	out, err = browse(l2, "widgets.ipynb", "Go (gpunotes)", filepath.Join(dir, "nodelay.png"), "GPUNOTES_E2E_MEASURE_ONLY=1", "GPUNOTES_E2E_TAG=nodelay", "GPUNOTES_E2E_SERVER_TRACE="+trace)
	t.Logf("browser, TCP_NODELAY:\n%s", out)
	if err != nil {
		t.Fatalf("widget browser run with TCP_NODELAY failed: %v", err)
	}
	if !strings.Contains(l2.log.String(), "TCP_NODELAY on") {
		t.Errorf("the second server never set TCP_NODELAY (deploy/jupyter/gpunotes_nodelay.py not loaded?):\n%s", l2.log.String())
	}
	keepScreenshot(t, shot, "widgets-jupyterlab.png")
}

// noDelayEnv is env with a Jupyter config directory of its own whose server config loads
// deploy/jupyter/gpunotes_nodelay.py, as a user's jupyter_server_config.py would, through
// testdata/server_trace.py, its subclass that also notes when each kernel message passed the
// server, in the file trace (the stages of the round trip the browser script logs).
func noDelayEnv(t *testing.T, env []string) (_ []string, trace string) {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "deploy", "jupyter"))
	if err != nil {
		t.Fatal(err)
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	trace = filepath.Join(t.TempDir(), "server-trace.jsonl")
	conf := fmt.Sprintf("import sys\nsys.path.insert(0, %q)\nsys.path.insert(0, %q)\nimport server_trace\nserver_trace.configure(c)\n", src, testdata)
	if err := os.WriteFile(filepath.Join(cfg, "jupyter_server_config.py"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "JUPYTER_CONFIG_DIR=") {
			out = append(out, kv)
		}
	}
	return append(out, "JUPYTER_CONFIG_DIR="+cfg, "GPUNOTES_E2E_SERVER_TRACE="+trace), trace
}
