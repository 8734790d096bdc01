package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg/openblas"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// applyMatrix runs a matrix function on every matrix of the last two axes of a block, with
// gonum's LAPACK routines, and returns the results in the call's dtype.
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
	x := dtype.Convert(in, dtype.Float64).Float64s()
	var rhs *mat.Dense // right-hand sides given apart (c.RHS): one matrix, m x c.RHS
	if c.RHS > 0 {
		if len(operands) != 1 || batch != 1 || operands[0].Len() != m*c.RHS {
			return dtype.Slice{}, nil, fmt.Errorf("%v: %d right-hand sides of %d rows for a block of shape %v", c.Fn, c.RHS, m, shape)
		}
		if operands[0].DType().Kind() == dtype.KindComplex {
			return dtype.Slice{}, nil, fmt.Errorf("%v of complex right-hand sides is not supported yet", c.Fn)
		}
		rhs = mat.NewDense(m, c.RHS, dtype.Convert(operands[0], dtype.Float64).Float64s())
	}
	y := make([]float64, batch*per)
	defer func() {
		// gonum panics on shapes it does not take; say which matrix instead.
		if p := recover(); p != nil {
			err = fmt.Errorf("%v: %v", c.Fn, p)
		}
	}()
	for b := 0; b < batch; b++ {
		if b&15 == 0 && ctx.Err() != nil {
			return dtype.Slice{}, nil, ctx.Err()
		}
		a := mat.NewDense(max(m, 1), max(n, 1), nil)
		if m > 0 && n > 0 {
			a = mat.NewDense(m, n, x[b*m*n:(b+1)*m*n])
		}
		if err := matrixFn(c, a, rhs, m, n, y[b*per:(b+1)*per]); err != nil {
			if batch > 1 {
				return dtype.Slice{}, nil, fmt.Errorf("%v of matrix %d of %d: %w", c.Fn, b, batch, err)
			}
			return dtype.Slice{}, nil, fmt.Errorf("%v: %w", c.Fn, err)
		}
	}
	res = dtype.OfFloat64(y)
	if c.DType != dtype.Float64 {
		res = dtype.Convert(res, c.DType)
	}
	return res, out, nil
}

// luFn computes the functions of an LU factorization (solve, inverse, determinant) with
// OpenBLAS's LAPACK (dgetrf/dgetrs, as NumPy does) where it loads; handled is false otherwise,
// and gonum computes them. The row-major square part of a is its transpose column-major: its
// LU solves a x = b through dgetrs' transpose flag, and its inverse read row-major is a's.
func luFn(c *plan.CallStep, a *mat.Dense, m, n int, dst []float64) (handled bool, err error) {
	switch c.Fn {
	case expr.FnSolve, expr.FnInv, expr.FnDet, expr.FnSlogdetSign, expr.FnSlogdetLog:
	default:
		return false, nil
	}
	if openblas.Load() != nil {
		return false, nil
	}
	raw := a.RawMatrix()
	k := m
	at := make([]float64, k*k)
	for i := 0; i < k; i++ {
		copy(at[i*k:(i+1)*k], raw.Data[i*raw.Stride:i*raw.Stride+k])
	}
	ipiv, info, err := openblas.Getrf(at, k)
	if err != nil {
		return true, err
	}
	switch c.Fn {
	case expr.FnSolve:
		if info > 0 {
			return true, errSingular
		}
		nrhs := n - c.N
		b := make([]float64, k*nrhs)
		for i := 0; i < k; i++ {
			for j := 0; j < nrhs; j++ {
				b[j*k+i] = raw.Data[i*raw.Stride+c.N+j]
			}
		}
		if err := openblas.Getrs(true, at, k, ipiv, b, nrhs); err != nil {
			return true, err
		}
		for i := 0; i < k; i++ {
			for j := 0; j < nrhs; j++ {
				dst[i*nrhs+j] = b[j*k+i]
			}
		}
	case expr.FnInv:
		if info > 0 {
			return true, errSingular
		}
		for i := 0; i < k; i++ {
			dst[i*k+i] = 1
		}
		return true, openblas.Getrs(false, at, k, ipiv, dst, k)
	default:
		sign, logdet, prod := 1.0, 0.0, 1.0
		for i := 0; i < k; i++ {
			u := at[i*k+i]
			if int(ipiv[i]) != i+1 {
				sign, prod = -sign, -prod
			}
			prod *= u
			if u < 0 {
				sign = -sign
			}
			logdet += math.Log(math.Abs(u))
			if u == 0 {
				sign = 0
			}
		}
		if sign == 0 {
			logdet = math.Inf(-1)
		}
		switch c.Fn {
		case expr.FnDet:
			dst[0] = prod
		case expr.FnSlogdetSign:
			dst[0] = sign
		default:
			dst[0] = logdet
		}
	}
	return true, nil
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
	if handled, err := luFn(c, a, m, n, dst); handled {
		return err
	}
	eps := math.Nextafter(1, 2) - 1
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
		if sign == 0 {
			logdet = math.Inf(-1)
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
		cut := float64(max(m, n)) * eps * s[0]
		if c.Fn == expr.FnMatrixRank {
			rank := 0
			for _, v := range s {
				if v > cut {
					rank++
				}
			}
			dst[0] = float64(rank)
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
		cut := float64(max(m, c.N)) * eps * s[0]
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
