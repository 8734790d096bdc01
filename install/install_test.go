package install

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

func TestInstallUserHonoursJupyterDataDir(t *testing.T) {
	data := t.TempDir()
	t.Setenv("JUPYTER_DATA_DIR", data)
	dir, err := Install(Options{Binary: "/opt/gpunotes/bin/gpunotes"})
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(data, "kernels", "gpunotes") {
		t.Fatalf("installed into %s", dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.DisplayName != "Go (gpunotes)" || spec.Language != "go" || spec.InterruptMode != "message" {
		t.Fatalf("spec %+v", spec)
	}
	if len(spec.Argv) != 3 || spec.Argv[0] != "/opt/gpunotes/bin/gpunotes" || spec.Argv[1] != "kernel" || spec.Argv[2] != "{connection_file}" {
		t.Fatalf("argv %v", spec.Argv)
	}
	for n, size := range map[string]int{"logo-32x32.png": 32, "logo-64x64.png": 64} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() != size {
			t.Fatalf("%s: %v %v", n, err, img.Bounds())
		}
	}
	removed, err := Uninstall("")
	if err != nil || len(removed) != 1 {
		t.Fatalf("uninstall: %v %v", removed, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("kernelspec still there")
	}
	if _, err := Uninstall(""); err == nil {
		t.Fatal("uninstalling twice must say nothing was found")
	}
}

func TestInstallPrefixAndBadName(t *testing.T) {
	p := t.TempDir()
	dir, err := Install(Options{Scope: Prefix, Prefix: p, Name: "gn2", Binary: "/x/gpunotes"})
	if err != nil || dir != filepath.Join(p, "share", "jupyter", "kernels", "gn2") {
		t.Fatalf("%s %v", dir, err)
	}
	if _, err := Install(Options{Scope: Prefix, Prefix: p, Name: "a/b"}); err == nil {
		t.Fatal("a name with a slash must be refused")
	}
	if _, err := Install(Options{Scope: Prefix}); err == nil {
		t.Fatal("--prefix without a directory must be refused")
	}
}

func TestSysPrefixUsesVirtualEnv(t *testing.T) {
	v := t.TempDir()
	t.Setenv("VIRTUAL_ENV", v)
	d, err := KernelsDir(Options{Scope: SysPrefix})
	if err != nil || d != filepath.Join(v, "share", "jupyter", "kernels") {
		t.Fatalf("%s %v", d, err)
	}
}

// TestNamesAsJupyter compares ValidName with jupyter_client's own check (kernelspec's
// _is_valid_kernel_name) from the test virtualenv. jupyter_client also accepts "." and "..",
// which name a parent directory: we refuse those two, the one difference.
func TestNamesAsJupyter(t *testing.T) {
	py := testenv.Python(t)
	names := []string{"gpunotes", "Go-1.26_x", "a.b", "..", ".", "../x", "../../x", "a/b", `a\b`, "a b", "é", "", "x;rm", "-", "_.-"}
	b, _ := json.Marshal(names)
	out, err := exec.Command(py, "-c", `import json, sys
from jupyter_client.kernelspec import _is_valid_kernel_name
print(json.dumps([bool(_is_valid_kernel_name(n)) for n in json.loads(sys.argv[1])]))`, string(b)).Output()
	if err != nil {
		t.Fatalf("jupyter_client: %v", err)
	}
	var jupyter []bool
	if err := json.Unmarshal(out, &jupyter); err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		ours := ValidName(n) == nil
		want := jupyter[i] && n != "." && n != ".."
		if ours != want {
			t.Errorf("name %q: ours valid=%v, jupyter_client valid=%v", n, ours, jupyter[i])
		}
		if ours || n == "" { // "" means the default name to Install and Uninstall
			continue
		}
		if _, err := Install(Options{Scope: Prefix, Prefix: t.TempDir(), Name: n, Binary: "/x/gpunotes"}); err == nil {
			t.Errorf("install accepted %q", n)
		}
		if _, err := Uninstall(n); err == nil || !strings.Contains(err.Error(), "kernel name") {
			t.Errorf("uninstall of %q: %v", n, err)
		}
	}
}

// TestUninstallRemovesOnlyOurs: a kernelspec of another kernel under the same name is left
// alone; files a user added keep the directory; only Install's files go.
func TestUninstallRemovesOnlyOurs(t *testing.T) {
	data := t.TempDir()
	t.Setenv("JUPYTER_DATA_DIR", data)
	t.Setenv("VIRTUAL_ENV", t.TempDir())
	other := filepath.Join(data, "kernels", "python3")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(other, "kernel.json"), []byte(`{"argv":["python","-m","ipykernel_launcher","-f","{connection_file}"],"display_name":"Python 3","language":"python"}`), 0o644)
	if _, err := Uninstall("python3"); err == nil {
		t.Fatal("uninstall removed another kernel's spec")
	}
	if _, err := os.Stat(filepath.Join(other, "kernel.json")); err != nil {
		t.Fatalf("python3 kernelspec damaged: %v", err)
	}
	dir, err := Install(Options{Binary: "/x/gpunotes"})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	sort.Strings(got)
	want := append([]string(nil), specFiles...)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("install wrote %v, Uninstall knows %v", got, want)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Uninstall(""); err == nil {
		t.Fatal("uninstall should report the directory it kept")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatalf("user file lost: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kernel.json")); !os.IsNotExist(err) {
		t.Fatal("kernel.json still there")
	}
}
