package blas

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// matrixBlock returns a block of matrices for a matrix function: well conditioned (a random matrix
// plus a multiple of the identity) or symmetric positive definite (b b^T + n I).
func matrixBlock(seed uint64, batch, m, n int, spd bool) []float64 {
	g := rand.New(rand.NewPCG(seed, 3))
	x := make([]float64, batch*m*n)
	for i := range x {
		x[i] = g.NormFloat64()
	}
	if !spd {
		return x
	}
	y := make([]float64, len(x))
	for b := 0; b < batch; b++ {
		a, s := x[b*m*n:(b+1)*m*n], y[b*m*n:(b+1)*m*n]
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				var sum float64
				for k := 0; k < n; k++ {
					sum += a[i*n+k] * a[j*n+k]
				}
				s[i*n+j] = sum
			}
			s[i*n+i] += float64(n)
		}
	}
	return y
}

// TestGPUMatrixFunctionsMatchCPU runs every matrix function with cuSOLVER and with the CPU's
// kernels (OpenBLAS's LAPACK where it loads, else gonum; both checked against NumPy in package
// gpuarray) on stacks of matrices up to 300 x 300, and compares them to 1e-9 of the result's largest magnitude (LU, QR-based
// SVD and divide-and-conquer eigensolvers round differently on the two). Eigenvectors are
// compared up to sign, which is each library's choice.
func TestGPUMatrixFunctionsMatchCPU(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	type tc struct {
		fn          expr.CallFn
		batch, m, n int
		N           int
		rhs         int // right-hand sides given apart (Call.RHS)
		spd         bool
	}
	var cases []tc
	for _, n := range []int{1, 5, 64, 300} {
		cases = append(cases,
			tc{fn: expr.FnInv, batch: 2, m: n, n: n},
			tc{fn: expr.FnDet, batch: 2, m: n, n: n},
			tc{fn: expr.FnSlogdetSign, batch: 3, m: n, n: n},
			tc{fn: expr.FnSlogdetLog, batch: 3, m: n, n: n},
			tc{fn: expr.FnCholesky, batch: 2, m: n, n: n, spd: true},
			tc{fn: expr.FnEigvalsh, batch: 2, m: n, n: n, spd: true},
			tc{fn: expr.FnEighVectors, batch: 1, m: n, n: n, spd: true},
			tc{fn: expr.FnSolve, batch: 2, m: n, n: n + 1, N: n},
			tc{fn: expr.FnSolve, batch: 1, m: n, n: n + 3, N: n},
			tc{fn: expr.FnPinv, batch: 1, m: n + 7, n: n},
			tc{fn: expr.FnPinv, batch: 2, m: n, n: n + 4},
			tc{fn: expr.FnMatrixRank, batch: 2, m: n + 2, n: n},
			tc{fn: expr.FnLstsq, batch: 1, m: n + 9, n: n + 2, N: n},
			tc{fn: expr.FnLstsq, batch: 1, m: n, n: n + 5 + 1, N: n + 5},
			tc{fn: expr.FnSolve, batch: 1, m: n, n: n, N: n, rhs: 1},
			tc{fn: expr.FnSolve, batch: 1, m: n, n: n, N: n, rhs: 3},
			tc{fn: expr.FnLstsq, batch: 1, m: n + 9, n: n, N: n, rhs: 2},
			tc{fn: expr.FnLstsq, batch: 1, m: n, n: n + 5, N: n + 5, rhs: 1},
		)
	}
	// Stacks of small matrices take the batched LU (luBatch).
	cases = append(cases,
		tc{fn: expr.FnInv, batch: 500, m: 8, n: 8},
		tc{fn: expr.FnSolve, batch: 300, m: 16, n: 18, N: 16},
		tc{fn: expr.FnDet, batch: 400, m: 4, n: 4},
		tc{fn: expr.FnSlogdetSign, batch: 100, m: 32, n: 32},
		tc{fn: expr.FnSlogdetLog, batch: 100, m: 32, n: 32},
	)
	// ... and the batched Jacobi eigensolver (eighBatch).
	cases = append(cases,
		tc{fn: expr.FnEigvalsh, batch: 300, m: 8, n: 8, spd: true},
		tc{fn: expr.FnEighVectors, batch: 200, m: 16, n: 16, spd: true},
		tc{fn: expr.FnEigvalsh, batch: 50, m: 32, n: 32, spd: true},
		tc{fn: expr.FnEighVectors, batch: 40, m: 32, n: 32, spd: true},
		tc{fn: expr.FnEighVectors, batch: 30, m: 1, n: 1, spd: true},
	)
	// ... and the batched Jacobi SVD (svdBatch).
	cases = append(cases,
		tc{fn: expr.FnPinv, batch: 200, m: 12, n: 7},
		tc{fn: expr.FnPinv, batch: 150, m: 5, n: 32},
		tc{fn: expr.FnPinv, batch: 100, m: 32, n: 32},
		tc{fn: expr.FnMatrixRank, batch: 300, m: 9, n: 6},
		tc{fn: expr.FnMatrixRank, batch: 100, m: 16, n: 30},
	)
	for i, c := range cases {
		what := fmt.Sprintf("%v of %d x (%d x %d)", c.fn, c.batch, c.m, c.n)
		shape := []int{c.batch, c.m, c.n}
		x := matrixBlock(uint64(i), c.batch, c.m, c.n, c.spd)
		if c.fn == expr.FnSolve || c.fn == expr.FnInv || c.fn == expr.FnDet || c.fn == expr.FnSlogdetLog || c.fn == expr.FnSlogdetSign {
			for b := 0; b < c.batch; b++ { // well conditioned: a diagonal shift of the square part
				for j := 0; j < c.m; j++ {
					x[b*c.m*c.n+j*c.n+j] += 3 * math.Sqrt(float64(c.m))
				}
			}
		}
		step := &plan.CallStep{Call: expr.Call{Fn: c.fn, N: c.N, RHS: c.rhs}, DType: dtype.Float64}
		var ops []dtype.Slice
		if c.rhs > 0 {
			what += fmt.Sprintf(" with %d right-hand sides apart", c.rhs)
			ops = []dtype.Slice{dtype.OfFloat64(matrixBlock(uint64(i)+1000, 1, c.m, c.rhs, false))}
		}
		want, wshape, err := cpu.ApplyCall(ctx, fft.CPU, step, dtype.OfFloat64(append([]float64(nil), x...)), shape, ops...)
		if err != nil {
			t.Fatalf("%s on the CPU: %v", what, err)
		}
		got, gshape, err := RunMatrix(ctx, k.dev, step, dtype.OfFloat64(append([]float64(nil), x...)), shape, ops)
		if err != nil {
			t.Fatalf("%s on the GPU: %v", what, err)
		}
		if fmt.Sprint(gshape) != fmt.Sprint(wshape) {
			t.Fatalf("%s: shape %v on the GPU, %v on the CPU", what, gshape, wshape)
		}
		w, g := want.Float64s(), got.Float64s()
		if c.fn == expr.FnEighVectors { // each column's sign is the library's choice
			for b := 0; b < c.batch; b++ {
				for j := 0; j < c.n; j++ {
					off := b * c.n * c.n
					var dot float64
					for r := 0; r < c.n; r++ {
						dot += w[off+r*c.n+j] * g[off+r*c.n+j]
					}
					if dot < 0 {
						for r := 0; r < c.n; r++ {
							g[off+r*c.n+j] = -g[off+r*c.n+j]
						}
					}
				}
			}
		}
		scale := 1.0
		for _, v := range w {
			scale = max(scale, math.Abs(v))
		}
		tol := 1e-9
		if c.fn == expr.FnDet {
			tol = 1e-8 // a product of n pivots
		}
		for j := range w {
			if g[j] == w[j] { // equal infinities too (the determinant of a large matrix)
				continue
			}
			if d := math.Abs(g[j] - w[j]); !(d <= tol*scale) {
				t.Fatalf("%s: element %d is %v on the GPU, %v on the CPU (difference %.3g, scale %.3g)", what, j, g[j], w[j], d, scale)
			}
		}
	}
	for _, fn := range []expr.CallFn{expr.FnInv, expr.FnSolve, expr.FnLstsq, expr.FnEighVectors} {
		if lib := cuda.CallLibrary(fn); lib != "cuSOLVER" {
			t.Errorf("%v runs on %q on a GPU, want cuSOLVER", fn, lib)
		}
	}
}

// TestGPUMatrixFunctionErrors: a singular matrix and one that is not positive definite give
// the CPU's errors, alone and in a stack (the batched LU).
func TestGPUMatrixFunctionErrors(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	stack := append([]float64{2, 0, 0, 2}, 1, 1, 1, 1) // the second matrix is singular
	if _, _, err := RunMatrix(ctx, k.dev, &plan.CallStep{Call: expr.Call{Fn: expr.FnInv}, DType: dtype.Float64}, dtype.OfFloat64(stack), []int{2, 2, 2}, nil); err == nil || !strings.Contains(err.Error(), "singular") || !strings.Contains(err.Error(), "matrix 1 of 2") {
		t.Errorf("Inv of a stack with a singular matrix: %v, want an error naming matrix 1 as singular", err)
	}
	ones := dtype.OfFloat64([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1})
	for _, c := range []struct {
		fn   expr.CallFn
		want string
	}{{expr.FnInv, "singular"}, {expr.FnCholesky, "positive definite"}} {
		in := ones.Clone()
		if c.fn == expr.FnCholesky {
			in = dtype.OfFloat64([]float64{-1, 0, 0, 0, -1, 0, 0, 0, -1})
		}
		_, _, err := RunMatrix(ctx, k.dev, &plan.CallStep{Call: expr.Call{Fn: c.fn}, DType: dtype.Float64}, in, []int{3, 3}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %s", c.fn, err, c.want)
		}
	}
	// An exactly singular matrix has determinant 0 and slogdet (0, -inf), as NumPy gives.
	for fn, want := range map[expr.CallFn]float64{expr.FnDet: 0, expr.FnSlogdetSign: 0, expr.FnSlogdetLog: math.Inf(-1)} {
		got, _, err := RunMatrix(ctx, k.dev, &plan.CallStep{Call: expr.Call{Fn: fn}, DType: dtype.Float64}, ones.Clone(), []int{3, 3}, nil)
		if err != nil {
			t.Fatalf("%v of a singular matrix: %v", fn, err)
		}
		if v := got.Float64s()[0]; v != want {
			t.Errorf("%v of a singular matrix: %v, want %v", fn, v, want)
		}
	}
}

// TestOpenErrorSaysWhere: a library that cannot be opened is named in the error, with where
// the loader looked (LD_LIBRARY_PATH, then the system's cache and folders).
func TestOpenErrorSaysWhere(t *testing.T) {
	t.Setenv("LD_LIBRARY_PATH", "/nonexistent/cuda/lib64")
	_, _, err := open([]string{"libcusolver.so.999"})
	if err == nil {
		t.Fatal("opened a library that does not exist")
	}
	for _, want := range []string{"libcusolver.so.999", "LD_LIBRARY_PATH", "/nonexistent/cuda/lib64", "ld.so cache"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, ErrNoLibrary) {
		t.Errorf("error %v does not wrap ErrNoLibrary", err)
	}
}

// TestGPUStackTime times the inverse of 20000 4 x 4 matrices with cuBLAS's batched LU on the
// GPU and with the CPU's kernels, and checks the GPU's values against the CPU's.
func TestGPUStackTime(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	const batch, n = 20000, 4
	x := matrixBlock(7, batch, n, n, false)
	for b := 0; b < batch; b++ {
		for j := 0; j < n; j++ {
			x[b*n*n+j*n+j] += 6
		}
	}
	step := &plan.CallStep{Call: expr.Call{Fn: expr.FnInv}, DType: dtype.Float64}
	shape := []int{batch, n, n}
	t0 := time.Now()
	want, _, err := cpu.ApplyCall(ctx, fft.CPU, step, dtype.OfFloat64(append([]float64(nil), x...)), shape)
	if err != nil {
		t.Fatal(err)
	}
	cpuTime := time.Since(t0)
	var got dtype.Slice
	var gpuTime time.Duration
	for r := 0; r < 2; r++ { // the second run, after cuBLAS's first-call setup
		t0 = time.Now()
		if got, _, err = RunMatrix(ctx, k.dev, step, dtype.OfFloat64(append([]float64(nil), x...)), shape, nil); err != nil {
			t.Fatal(err)
		}
		gpuTime = time.Since(t0)
	}
	w, g := want.Float64s(), got.Float64s()
	for i := range w {
		if math.Abs(g[i]-w[i]) > 1e-12*math.Max(1, math.Abs(w[i])) {
			t.Fatalf("element %d: %v on the GPU, %v on the CPU", i, g[i], w[i])
		}
	}
	t.Logf("inverse of %d %d x %d matrices: GPU (batched LU, with the transfers) %v, CPU %v", batch, n, n, gpuTime, cpuTime)
}

// TestGPUStackEighTime times the eigenvectors of 5000 8 x 8 symmetric matrices with cuSOLVER's
// batched Jacobi solver and with the loop over matrices (syevd per matrix), and checks that the
// two agree.
func TestGPUStackEighTime(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	const batch, n = 5000, 8
	x := matrixBlock(11, batch, n, n, true)
	step := &plan.CallStep{Call: expr.Call{Fn: expr.FnEighVectors}, DType: dtype.Float64}
	shape := []int{batch, n, n}
	run := func(loop bool) ([]float64, time.Duration) {
		noBatched = loop
		defer func() { noBatched = false }()
		var got dtype.Slice
		var d time.Duration
		for r := 0; r < 2; r++ { // the second run, after the library's first-call setup
			t0 := time.Now()
			var err error
			if got, _, err = RunMatrix(ctx, k.dev, step, dtype.OfFloat64(append([]float64(nil), x...)), shape, nil); err != nil {
				t.Fatal(err)
			}
			d = time.Since(t0)
		}
		return got.Float64s(), d
	}
	b, bt := run(false)
	l, lt := run(true)
	for m := 0; m < batch; m++ {
		for j := 0; j < n; j++ { // each column's sign is the library's choice
			off := m * n * n
			var dot float64
			for r := 0; r < n; r++ {
				dot += b[off+r*n+j] * l[off+r*n+j]
			}
			for r := 0; r < n; r++ {
				g, w := b[off+r*n+j], l[off+r*n+j]
				if dot < 0 {
					g = -g
				}
				if math.Abs(g-w) > 1e-9 {
					t.Fatalf("matrix %d, vector %d, row %d: batched %v, loop %v", m, j, r, g, w)
				}
			}
		}
	}
	t.Logf("eigenvectors of %d %d x %d matrices: batched Jacobi %v, loop of syevd %v (%.1fx)", batch, n, n, bt, lt, lt.Seconds()/bt.Seconds())
}

// TestGPUStackRankDeficient: ranks and pseudo-inverses of a stack of 10 x 8 matrices of every
// rank from 1 to 8 (products of 10 x r and r x 8 factors) equal the CPU's, through the batched
// SVD (its cutoff drops the zero singular values) and through the loop over matrices.
func TestGPUStackRankDeficient(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	const batch, m, n = 64, 10, 8
	x := make([]float64, batch*m*n)
	ranks := make([]float64, batch)
	for b := 0; b < batch; b++ {
		r := b%n + 1
		ranks[b] = float64(r)
		f, g := matrixBlock(uint64(2*b), 1, m, r, false), matrixBlock(uint64(2*b+1), 1, r, n, false)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s float64
				for l := 0; l < r; l++ {
					s += f[i*r+l] * g[l*n+j]
				}
				x[b*m*n+i*n+j] = s
			}
		}
	}
	shape := []int{batch, m, n}
	for _, fn := range []expr.CallFn{expr.FnMatrixRank, expr.FnPinv} {
		step := &plan.CallStep{Call: expr.Call{Fn: fn}, DType: dtype.Float64}
		want, _, err := cpu.ApplyCall(ctx, fft.CPU, step, dtype.OfFloat64(append([]float64(nil), x...)), shape)
		if err != nil {
			t.Fatal(err)
		}
		w := want.Float64s()
		if fn == expr.FnMatrixRank && fmt.Sprint(w) != fmt.Sprint(ranks) {
			t.Fatalf("CPU ranks %v, built %v", w, ranks)
		}
		for _, loop := range []bool{false, true} {
			noBatched = loop
			got, _, err := RunMatrix(ctx, k.dev, step, dtype.OfFloat64(append([]float64(nil), x...)), shape, nil)
			noBatched = false
			if err != nil {
				t.Fatalf("%v (loop %v): %v", fn, loop, err)
			}
			g := got.Float64s()
			for i := range w {
				if d := math.Abs(g[i] - w[i]); !(d <= 1e-8*max(1, math.Abs(w[i]))) {
					t.Fatalf("%v (loop %v): element %d is %v on the GPU, %v on the CPU", fn, loop, i, g[i], w[i])
				}
			}
		}
	}
}
