package python_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
	"github.com/gpunotes/gpunotes/nbrun"
	"github.com/gpunotes/gpunotes/python"
)

// TestWheel checks the wheel's metadata against pyproject.toml and its RECORD against its files.
func TestWheel(t *testing.T) {
	name, data, err := python.Wheel(python.Papermill)
	if err != nil {
		t.Fatal(err)
	}
	p, err := python.ReadProject(python.Papermill)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("gpunotes_papermill-%s-py3-none-any.whl", p.Version); name != want {
		t.Errorf("wheel name %s, want %s", name, want)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		contents[f.Name] = b
	}
	info := "gpunotes_papermill-" + p.Version + ".dist-info/"
	for _, want := range []string{"gpunotes_papermill/__init__.py", info + "METADATA", info + "WHEEL", info + "entry_points.txt", info + "RECORD"} {
		if _, ok := contents[want]; !ok {
			t.Errorf("wheel lacks %s", want)
		}
	}
	if ep := string(contents[info+"entry_points.txt"]); !strings.Contains(ep, "[papermill.engine]\ngpunotes = gpunotes_papermill.engine:GoEngine") {
		t.Errorf("entry_points.txt:\n%s", ep)
	}
	if m := string(contents[info+"METADATA"]); !strings.Contains(m, "Name: gpunotes-papermill\nVersion: "+p.Version) || !strings.Contains(m, "Requires-Dist: papermill") {
		t.Errorf("METADATA:\n%s", m)
	}
	lines := strings.Split(strings.TrimSpace(string(contents[info+"RECORD"])), "\n")
	if len(lines) != len(contents) {
		t.Errorf("RECORD lists %d files, the wheel holds %d", len(lines), len(contents))
	}
	for _, l := range lines {
		f := strings.Split(l, ",")
		if f[0] == info+"RECORD" {
			continue
		}
		sum := sha256.Sum256(contents[f[0]])
		if want := fmt.Sprintf("sha256=%s", base64.RawURLEncoding.EncodeToString(sum[:])); f[1] != want || f[2] != fmt.Sprint(len(contents[f[0]])) {
			t.Errorf("RECORD line %q: want %s,%d", l, want, len(contents[f[0]]))
		}
	}
}

// TestPapermillSameFormAsRun parameterizes one notebook with the real papermill (--prepare-only)
// and with nbrun.InjectParams (what `gpunotes run --param` does), and compares the assignments.
func TestPapermillSameFormAsRun(t *testing.T) {
	env := testenv.InstallKernel(t)
	py := testenv.PapermillPython(t, env)
	dir := t.TempDir()
	src := "N := 40000\nRate := 0.5\nSkipCPU := false\nLabel := \"x\"\nvar Path string\nLimit := 0 // 0: none"
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": "gpunotes", "language": "go", "display_name": "Go (gpunotes)"}},
		"cells": []any{
			map[string]any{"cell_type": "code", "id": "p", "metadata": map[string]any{"tags": []string{"parameters"}}, "source": src, "outputs": []any{}, "execution_count": nil},
			map[string]any{"cell_type": "code", "id": "b", "metadata": map[string]any{}, "source": "N", "outputs": []any{}, "execution_count": nil},
		},
	}
	b, _ := json.Marshal(nb)
	in := filepath.Join(dir, "in.ipynb")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// NAME, papermill's CLI value, and the same value for --param.
	params := [][3]string{
		{"N", "8000", "8000"},
		{"Rate", "0.25", "0.25"},
		{"SkipCPU", "false", "false"},
		{"Label", "a \"quoted\" \\ path\twith é", "a \"quoted\" \\ path\twith é"},
		{"Path", "123", "123"},
		{"Limit", "1 << 20", "1 << 20"},
	}
	out := filepath.Join(dir, "pm.ipynb")
	args := []string{"-m", "papermill", in, out, "--prepare-only", "-k", "gpunotes"}
	var runParams []nbrun.Param
	for _, p := range params {
		args = append(args, "-p", p[0], p[1])
		rp, err := nbrun.ParseParam(p[0] + "=" + p[2])
		if err != nil {
			t.Fatal(err)
		}
		runParams = append(runParams, rp)
	}
	cmd := exec.Command(py, args...)
	cmd.Env = env
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("papermill: %v\n%s", err, o)
	}
	got := injected(t, out)
	ref, err := nbrun.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := nbrun.InjectParams(ref, runParams); err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, c := range ref.Cells {
		if c.HasTag(nbrun.InjectedTag) {
			want = c.Source
		}
	}
	if assignments(got) != assignments(want) || assignments(got) == "" {
		t.Errorf("papermill injected\n%s\ngpunotes run injects\n%s", got, want)
	}

	// papermill imports its engines' entry points while it is being imported: the package's
	// modules must import in either order.
	for _, first := range []string{"gpunotes_papermill.translator", "gpunotes_papermill.engine", "gpunotes_papermill"} {
		check := "import " + first + "\nfrom papermill.translators import papermill_translators as t\n" +
			"from papermill.engines import papermill_engines as e\nt.find_translator('gpunotes', 'go'); e.get_engine('gpunotes')"
		if o, err := exec.Command(py, "-c", check).CombinedOutput(); err != nil {
			t.Errorf("import %s first: %v\n%s", first, err, o)
		}
	}

	// A name the parameters cell does not declare is refused, as by gpunotes run.
	cmd = exec.Command(py, "-m", "papermill", in, filepath.Join(dir, "bad.ipynb"), "--prepare-only", "-p", "Nope", "1")
	cmd.Env = env
	if o, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(o), "parameter Nope is not declared in the parameters cell") {
		t.Errorf("papermill -p Nope: err %v\n%s", err, o)
	}
}

func injected(t *testing.T, path string) string {
	t.Helper()
	nb, err := nbrun.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nb.Cells {
		if c.HasTag(nbrun.InjectedTag) {
			return c.Source
		}
	}
	t.Fatalf("%s has no injected-parameters cell", path)
	return ""
}

// assignments drops the comment lines.
func assignments(src string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(src), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "//") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
