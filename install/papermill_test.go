package install

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJupyterPython finds the interpreter of the jupyter command on PATH from its #! line, in
// both forms pip writes (a plain #! line, and the /bin/sh trampoline for long paths).
func TestJupyterPython(t *testing.T) {
	dir := t.TempDir()
	py := filepath.Join(dir, "env with space", "bin", "python3")
	if err := os.MkdirAll(filepath.Dir(py), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "bin", "python3")
	if err := os.MkdirAll(filepath.Dir(plain), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ script, want string }{
		{"#!" + plain + "\nimport sys\n", plain},
		{"#!/bin/sh\n'''exec' \"" + py + "\" \"$0\" \"$@\"\n' '''\nimport sys\n", py},
	} {
		bin := filepath.Join(t.TempDir(), "jupyter")
		if err := os.WriteFile(bin, []byte(c.script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", filepath.Dir(bin))
		got, err := JupyterPython()
		if err != nil || got != c.want {
			t.Errorf("script %q: got %q, %v; want %q", c.script, got, err, c.want)
		}
	}
}
