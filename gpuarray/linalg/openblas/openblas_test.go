package openblas_test

import (
	"errors"
	"math"
	"math/rand/v2"
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

// TestGetrfGetrs solves a random well-conditioned system both ways (A x = b through the
// transpose flag, A^T x = b without it) and checks the residuals; an exactly singular matrix
// reports a positive info.
func TestGetrfGetrs(t *testing.T) {
	if err := openblas.Load(); err != nil {
		t.Skipf("no OpenBLAS: %v", err)
	}
	const n, nrhs = 60, 3
	r := rand.New(rand.NewPCG(1, 2))
	a := make([]float64, n*n) // column-major
	for i := range a {
		a[i] = r.NormFloat64()
	}
	for i := 0; i < n; i++ {
		a[i*n+i] += 10
	}
	b := make([]float64, n*nrhs)
	for i := range b {
		b[i] = r.NormFloat64()
	}
	for _, trans := range []bool{false, true} {
		lu := append([]float64(nil), a...)
		ipiv, info, err := openblas.Getrf(lu, n)
		if err != nil || info != 0 {
			t.Fatalf("Getrf: info %d, %v", info, err)
		}
		x := append([]float64(nil), b...)
		if err := openblas.Getrs(trans, lu, n, ipiv, x, nrhs); err != nil {
			t.Fatal(err)
		}
		for c := 0; c < nrhs; c++ {
			for i := 0; i < n; i++ {
				var s float64
				for j := 0; j < n; j++ {
					aij := a[j*n+i] // column-major A[i][j]
					if trans {
						aij = a[i*n+j]
					}
					s += aij * x[c*n+j]
				}
				if d := math.Abs(s - b[c*n+i]); d > 1e-12 {
					t.Fatalf("transpose %v: residual %.3g in row %d of right-hand side %d", trans, d, i, c)
				}
			}
		}
	}
	ones := []float64{1, 1, 1, 1}
	if _, info, err := openblas.Getrf(ones, 2); err != nil || info <= 0 {
		t.Fatalf("Getrf of a singular matrix: info %d, %v; want a positive info", info, err)
	}
}
