// Package testenv finds the real clients that end-to-end tests drive (the gpunotes binary, the
// test virtualenv's python, chromium). `make test` provides them through GPUNOTES_* variables;
// without them a test is skipped, except under CI=true, where a missing client is a failure.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI (run the tests through `make test`)", what)
	}
	t.Skipf("%s not available (run through `make test`)", what)
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Binary returns the gpunotes binary: GPUNOTES_BIN, or one built once into a temp dir.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("GPUNOTES_BIN"); b != "" {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("GPUNOTES_BIN=%s: %v", b, err)
		}
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpunotes-bin")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "gpunotes")
		cmd := exec.Command("go", "build", "-o", built, ".")
		cmd.Dir = RepoRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("build gpunotes: %v", buildErr)
	}
	return built
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// Python returns the test virtualenv's python (GPUNOTES_PYTHON), or skips/fails.
func Python(t testing.TB) string {
	t.Helper()
	p := os.Getenv("GPUNOTES_PYTHON")
	if p == "" {
		if c := filepath.Join(RepoRoot(t), ".venv", "bin", "python"); fileExists(c) {
			return c
		}
		missing(t, "the test virtualenv's python (GPUNOTES_PYTHON)")
	}
	// A bare name (python3) is looked up on PATH, as a shell would.
	if !strings.ContainsRune(p, '/') {
		if lp, err := exec.LookPath(p); err == nil {
			p = lp
		}
	}
	if !fileExists(p) {
		missing(t, "GPUNOTES_PYTHON="+p)
	}
	return p
}

// Chromium returns Debian's chromium (GPUNOTES_CHROMIUM, default /usr/bin/chromium).
func Chromium(t testing.TB) string {
	t.Helper()
	p := os.Getenv("GPUNOTES_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if !fileExists(p) {
		missing(t, "chromium at "+p)
	}
	return p
}

// RepoRoot is the module root.
func RepoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// InstallKernel installs the kernelspec into a fresh JUPYTER_DATA_DIR and returns an
// environment (os.Environ plus JUPYTER_* dirs) for clients that should find it.
func InstallKernel(t testing.TB) []string {
	t.Helper()
	bin := Binary(t)
	data := t.TempDir()
	env := append(os.Environ(), "JUPYTER_DATA_DIR="+data, "JUPYTER_RUNTIME_DIR="+t.TempDir(),
		"JUPYTER_CONFIG_DIR="+t.TempDir(), "GPUNOTES_HISTORY="+filepath.Join(t.TempDir(), "history.jsonl"),
		"JUPYTER_PLATFORM_DIRS=1", "PYTHONUNBUFFERED=1")
	cmd := exec.Command(bin, "install")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpunotes install: %v\n%s", err, out)
	}
	return env
}

// PapermillPython returns the python of a fresh virtualenv that sees the test virtualenv's
// packages (papermill, nbclient) and has gpunotes-papermill installed by
// `gpunotes install --papermill --python`, the way users install it. env is InstallKernel's.
func PapermillPython(t testing.TB, env []string) string {
	t.Helper()
	py := Python(t)
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(py, "-m", "venv", venv).CombinedOutput(); err != nil {
		t.Fatalf("create a virtualenv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	site := func(p string) string {
		out, err := exec.Command(p, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").Output()
		if err != nil {
			t.Fatalf("%s: site-packages: %v", p, err)
		}
		return strings.TrimSpace(string(out))
	}
	// The test virtualenv's packages come after the new one's own (a .pth line appends).
	if err := os.WriteFile(filepath.Join(site(vpy), "gpunotes-testvenv.pth"), []byte(site(py)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary(t), "install", "--papermill", "--python", vpy)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpunotes install --papermill: %v\n%s", err, out)
	}
	return vpy
}
