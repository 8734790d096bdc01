package blas

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// gpuKernels opens GPU 0, or skips when there is none (fails when GPUNOTES_REQUIRE_GPU is set,
// as on the GPU machine).
func gpuKernels(t *testing.T) *Kernels {
	t.Helper()
	k, err := New(0)
	if err != nil {
		if os.Getenv("GPUNOTES_REQUIRE_GPU") != "" {
			t.Fatalf("GPUNOTES_REQUIRE_GPU is set but cuBLAS kernels are unavailable: %v", err)
		}
		t.Skipf("no GPU with cuBLAS/cuSOLVER here: %v", err)
	}
	return k
}

func TestLoadReportsMissingLibraries(t *testing.T) {
	err := Load()
	if err == nil {
		t.Skipf("libraries present: %s", Libraries())
	}
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("Load without libraries: %v does not wrap ErrNoLibrary", err)
	}
	if _, err := New(0); !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("New without libraries: %v", err)
	}
}

func randMat(seed uint64, r, c int) linalg.Mat {
	g := rand.New(rand.NewPCG(seed, 1))
	m := linalg.NewMat(r, c)
	for i := range m.Data {
		m.Data[i] = g.NormFloat64()
	}
	return m
}

func dense(m linalg.Mat) *mat.Dense { return mat.NewDense(m.Rows, m.Cols, m.Data) }

func checkSVD(t *testing.T, name string, a linalg.Mat, r *linalg.SVDResult) {
	t.Helper()
	A, U, Vt := dense(a), dense(r.U), dense(r.Vt)
	var us, rec, d mat.Dense
	us.Mul(U, mat.NewDiagDense(len(r.S), r.S))
	rec.Mul(&us, Vt)
	d.Sub(&rec, A)
	if e := mat.Norm(&d, 2) / mat.Norm(A, 2); e > 1e-12 {
		t.Errorf("%s: ||A - U S Vt|| / ||A|| = %.3g", name, e)
	}
	var g mat.Dense
	g.Mul(U.T(), U)
	for i := 0; i < len(r.S); i++ {
		g.Set(i, i, g.At(i, i)-1)
	}
	if e := mat.Norm(&g, 2); e > 1e-12 {
		t.Errorf("%s: ||U^T U - I|| = %.3g", name, e)
	}
	var ref mat.SVD
	ref.Factorize(mat.DenseCopyOf(A), mat.SVDNone)
	want := ref.Values(nil)
	for i, s := range r.S {
		if e := math.Abs(s-want[i]) / want[i]; e > 1e-10 {
			t.Errorf("%s: S[%d] = %v, gonum %v", name, i, s, want[i])
		}
	}
	if !strings.Contains(r.Kernels, "cuBLAS") {
		t.Errorf("%s: kernels %q", name, r.Kernels)
	}
}

func TestGPUSVD(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	for _, c := range []struct{ m, n, rc, cc int }{
		{300, 40, 64, 40}, {100, 60, 25, 60}, {40, 300, 40, 70}, {2000, 100, 500, 100},
	} {
		a := randMat(uint64(c.m), c.m, c.n)
		am, _ := linalg.FromMat(a, c.rc, c.cc)
		r, err := linalg.SVD(ctx, am, linalg.Options{Kernels: k, LeafRows: 2 * c.n})
		if err != nil {
			t.Fatal(err)
		}
		checkSVD(t, "svd", a, r)
	}
	// The dense SVD kernel, wide and tall.
	for _, s := range [][2]int{{30, 50}, {50, 30}} {
		a := randMat(9, s[0], s[1])
		u, sv, vt, err := k.SVD(a)
		if err != nil {
			t.Fatal(err)
		}
		checkSVD(t, "dense", a, &linalg.SVDResult{U: u, S: sv, Vt: vt, Kernels: k.Name()})
	}
}

func TestGPUMatMulAndCompressed(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	a, b := randMat(1, 70, 50), randMat(2, 50, 40)
	am, _ := linalg.FromMat(a, 16, 13)
	bm, _ := linalg.FromMat(b, 9, 40)
	p, err := linalg.MatMul(ctx, am, bm, linalg.Options{Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	var want, d mat.Dense
	want.Mul(dense(a), dense(b))
	d.Sub(&want, dense(p.C))
	if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); e > 1e-14 {
		t.Errorf("MatMul relative error %.3g", e)
	}
	// Transposed operands: op(a^T) = a.
	c := linalg.NewMat(70, 40)
	if err := k.Gemm(true, false, 1, a.T(), b, 0, c); err != nil {
		t.Fatal(err)
	}
	d.Sub(&want, dense(c))
	if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); e > 1e-14 {
		t.Errorf("Gemm with a transposed operand: relative error %.3g", e)
	}
	low := linalg.NewMat(200, 90)
	x, y := randMat(3, 200, 5), randMat(4, 5, 90)
	var lr mat.Dense
	lr.Mul(dense(x), dense(y))
	copy(low.Data, lr.RawMatrix().Data)
	lm, _ := linalg.FromMat(low, 50, 30)
	r, err := linalg.SVDCompressed(ctx, lm, 5, 2, 5, 42, linalg.Options{Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	checkSVD(t, "compressed", low, r)
}

// TestGPUSeedSVDTime logs the time of seed 001's SVD (10000 x 1000 in chunks of 1000 x 1000)
// with the GPU kernels, for bench/RESULTS.md; it asserts the accuracy of the result.
func TestGPUSeedSVDTime(t *testing.T) {
	k := gpuKernels(t)
	if testing.Short() {
		t.Skip("short")
	}
	a := randMat(5, 10000, 1000)
	am, _ := linalg.FromMat(a, 1000, 1000)
	for _, lr := range []int{0, 2000} {
		t0 := time.Now()
		r, err := linalg.SVD(context.Background(), am, linalg.Options{Kernels: k, LeafRows: lr})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("GPU SVD 10000 x 1000, chunks 1000 x 1000, leaves >= %d rows: %.3f s (%s)", lr, time.Since(t0).Seconds(), r.Kernels)
		if len(r.S) != 1000 || r.S[0] <= r.S[999] {
			t.Fatalf("singular values %d, first %v last %v", len(r.S), r.S[0], r.S[999])
		}
	}
}
