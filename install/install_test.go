package install

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"
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
