package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/linalg/openblas"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// applyMatrix runs a matrix function on every matrix of the last two axes of a block, with
// OpenBLAS's LAPACK where OpenBLAS loads (MatrixLibrary), else gonum's, and returns the results
// in the call's dtype. Stacks of small matrices are spread over the cores; a large matrix gets
// OpenBLAS's own threads instead.
func applyMatrix(ctx context.Context, c *plan.CallStep, in dtype.Slice, shape []int, operands []dtype.Slice) (res dtype.Slice, out []int, err error) {
	if in.DType().Kind() == dtype.KindComplex {
		return dtype.Slice{}, nil, fmt.Errorf("%v of complex matrices is not supported yet", c.Fn)
	}
	r := len(shape)
	m, n := shape[r-2], shape[r-1]
	batch := 1
	for _, d := range shape[:r-2] {
		batch *= d
	}
	out = c.OutShape(shape)
	per := 1 // result values per matrix: the axes after the batch axes
	for _, d := range out[r-2:] {
		per *= d
	}
	x := dtype.Convert(in, dtype.Float64).Float64s() // the call's own values: may be overwritten
	var rhs []float64                                // right-hand sides given apart (c.RHS): one matrix, m x c.RHS
	if c.RHS > 0 {
		if len(operands) != 1 || batch != 1 || operands[0].Len() != m*c.RHS {
			return dtype.Slice{}, nil, fmt.Errorf("%v: %d right-hand sides of %d rows for a block of shape %v", c.Fn, c.RHS, m, shape)
		}
		if operands[0].DType().Kind() == dtype.KindComplex {
			return dtype.Slice{}, nil, fmt.Errorf("%v of complex right-hand sides is not supported yet", c.Fn)
		}
		rhs = dtype.Convert(operands[0], dtype.Float64).Float64s() // read only: may be shared
	}
	y := make([]float64, batch*per)
	lapack := useLAPACK()
	one := func(b int) (err error) {
		xb := x[b*m*n : (b+1)*m*n]
		if lapack {
			return lapackFn(c, xb, rhs, m, n, y[b*per:(b+1)*per])
		}
		defer func() {
			// gonum panics on shapes it does not take; say which matrix instead.
			if p := recover(); p != nil {
				err = fmt.Errorf("%v", p)
			}
		}()
		var rd *mat.Dense
		if rhs != nil {
			rd = mat.NewDense(m, c.RHS, rhs)
		}
		a := mat.NewDense(max(m, 1), max(n, 1), nil)
		if m > 0 && n > 0 {
			a = mat.NewDense(m, n, xb)
		}
		return matrixFn(c, a, rd, m, n, y[b*per:(b+1)*per])
	}
	// OpenBLAS runs calls on matrices below about 10000 elements on the calling thread, so a
	// stack of those runs on all cores at once without oversubscribing them; larger ones one
	// at a time on OpenBLAS's threads (gonum's are single-threaded at any size, but its large
	// matrices are better left to the scheduler's tasks than to a second level of goroutines).
	workers := 1
	if batch > 1 && m*n < 10000 {
		workers = min(batch, runtime.GOMAXPROCS(0))
	}
	if b, err := forBatch(ctx, batch, workers, one); err != nil {
		if errors.Is(err, ctx.Err()) {
			return dtype.Slice{}, nil, err
		}
		if batch > 1 {
			return dtype.Slice{}, nil, fmt.Errorf("%v of matrix %d of %d: %w", c.Fn, b, batch, err)
		}
		return dtype.Slice{}, nil, fmt.Errorf("%v: %w", c.Fn, err)
	}
	res = dtype.OfFloat64(y)
	if c.DType != dtype.Float64 {
		res = dtype.Convert(res, c.DType)
	}
	return res, out, nil
}

// forBatch runs f(b) for b in [0, batch) on up to workers goroutines and returns the error of
// the lowest b that failed (and that b), so the error does not depend on the timing.
func forBatch(ctx context.Context, batch, workers int, f func(b int) error) (int, error) {
	if workers <= 1 {
		for b := 0; b < batch; b++ {
			if b&15 == 0 && ctx.Err() != nil {
				return b, ctx.Err()
			}
			if err := f(b); err != nil {
				return b, err
			}
		}
		return 0, nil
	}
	var (
		next   atomic.Int64
		mu     sync.Mutex
		failB  = batch
		failE  error
		wg     sync.WaitGroup
		failed atomic.Bool
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				b := int(next.Add(1) - 1)
				if b >= batch {
					return
				}
				err := ctx.Err()
				if err == nil {
					err = f(b)
				}
				if err != nil {
					mu.Lock()
					if b < failB {
						failB, failE = b, err
					}
					mu.Unlock()
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return failB, failE
}

// errSingular is the error of a solve or inverse of an exactly singular matrix, as NumPy's
// LinAlgError("Singular matrix").
var errSingular = errors.New("singular matrix")

// matrixFn computes one matrix's result into dst (row-major). rhs, when not nil, holds the
// right-hand sides of FnSolve and FnLstsq (else they are a's columns from c.N on).
func matrixFn(c *plan.CallStep, a, rhs *mat.Dense, m, n int, dst []float64) error {
	if rhs != nil {
		// The joined layout [a | rhs], as the rest of this function reads it.
		j := mat.NewDense(m, n+c.RHS, nil)
		j.Augment(a, rhs)
		a, n = j, n+c.RHS
	}
	if m == 0 || n == 0 {
		if c.Fn == expr.FnDet {
			dst[0] = 1
		}
		if c.Fn == expr.FnSlogdetSign {
			dst[0] = 1
		}
		return nil // empty results; the log of an empty determinant is 0
	}
	lower := func() *mat.SymDense {
		s := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				s.SetSym(i, j, a.At(i, j))
			}
		}
		return s
	}
	singular := func(err error) error {
		var cond mat.Condition
		if errors.As(err, &cond) && !math.IsInf(float64(cond), 1) {
			return nil // ill-conditioned but solved, as LAPACK would
		}
		if err != nil {
			return errSingular
		}
		return nil
	}
	switch c.Fn {
	case expr.FnInv:
		var inv mat.Dense
		if err := singular(inv.Inverse(a)); err != nil {
			return err
		}
		copy(dst, inv.RawMatrix().Data)
	case expr.FnDet:
		dst[0] = mat.Det(a)
	case expr.FnSlogdetSign, expr.FnSlogdetLog:
		logdet, sign := mat.LogDet(a)
		if sign == 0 || math.IsInf(logdet, -1) { // gonum says sign 1 for some singular matrices
			sign, logdet = 0, math.Inf(-1)
		}
		if c.Fn == expr.FnSlogdetSign {
			dst[0] = sign
		} else {
			dst[0] = logdet
		}
	case expr.FnCholesky:
		var ch mat.Cholesky
		if !ch.Factorize(lower()) {
			return errors.New("matrix is not positive definite")
		}
		var l mat.TriDense
		ch.LTo(&l)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				dst[i*n+j] = l.At(i, j)
			}
		}
	case expr.FnEigvalsh, expr.FnEighVectors:
		var e mat.EigenSym
		if !e.Factorize(lower(), c.Fn == expr.FnEighVectors) {
			return errors.New("eigenvalues did not converge")
		}
		if c.Fn == expr.FnEigvalsh {
			copy(dst, e.Values(nil))
			return nil
		}
		var v mat.Dense
		e.VectorsTo(&v)
		copy(dst, v.RawMatrix().Data)
	case expr.FnPinv, expr.FnMatrixRank:
		var svd mat.SVD
		if !svd.Factorize(a, mat.SVDThin) {
			return errors.New("SVD did not converge")
		}
		s := svd.Values(nil)
		cut := linalg.RankCutoff(m, n, s)
		if c.Fn == expr.FnMatrixRank {
			dst[0] = float64(linalg.Rank(s, cut))
			return nil
		}
		var u, v mat.Dense
		svd.UTo(&u)
		svd.VTo(&v)
		// pinv = V diag(1/s) U^T over the singular values above the cutoff.
		for i := 0; i < n; i++ {
			for j := 0; j < m; j++ {
				var sum float64
				for k, sv := range s {
					if sv > cut {
						sum += v.At(i, k) * u.At(j, k) / sv
					}
				}
				dst[i*m+j] = sum
			}
		}
	case expr.FnSolve:
		k := n - c.N
		sq := a.Slice(0, m, 0, c.N)
		rhs := a.Slice(0, m, c.N, n)
		var x mat.Dense
		if err := singular(x.Solve(sq, rhs)); err != nil {
			return err
		}
		for i := 0; i < m; i++ {
			for j := 0; j < k; j++ {
				dst[i*k+j] = x.At(i, j)
			}
		}
	case expr.FnLstsq:
		k := n - c.N
		var svd mat.SVD
		if !svd.Factorize(a.Slice(0, m, 0, c.N), mat.SVDThin) {
			return errors.New("SVD did not converge")
		}
		s := svd.Values(nil)
		cut := linalg.RankCutoff(m, c.N, s)
		var u, v mat.Dense
		svd.UTo(&u)
		svd.VTo(&v)
		rhs := a.Slice(0, m, c.N, n)
		// x = V diag(1/s) U^T b, the minimum-norm least-squares solution.
		for col := 0; col < k; col++ {
			for q, sv := range s {
				if sv <= cut {
					continue
				}
				var utb float64
				for j := 0; j < m; j++ {
					utb += u.At(j, q) * rhs.At(j, col)
				}
				for i := 0; i < c.N; i++ {
					dst[i*k+col] += v.At(i, q) * utb / sv
				}
			}
		}
	default:
		return fmt.Errorf("unknown matrix function %v", c.Fn)
	}
	return nil
}

// useLAPACK reports whether the matrix functions run on OpenBLAS's LAPACK (it loaded).
func useLAPACK() bool {
	_, ok := Gemm().(*openblas.Kernels)
	return ok
}

// MatrixLibrary names the library the CPU's matrix functions run on: "OpenBLAS 0.3.21
// (LAPACK)" where OpenBLAS loads, else "gonum".
func MatrixLibrary() string {
	if useLAPACK() {
		return openblas.Version() + " (LAPACK)"
	}
	return "gonum"
}

// lapackFn computes one matrix's result into dst (row-major) with OpenBLAS's LAPACK. x is the
// row-major m x n matrix, which it may overwrite; rhs, when not nil, holds the right-hand
// sides of FnSolve and FnLstsq (m x c.RHS, read only), else they are x's columns from c.N on.
func lapackFn(c *plan.CallStep, x, rhs []float64, m, n int, dst []float64) error {
	if m == 0 || n == 0 || (c.Fn == expr.FnSolve || c.Fn == expr.FnLstsq) && c.N == 0 {
		if c.Fn == expr.FnDet || c.Fn == expr.FnSlogdetSign {
			dst[0] = 1
		}
		return nil // empty results; the log of an empty determinant is 0
	}
	eps := math.Nextafter(1, 2) - 1
	var err error
	switch c.Fn {
	case expr.FnInv:
		copy(dst, x)
		err = openblas.Inv(dst, n)
	case expr.FnDet:
		dst[0], err = openblas.Det(x, n)
	case expr.FnSlogdetSign, expr.FnSlogdetLog:
		var sign, logabs float64
		sign, logabs, err = openblas.Slogdet(x, n)
		dst[0] = logabs
		if c.Fn == expr.FnSlogdetSign {
			dst[0] = sign
		}
	case expr.FnCholesky:
		copy(dst, x)
		err = openblas.Cholesky(dst, n)
	case expr.FnEigvalsh:
		err = openblas.Eigh(x, n, dst, nil)
	case expr.FnEighVectors:
		err = openblas.Eigh(x, n, make([]float64, n), dst)
	case expr.FnPinv:
		err = openblas.Pinv(x, m, n, float64(max(m, n))*eps, dst)
	case expr.FnMatrixRank:
		s, e := openblas.SingularValues(x, m, n)
		if err = e; err == nil {
			rank := 0
			for _, v := range s {
				if v > float64(max(m, n))*eps*s[0] {
					rank++
				}
			}
			dst[0] = float64(rank)
		}
	case expr.FnSolve, expr.FnLstsq:
		a, b, k := x, rhs, c.RHS
		if rhs == nil { // [a | b] joined: take them apart
			k = n - c.N
			a, b = make([]float64, m*c.N), make([]float64, m*k)
			for i := 0; i < m; i++ {
				copy(a[i*c.N:(i+1)*c.N], x[i*n:i*n+c.N])
				copy(b[i*k:(i+1)*k], x[i*n+c.N:(i+1)*n])
			}
		}
		if c.Fn == expr.FnLstsq {
			err = openblas.Lstsq(a, m, c.N, b, k, float64(max(m, c.N))*eps, dst)
			break
		}
		copy(dst, b)
		err = openblas.Solve(a, m, dst, k)
	default:
		return fmt.Errorf("unknown matrix function %v", c.Fn)
	}
	if errors.Is(err, openblas.ErrSingular) {
		return errSingular
	}
	return err
}
