package openblas

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// The matrix functions of the linalg extension (solve, inverse, determinants, Cholesky,
// symmetric eigenproblems, pseudo-inverse, rank, least squares) on one row-major matrix, with
// the LAPACK built into OpenBLAS. As in the block kernels, a row-major matrix is read as the
// column-major transpose in the same memory wherever the routine allows it: the LU of a^T
// serves a (det(a^T) = det(a), inv(a^T) = inv(a)^T, a x = b is the transposed solve of a^T's
// factors), and a Cholesky or eigen routine told to read the upper triangle of a^T reads the
// lower triangle of a. Callers run Load first.

// ErrSingular is returned (wrapped) by Solve and Inv for an exactly singular matrix, as
// NumPy's LinAlgError("Singular matrix").
var ErrSingular = errors.New("singular matrix")

// ErrNotPositiveDefinite is returned by Cholesky for a matrix that is not positive definite.
var ErrNotPositiveDefinite = errors.New("matrix is not positive definite")

// ErrNoConvergence is returned when an iterative routine (eigenvalues, SVD) does not converge.
var ErrNoConvergence = errors.New("did not converge")

// LAPACK calls bound by Load besides those in lib.go (column-major, Fortran calling
// convention: every argument by reference, the lengths of character arguments appended).
var (
	dgetri func(n *int32, a *float64, lda *int32, ipiv *int32, work *float64, lwork, info *int32)
	dpotrf func(uplo *byte, n *int32, a *float64, lda, info *int32, luplo uintptr)
	dsyevd func(jobz, uplo *byte, n *int32, a *float64, lda *int32, w, work *float64, lwork, iwork, liwork, info *int32, ljobz, luplo uintptr)
	dgelsd func(m, n, nrhs *int32, a *float64, lda *int32, b *float64, ldb *int32, s *float64, rcond *float64, rank *int32, work *float64, lwork, iwork, info *int32)
)

// lu factors the row-major n x n matrix a (overwritten) as the LU of a^T (Getrf). info > 0
// says a pivot is exactly zero (a is singular); the factors are complete all the same.
func lu(a []float64, n int) (ipiv []int32, info int32, err error) {
	return Getrf(a, n)
}

// Solve overwrites b (row-major n x nrhs) with the solution x of a x = b, and a (row-major
// n x n) with its LU factors (dgetrf, then dgetrs of the transposed system).
func Solve(a []float64, n int, b []float64, nrhs int) error {
	if n == 0 || nrhs == 0 {
		return nil
	}
	ipiv, info, err := lu(a, n)
	if err != nil {
		return err
	}
	if info > 0 {
		return ErrSingular
	}
	// Row-major b is column-major b^T: one right-hand side is already in place, more are
	// transposed into a column-major copy and back.
	cm := b
	if nrhs > 1 {
		cm = make([]float64, n*nrhs)
		transpose(cm, b, n, nrhs)
	}
	trans := byte('T')
	N, NRHS := int32(n), int32(nrhs)
	dgetrs(&trans, &N, &NRHS, &a[0], &N, &ipiv[0], &cm[0], &N, &info, 1)
	if info != 0 {
		return fmt.Errorf("dgetrs: argument %d invalid", -info)
	}
	if nrhs > 1 {
		transpose(b, cm, nrhs, n)
	}
	return nil
}

// transpose writes the transpose of the row-major r x c matrix src into dst (c x r).
func transpose(dst, src []float64, r, c int) {
	const blk = 64
	for i0 := 0; i0 < r; i0 += blk {
		for j0 := 0; j0 < c; j0 += blk {
			for i := i0; i < min(i0+blk, r); i++ {
				for j := j0; j < min(j0+blk, c); j++ {
					dst[j*r+i] = src[i*c+j]
				}
			}
		}
	}
}

// Inv overwrites the row-major n x n matrix a with its inverse (dgetrf and dgetri of a^T,
// whose inverse is inv(a)^T: inv(a) in row-major order, in place).
func Inv(a []float64, n int) error {
	if n == 0 {
		return nil
	}
	ipiv, info, err := lu(a, n)
	if err != nil {
		return err
	}
	if info > 0 {
		return ErrSingular
	}
	N := int32(n)
	return lapackCall("dgetri", func(work *float64, lwork, info *int32) {
		dgetri(&N, &a[0], &N, &ipiv[0], work, lwork, info)
	})
}

// Slogdet returns the sign and the natural log of |det(a)| of the row-major n x n matrix a
// (overwritten with its LU factors): (0, -Inf) for an exactly singular a, as NumPy.
func Slogdet(a []float64, n int) (sign, logabs float64, err error) {
	if n == 0 {
		return 1, 0, nil
	}
	ipiv, info, err := lu(a, n)
	if err != nil {
		return 0, 0, err
	}
	if info > 0 {
		return 0, math.Inf(-1), nil
	}
	sign = 1
	for i := 0; i < n; i++ {
		d := a[i*n+i]
		if ipiv[i] != int32(i+1) {
			sign = -sign
		}
		if d < 0 {
			sign = -sign
		}
		logabs += math.Log(math.Abs(d))
	}
	return sign, logabs, nil
}

// Det returns the determinant of the row-major n x n matrix a (overwritten), as NumPy forms it
// from the LU factors: sign * exp(log|det|).
func Det(a []float64, n int) (float64, error) {
	sign, logabs, err := Slogdet(a, n)
	if err != nil || sign == 0 {
		return 0, err
	}
	return sign * math.Exp(logabs), nil
}

// Cholesky overwrites the row-major n x n matrix a with its lower Cholesky factor L (a = L L^T;
// the lower triangle of a is read, the upper one set to zero), with dpotrf on the upper
// triangle of a^T.
func Cholesky(a []float64, n int) error {
	if n == 0 {
		return nil
	}
	uplo := byte('U')
	N := int32(n)
	var info int32
	dpotrf(&uplo, &N, &a[0], &N, &info, 1)
	switch {
	case info > 0:
		return ErrNotPositiveDefinite
	case info < 0:
		return fmt.Errorf("dpotrf: argument %d invalid", -info)
	}
	for i := 0; i < n; i++ {
		clear(a[i*n+i+1 : (i+1)*n])
	}
	return nil
}

// Eigh computes the eigenvalues of the symmetric row-major n x n matrix a (its lower triangle
// is read) into w, ascending, with dsyevd (divide and conquer, as NumPy's eigh). With vectors,
// vecs (row-major n x n) receives the eigenvectors as columns; a is overwritten either way.
func Eigh(a []float64, n int, w []float64, vecs []float64) error {
	if n == 0 {
		return nil
	}
	jobz, uplo := byte('N'), byte('U')
	if vecs != nil {
		jobz = 'V'
	}
	N := int32(n)
	var info int32
	work, iwork := []float64{0}, []int32{0}
	lwork, liwork := int32(-1), int32(-1)
	dsyevd(&jobz, &uplo, &N, &a[0], &N, &w[0], &work[0], &lwork, &iwork[0], &liwork, &info, 1, 1)
	if info != 0 {
		return fmt.Errorf("dsyevd workspace query: info %d", info)
	}
	work, iwork = make([]float64, max(1, int(work[0]))), make([]int32, max(1, int(iwork[0])))
	lwork, liwork = int32(len(work)), int32(len(iwork))
	dsyevd(&jobz, &uplo, &N, &a[0], &N, &w[0], &work[0], &lwork, &iwork[0], &liwork, &info, 1, 1)
	switch {
	case info > 0:
		return fmt.Errorf("eigenvalues %w (dsyevd info %d)", ErrNoConvergence, info)
	case info < 0:
		return fmt.Errorf("dsyevd: argument %d invalid", -info)
	}
	if vecs != nil {
		// Column-major eigenvectors: vector k is a[k*n : (k+1)*n], column k of the result.
		transpose(vecs, a, n, n)
	}
	return nil
}

// SingularValues returns the singular values of the row-major m x n matrix a, descending
// (dgesdd without vectors on a copy).
func SingularValues(a []float64, m, n int) ([]float64, error) {
	k := min(m, n)
	s := make([]float64, k)
	if k == 0 {
		return s, nil
	}
	x := append([]float64(nil), a...)
	jobz := byte('N')
	M, N, lda, one := int32(n), int32(m), int32(n), int32(1)
	iwork := make([]int32, 8*k)
	var dummy float64
	err := lapackCall("dgesdd", func(work *float64, lwork, info *int32) {
		dgesdd(&jobz, &M, &N, &x[0], &lda, &s[0], &dummy, &one, &dummy, &one, work, lwork, &iwork[0], info, 1)
	})
	if err != nil {
		return nil, fmt.Errorf("singular values: %w", err)
	}
	return s, nil
}

// Pinv writes the pseudo-inverse of the row-major m x n matrix a into dst (row-major n x m):
// V diag(1/s) U^T over the singular values above rtol times the largest (dgesdd, then one
// dgemm).
func Pinv(a []float64, m, n int, rtol float64, dst []float64) error {
	k := min(m, n)
	if k == 0 {
		return nil
	}
	u, s, vt, err := (&Kernels{}).SVD(linalg.Mat{Rows: m, Cols: n, Data: a})
	if err != nil {
		return err
	}
	cut := rtol * s[0]
	for q, sv := range s {
		row := vt.Data[q*n : (q+1)*n]
		if sv <= cut {
			clear(row)
			continue
		}
		for j := range row {
			row[j] /= sv
		}
	}
	// dst = vt^T (n x k) * u^T (k x m).
	cblasDgemm(cblasRowMajor, cblasTrans, cblasTrans, int32(n), int32(m), int32(k), 1, &vt.Data[0], int32(n), &u.Data[0], int32(k), 0, &dst[0], int32(m))
	return nil
}

// Lstsq writes the least-squares solution of a x = b of least norm (a row-major m x n, b
// row-major m x nrhs) into dst (row-major n x nrhs), dropping the singular values below rcond
// times the largest, with dgelsd (SVD by divide and conquer, as numpy.linalg.lstsq).
func Lstsq(a []float64, m, n int, b []float64, nrhs int, rcond float64, dst []float64) error {
	if m == 0 || n == 0 || nrhs == 0 {
		clear(dst)
		return nil
	}
	ca := make([]float64, m*n) // column-major a
	transpose(ca, a, m, n)
	ldb := max(m, n)
	cb := make([]float64, ldb*nrhs) // column-major b, room for x
	for i := 0; i < m; i++ {
		for j := 0; j < nrhs; j++ {
			cb[j*ldb+i] = b[i*nrhs+j]
		}
	}
	s := make([]float64, min(m, n))
	M, N, NRHS, lda, LDB := int32(m), int32(n), int32(nrhs), int32(m), int32(ldb)
	var rank int32
	// dgelsd's integer workspace is not part of its workspace query in every LAPACK: size it
	// as its documentation says (3*min*nlvl + 11*min, nlvl at most about log2(min)+1).
	mn := min(m, n)
	nlvl := max(0, int(math.Log2(float64(mn)/26))+1)
	iwork := make([]int32, max(1, 3*mn*nlvl+11*mn))
	err := lapackCall("dgelsd", func(work *float64, lwork, info *int32) {
		dgelsd(&M, &N, &NRHS, &ca[0], &lda, &cb[0], &LDB, &s[0], &rcond, &rank, work, lwork, &iwork[0], info)
	})
	if err != nil {
		return fmt.Errorf("least squares: %w", err)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < nrhs; j++ {
			dst[i*nrhs+j] = cb[j*ldb+i]
		}
	}
	return nil
}
