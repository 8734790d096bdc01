package kernel_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// runPy runs a Python test script of testdata against the installed kernelspec.
func runPy(t *testing.T, script string, timeout time.Duration) {
	t.Helper()
	py := testenv.Python(t)
	env := testenv.InstallKernel(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", script))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", script, out)
	if err != nil {
		t.Fatalf("%s failed: %v", script, err)
	}
}

// TestJupyterKernelTest runs jupyter_kernel_test 0.7.0 with Go samples for every attribute.
func TestJupyterKernelTest(t *testing.T) { runPy(t, "test_conformance.py", 5*time.Minute) }

// TestJupyterClient drives interrupt, restart, stdin and bad input through jupyter_client.
func TestJupyterClient(t *testing.T) { runPy(t, "test_client.py", 8*time.Minute) }

// TestNbconvertExecute runs a notebook through `jupyter nbconvert --execute` and checks outputs.
func TestNbconvertExecute(t *testing.T) { runPy(t, "check_nbconvert.py", 5*time.Minute) }

// TestHardening sends hostile bytes and careless requests to the kernel, beside ipykernel on
// the same input (test_hardening.py says what each does).
func TestHardening(t *testing.T) { runPy(t, "test_hardening.py", 5*time.Minute) }

// TestReliability interrupts every kind of work and checks the next cell's result, and runs
// away recursion and goroutine floods through jupyter_client (test_reliability.py).
func TestReliability(t *testing.T) { runPy(t, "test_reliability.py", 10*time.Minute) }
