package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// gpunotesRun runs `gpunotes run args...` and returns its exit code and combined output.
func gpunotesRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), append([]string{"run"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("gpunotes run %v did not finish in 2 minutes:\n%s", args, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

func writeNotebook(t *testing.T, dir, name, lang string, sources ...string) string {
	t.Helper()
	var cells []map[string]any
	for _, s := range sources {
		c := map[string]any{"cell_type": "code", "metadata": map[string]any{}, "outputs": []any{}, "execution_count": nil, "source": s}
		if strings.HasPrefix(s, "//params\n") {
			c["metadata"] = map[string]any{"tags": []string{"parameters"}}
		}
		cells = append(cells, c)
	}
	md := map[string]any{"kernelspec": map[string]any{"name": "k", "display_name": lang, "language": lang}}
	b, _ := json.Marshal(map[string]any{"cells": cells, "metadata": md, "nbformat": 4, "nbformat_minor": 5})
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	in := writeNotebook(t, dir, "ok.ipynb", "go",
		"//params\nN := 3",
		"import \"fmt\"\nfmt.Println(\"N =\", N)",
		"display.HTML(\"<table><tr><td>cell</td></tr></table>\")\nN * 2")
	before, _ := os.ReadFile(in)
	out := filepath.Join(dir, "sub", "ran.ipynb")
	os.Mkdir(filepath.Dir(out), 0o755)
	code, log := gpunotesRun(t, in, "-o", out, "--param", "N=21")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, log)
	}
	for _, want := range []string{"[1/4]", "[4/4]", "ok in", "N = 21", "42", "wrote " + out} {
		if !strings.Contains(log, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, log)
		}
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(before, after) {
		t.Errorf("input notebook was modified")
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"injected-parameters"`) || !strings.Contains(string(b), `"N = 21\n"`) || !strings.Contains(string(b), `"42"`) {
		t.Errorf("executed notebook lacks the injected cell or outputs:\n%s", b)
	}

	// Default output path, and --inplace.
	if code, log := gpunotesRun(t, "-q", in); code != 0 || strings.Contains(log, "N = 3\n") {
		t.Fatalf("default run: exit %d (quiet must not echo cell output):\n%s", code, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "ok.out.ipynb")); err != nil {
		t.Errorf("default output: %v", err)
	}
	if code, log := gpunotesRun(t, in, "--inplace"); code != 0 {
		t.Fatalf("--inplace: exit %d:\n%s", code, log)
	}
	if after, _ := os.ReadFile(in); !strings.Contains(string(after), `"execution_count": 3`) {
		t.Errorf("--inplace did not write outputs back")
	}
}

func TestRunCommandFailingCell(t *testing.T) {
	dir := t.TempDir()
	in := writeNotebook(t, dir, "bad.ipynb", "go", "x := 1\n_ = x", "var s []int\n_ = s[5]", "y := 2")
	out := filepath.Join(dir, "bad-out.ipynb")
	code, log := gpunotesRun(t, in, "-o", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, log)
	}
	if !strings.Contains(log, "code cell 2 of 3") || !strings.Contains(log, "index out of range") {
		t.Errorf("error does not name the cell and the failure:\n%s", log)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `"output_type": "error"`) {
		t.Errorf("the partial notebook with the error was not written: %v\n%s", err, b)
	}
}

func TestRunCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.ipynb")
	os.WriteFile(junk, []byte(`{"cells": [`), 0o644)
	py := writeNotebook(t, dir, "py.ipynb", "python", "print(1)")
	good := writeNotebook(t, dir, "good.ipynb", "go", "1")
	noParams := writeNotebook(t, dir, "np.ipynb", "go", "N := 1")
	snapshot := func() map[string]string {
		m := map[string]string{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			m[e.Name()] = string(b)
		}
		return m
	}
	before := snapshot()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{filepath.Join(dir, "missing.ipynb")}, 1, "no such file"},
		{[]string{junk}, 1, "invalid JSON"},
		{[]string{py}, 1, "python notebook"},
		{[]string{good, "-o", good}, 2, "--inplace"},
		{[]string{good, "-o", filepath.Join(dir, ".", "good.ipynb")}, 2, "--inplace"},
		{[]string{noParams, "-p", "N=2"}, 1, "tagged \"parameters\""},
		{[]string{good, "-p", "9=2"}, 2, "NAME=VALUE"},
		{[]string{good, "--bogus"}, 2, "unknown flag"},
		{[]string{}, 2, "no notebook given"},
		{[]string{good, "-o", filepath.Join(dir, "nodir", "x.ipynb")}, 1, "does not exist"},
	} {
		code, log := gpunotesRun(t, tc.args...)
		if code != tc.code || !strings.Contains(log, tc.want) {
			t.Errorf("gpunotes run %v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, log)
		}
	}
	after := snapshot()
	if len(after) != len(before) {
		t.Errorf("bad input created files: %d before, %d after", len(before), len(after))
	}
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s was modified", name)
		}
	}
}

// TestRunCommandFiles: the mode of a replaced notebook is kept (--inplace and -o), and an
// output that cannot be written is found before the first cell runs (jupyter nbconvert finds
// it only after executing every cell).
func TestRunCommandFiles(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	in := writeNotebook(t, dir, "private.ipynb", "go", "import \"os\"\nos.WriteFile(`"+marker+"`, nil, 0o644)")
	if err := os.Chmod(in, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, log := gpunotesRun(t, "-q", in, "--inplace"); code != 0 {
		t.Fatalf("--inplace: exit %d\n%s", code, log)
	}
	out := filepath.Join(dir, "out.ipynb")
	os.WriteFile(out, []byte("{}"), 0o640)
	if code, log := gpunotesRun(t, "-q", in, "-o", out); code != 0 {
		t.Fatalf("-o: exit %d\n%s", code, log)
	}
	for path, want := range map[string]os.FileMode{in: 0o600, out: 0o640} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v after run, want %v", filepath.Base(path), st.Mode().Perm(), want)
		}
	}
	// An unwritable output: a read-only directory (or, as root, which may write anywhere, a
	// directory of /proc).
	bad := "/proc/self/out.ipynb"
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		bad = filepath.Join(ro, "out.ipynb")
	}
	os.Remove(marker)
	code, log := gpunotesRun(t, in, "-o", bad)
	if code == 0 || !strings.Contains(log, "cannot write the output notebook") {
		t.Fatalf("unwritable output: exit %d\n%s", code, log)
	}
	if _, err := os.Stat(marker); err == nil || strings.Contains(log, "[1/1]") {
		t.Fatalf("a cell ran although the output could not be written:\n%s", log)
	}
}

// TestRunCommandKilledCell: a cell that kills the process (fmt printing a slice that holds
// itself overflows Go's stack in compiled code; a runaway recursion of cell functions is a
// RecursionError of the cell since issue 36, not a death) leaves the written notebook with
// every cell before it, the killing cell marked, a message naming it, and exit 1 (before:
// exit 2, nothing printed, no notebook).
func TestRunCommandKilledCell(t *testing.T) {
	dir := t.TempDir()
	in := writeNotebook(t, dir, "fatal.ipynb", "go",
		"import \"fmt\"\nfmt.Println(\"first done\")",
		"x := []any{nil}\nx[0] = x\nfmt.Sprint(x)",
		"fmt.Println(\"never\")")
	out := filepath.Join(dir, "fatal-out.ipynb")
	code, log := gpunotesRun(t, "-q", in, "-o", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%.3000s", code, log)
	}
	if !strings.Contains(log, "code cell 2 of 3") || !strings.Contains(log, "killed the process") {
		t.Errorf("the message does not name the cell:\n%.3000s", log)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			Outputs []map[string]any `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil || len(nb.Cells) != 3 {
		t.Fatalf("notebook: %v\n%s", err, b)
	}
	if o := nb.Cells[0].Outputs; len(o) != 1 || !strings.Contains(fmt.Sprint(o[0]["text"]), "first done") {
		t.Errorf("first cell's output lost: %v", o)
	}
	if o := nb.Cells[1].Outputs; len(o) != 1 || o[0]["ename"] != "ProcessDied" {
		t.Errorf("the killing cell is not marked: %v", o)
	}
	if o := nb.Cells[2].Outputs; len(o) != 0 {
		t.Errorf("a cell after the killing one has outputs: %v", o)
	}
}
