package openblas_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/linalg/openblas"
)

// The kernels' numerics are tested through the chunked algorithms in package linalg, which
// run every test with gonum's kernels and with these.

// TestChildLoad is run by TestLoadChoices in a child process with GPUNOTES_OPENBLAS set:
// Load's result is kept for the life of a process.
func TestChildLoad(t *testing.T) {
	want := os.Getenv("GPUNOTES_TEST_WANT")
	if want == "" {
		t.Skip("run by TestLoadChoices")
	}
	_, err := openblas.New()
	if !errors.Is(err, openblas.ErrNoLibrary) || !strings.Contains(err.Error(), want) {
		t.Fatalf("New() = %v, want ErrNoLibrary mentioning %q", err, want)
	}
	if openblas.Threads() != 0 || openblas.SetThreads(2) == nil {
		t.Fatal("Threads/SetThreads work without a library")
	}
}

func TestLoadChoices(t *testing.T) {
	for env, want := range map[string]string{
		"off":                         "GPUNOTES_OPENBLAS=off",
		"/nonexistent/libopenblas.so": "/nonexistent/libopenblas.so",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildLoad$", "-test.v")
		cmd.Env = append(os.Environ(), openblas.EnvLibrary+"="+env, "GPUNOTES_TEST_WANT="+want)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestChildLoad") {
			t.Errorf("%s=%s: %v\n%s", openblas.EnvLibrary, env, err, out)
		}
	}
	if _, err := openblas.New(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("OpenBLAS is required under CI (.ci/apt-deps.sh installs libopenblas0-pthread): %v", err)
		}
		t.Skipf("no OpenBLAS here: %v", err)
	}
	if n := openblas.Threads(); n < 1 {
		t.Errorf("Threads() = %d", n)
	}
	if !strings.HasPrefix(openblas.Config(), "OpenBLAS") {
		t.Errorf("Config() = %q", openblas.Config())
	}
}
