package blas

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// A program that imports this package runs the matrix functions of planned library calls
// (Inv, Det, Slogdet, Cholesky, Eigh, Eigvalsh, Pinv, MatrixRank, Solve, Lstsq) on GPUs with
// cuSOLVER; without the libraries, cuda.Runs says why and they run on the CPU.
func init() {
	cuda.RegisterLibrary("cuSOLVER", RunMatrix, RunMatrixOnDevice, Load, func(fn expr.CallFn) bool { return fn.Matrix() })
	cuda.RegisterKeep("cuSOLVER", RunMatrixKeep, matrixKeepRule)
}

// The matrices of a block are row-major; cuSOLVER reads column-major. A row-major m x n
// matrix is the column-major n x m transpose, so the routines below work on transposes where
// that gives the result directly (an LU of a^T solves a x = b with getrs' transpose flag, and
// the lower triangle of a symmetric row-major matrix is the upper one of its column-major
// view), and transpose on the host only the small right-hand sides and eigenvectors.

const (
	eigNoVectors int32 = 0 // CUSOLVER_EIG_MODE_NOVECTOR
	eigVectors   int32 = 1 // CUSOLVER_EIG_MODE_VECTOR
)

// errSingular is the error of a solve or inverse of an exactly singular matrix, as NumPy's
// LinAlgError("Singular matrix") and the CPU's.
var errSingular = errors.New("singular matrix")

// RunMatrix computes a matrix function of every matrix in the last two axes of a block
// (row-major, shape, in host memory) on device d with cuSOLVER and cuBLAS, as package cpu
// does with gonum: values in float64, results in the call's dtype. It registers as the matrix
// functions' cuda.CallRunner. operands hold the right-hand sides of a solve or least squares
// given apart (c.RHS), row-major.
func RunMatrix(ctx context.Context, d *cuda.Device, c *plan.CallStep, in dtype.Slice, shape []int, operands []dtype.Slice) (dtype.Slice, []int, error) {
	if in.DType().Kind() == dtype.KindComplex {
		return dtype.Slice{}, nil, fmt.Errorf("%v of complex matrices is not supported yet", c.Fn)
	}
	x := dtype.Convert(in, dtype.Float64).Float64s()
	if len(x) != prod(shape) {
		return dtype.Slice{}, nil, fmt.Errorf("%v: %d values for a block of shape %s", c.Fn, len(x), expr.ShapeString(shape))
	}
	return runMatrix(ctx, d, c, shape, cuda.OnHost(operands), func(mm *mem) (devPtr, error) { return mm.upload(x) })
}

// RunMatrixOnDevice is RunMatrix for a block already in d's memory (float64 elements,
// row-major; the fused values of a matrix call are float64 whatever the array's dtype), as a
// fused kernel left it: nothing crosses to the host but the results. It may overwrite the
// block.
func RunMatrixOnDevice(ctx context.Context, d *cuda.Device, c *plan.CallStep, in driver.DevicePtr, _ dtype.DType, shape []int, operands []cuda.Operand) (dtype.Slice, []int, error) {
	return runMatrix(ctx, d, c, shape, operands, func(*mem) (devPtr, error) { return in, nil })
}

func prod(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// runMatrix runs c on each matrix of the block that src places on the device.
func runMatrix(ctx context.Context, d *cuda.Device, c *plan.CallStep, shape []int, operands []cuda.Operand, src func(*mem) (devPtr, error)) (dtype.Slice, []int, error) {
	if !c.Fn.Matrix() {
		return dtype.Slice{}, nil, fmt.Errorf("cuSOLVER: %v is not a matrix function", c.Fn)
	}
	k, err := New(d.Info.Index)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	r := len(shape)
	if r < 2 {
		return dtype.Slice{}, nil, fmt.Errorf("%v: a block of shape %s is not a matrix", c.Fn, expr.ShapeString(shape))
	}
	m, n := shape[r-2], shape[r-1]
	batch := prod(shape[:r-2])
	out := c.OutShape(shape)
	per := prod(out[r-2:])
	var rhs sides // right-hand sides given apart: row-major m x c.RHS
	if c.RHS > 0 {
		if len(operands) != 1 || batch != 1 || operands[0].Len() != m*c.RHS {
			return dtype.Slice{}, nil, fmt.Errorf("%v: %d right-hand sides of %d rows for a block of shape %s", c.Fn, c.RHS, m, expr.ShapeString(shape))
		}
		if operands[0].DType.Kind() == dtype.KindComplex {
			return dtype.Slice{}, nil, fmt.Errorf("%v of complex right-hand sides is not supported yet", c.Fn)
		}
		if rhs.dev = devPtr(operands[0].Dev); rhs.dev == 0 {
			rhs.host = dtype.Convert(operands[0].Host, dtype.Float64).Float64s()
		}
	}
	y := make([]float64, batch*per)
	err = k.doCtx(ctx, func(mm *mem) error {
		x, err := src(mm)
		if err != nil {
			return err
		}
		if batchedLU(c, batch, m, n, rhs.host) && !rhs.given() {
			if err := k.luBatch(mm, c, x, batch, m, n, y); err != nil {
				return fmt.Errorf("%v: %w", c.Fn, err)
			}
			return nil
		}
		if batchedSVD(c, batch, m, n, rhs.host) && !rhs.given() {
			if err := k.svdBatch(mm, c, x, batch, m, n, y); err != nil {
				return fmt.Errorf("%v: %w", c.Fn, err)
			}
			return nil
		}
		if batchedEigh(c, batch, m, n) {
			if err := k.eighBatch(mm, x, batch, n, c.Fn == expr.FnEighVectors, y); err != nil {
				return fmt.Errorf("%v: %w", c.Fn, err)
			}
			return nil
		}
		for b := 0; b < batch; b++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := k.matrixFn(mm, c, x+devPtr(b*m*n*8), rhs, m, n, y[b*per:(b+1)*per]); err != nil {
				if batch > 1 {
					return fmt.Errorf("%v of matrix %d of %d: %w", c.Fn, b, batch, err)
				}
				return fmt.Errorf("%v: %w", c.Fn, err)
			}
		}
		return nil
	})
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	res := dtype.OfFloat64(y)
	if c.DType != dtype.Float64 {
		res = dtype.Convert(res, c.DType)
	}
	return res, out, nil
}

// sides are the right-hand sides of a solve or least squares given apart (c.RHS columns,
// row-major): in host memory, or on the device (a copy of an operand held there, which the
// solvers only read).
type sides struct {
	host []float64
	dev  devPtr
}

func (s sides) given() bool { return s.host != nil || s.dev != 0 }

// matrixFn computes one row-major m x n matrix's result (the matrix at a on the device, which
// it may overwrite) into dst (row-major). rhs, when given, holds the right-hand sides of a
// solve or least squares; else they are a's columns from c.N on.
func (k *Kernels) matrixFn(mm *mem, c *plan.CallStep, a devPtr, rhs sides, m, n int, dst []float64) error {
	if m == 0 || n == 0 {
		if c.Fn == expr.FnDet || c.Fn == expr.FnSlogdetSign {
			dst[0] = 1
		}
		return nil // empty results, as on the CPU
	}
	switch c.Fn {
	case expr.FnCholesky:
		return k.cholesky(mm, a, n, dst)
	case expr.FnInv:
		return k.inv(mm, a, n, dst)
	case expr.FnDet, expr.FnSlogdetSign, expr.FnSlogdetLog:
		return k.det(mm, c.Fn, a, n, dst)
	case expr.FnSolve:
		if rhs.given() {
			return k.solveRHS(mm, a, n, rhs, c.RHS, dst)
		}
		return k.solve(mm, a, m, n-c.N, dst)
	case expr.FnEigvalsh, expr.FnEighVectors:
		return k.eigh(mm, a, n, c.Fn == expr.FnEighVectors, dst)
	case expr.FnPinv, expr.FnMatrixRank, expr.FnLstsq:
		return k.svdFn(mm, c, a, rhs, m, n, dst)
	}
	return fmt.Errorf("unknown matrix function %v", c.Fn)
}

// doCtx is do with the caller's context: a cancelled computation does not queue device work.
func (k *Kernels) doCtx(ctx context.Context, fn func(m *mem) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return k.do(fn)
}

// readInt32s waits for the stream's work and copies len(dst) int32 values from p.
func (m *mem) readInt32s(dst []int32, p devPtr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := driver.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), p, uint64(len(dst))*4, m.s); err != nil {
		return err
	}
	return m.s.Synchronize()
}

// info reads a cuSOLVER info value: negative is a bad argument (a bug here), positive is the
// routine's own failure, which the caller names.
func (m *mem) info(call string, p devPtr) (int32, error) {
	v := make([]int32, 1)
	if err := m.readInt32s(v, p); err != nil {
		return 0, err
	}
	if v[0] < 0 {
		return 0, fmt.Errorf("%s: argument %d is invalid", call, -v[0])
	}
	return v[0], nil
}

// getrf LU-factors the column-major n x n matrix at a (leading dimension lda) in place and
// returns the pivots and info (positive: U's diagonal has an exact zero).
func (k *Kernels) getrf(mm *mem, n int, a devPtr, lda int) (ipiv devPtr, info int32, err error) {
	var lwork int32
	if err := check("cusolverDnDgetrf_bufferSize", cusolverDgetrfBuf(k.cusolver, int32(n), int32(n), a, int32(lda), &lwork)); err != nil {
		return 0, 0, err
	}
	b, err := mm.allocs(int(lwork), (n+1)/2, 1) // work, int32 pivots, info
	if err != nil {
		return 0, 0, err
	}
	if err := check("cusolverDnDgetrf", cusolverDgetrf(k.cusolver, int32(n), int32(n), a, int32(lda), b[0], b[1], b[2])); err != nil {
		return 0, 0, err
	}
	info, err = mm.info("cusolverDnDgetrf", b[2])
	return b[1], info, err
}

// getrs solves op(A) X = B for the n x nrhs column-major B in place, with getrf's factors.
func (k *Kernels) getrs(mm *mem, trans operator, n, nrhs int, a devPtr, lda int, ipiv, b devPtr) error {
	info, err := mm.alloc(1)
	if err != nil {
		return err
	}
	if err := check("cusolverDnDgetrs", cusolverDgetrs(k.cusolver, trans, int32(n), int32(nrhs), a, int32(lda), ipiv, b, int32(n), info)); err != nil {
		return err
	}
	_, err = mm.info("cusolverDnDgetrs", info)
	return err
}

// cholesky: the lower triangle of row-major a is the upper one of its column-major view, whose
// factor U (a = U^T U) read row-major is L.
func (k *Kernels) cholesky(mm *mem, a devPtr, n int, dst []float64) error {
	if err := k.potrf(mm, a, n); err != nil {
		return err
	}
	if err := mm.download(dst, a); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		clear(dst[i*n+i+1 : (i+1)*n]) // potrf leaves the other triangle as it was
	}
	return nil
}

// potrf factors the upper triangle of a's column-major n x n view in place (cholesky).
func (k *Kernels) potrf(mm *mem, a devPtr, n int) error {
	var lwork int32
	if err := check("cusolverDnDpotrf_bufferSize", cusolverDpotrfBuf(k.cusolver, fillUpper, int32(n), a, int32(n), &lwork)); err != nil {
		return err
	}
	b, err := mm.allocs(int(lwork), 1)
	if err != nil {
		return err
	}
	if err := check("cusolverDnDpotrf", cusolverDpotrf(k.cusolver, fillUpper, int32(n), a, int32(n), b[0], lwork, b[1])); err != nil {
		return err
	}
	info, err := mm.info("cusolverDnDpotrf", b[1])
	if err != nil {
		return err
	}
	if info > 0 {
		return fmt.Errorf("matrix is not positive definite (leading minor %d)", info)
	}
	return nil
}

// inv: with a^T = P L U (getrf of the column-major view), getrs solves a^T Y = I; Y = a^-T
// column-major is a^-1 row-major.
func (k *Kernels) inv(mm *mem, a devPtr, n int, dst []float64) error {
	eye := make([]float64, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = 1
	}
	y, err := mm.upload(eye)
	if err != nil {
		return err
	}
	ipiv, info, err := k.getrf(mm, n, a, n)
	if err != nil {
		return err
	}
	if info > 0 {
		return errSingular
	}
	if err := k.getrs(mm, opN, n, n, a, n, ipiv, y); err != nil {
		return err
	}
	return mm.download(dst, y)
}

// det reads the determinant from the LU of a^T (det a^T = det a): the product of U's diagonal,
// negated for every row swap.
func (k *Kernels) det(mm *mem, fn expr.CallFn, a devPtr, n int, dst []float64) error {
	diag := make([]float64, n)
	piv := make([]int32, n)
	ipiv, _, err := k.getrf(mm, n, a, n) // info > 0 is a zero on the diagonal: det 0
	if err != nil {
		return err
	}
	dd, err := mm.alloc(n)
	if err != nil {
		return err
	}
	if err := check("cublasDcopy", cublasDcopy(k.cublas, int32(n), a, int32(n+1), dd, 1)); err != nil {
		return err
	}
	if err := mm.download(diag, dd); err != nil {
		return err
	}
	if err := mm.readInt32s(piv, ipiv); err != nil {
		return err
	}
	dst[0] = luDet(fn, diag, piv)
	return nil
}

// luDet is fn (Det, or Slogdet's sign or log) of a matrix from its LU factors: U's diagonal and
// getrf's 1-based pivots. The determinant is the diagonal's product, negated for every row swap.
func luDet(fn expr.CallFn, diag []float64, piv []int32) float64 {
	sign, logdet, prod := 1.0, 0.0, 1.0
	for i, u := range diag {
		if int(piv[i]) != i+1 {
			sign, prod = -sign, -prod
		}
		prod *= u
		if u < 0 {
			sign = -sign
		}
		logdet += math.Log(math.Abs(u))
	}
	if slices.Contains(diag, 0) {
		sign, logdet = 0, math.Inf(-1)
	}
	switch fn {
	case expr.FnDet:
		return prod
	case expr.FnSlogdetSign:
		return sign
	}
	return logdet
}

// solve: a is row-major [A | B] with A n x n and B n x nrhs. The column-major view of the
// block with leading dimension n+nrhs starts with A^T, factored in place; B's columns are
// gathered into a column-major n x nrhs matrix (strided copies), and getrs with the transpose
// flag solves A X = B there.
func (k *Kernels) solve(mm *mem, a devPtr, n, nrhs int, dst []float64) error {
	ld := n + nrhs
	bc, err := mm.alloc(n * nrhs)
	if err != nil {
		return err
	}
	for j := 0; j < nrhs; j++ {
		if err := check("cublasDcopy", cublasDcopy(k.cublas, int32(n), a+devPtr((n+j)*8), int32(ld), bc+devPtr(j*n*8), 1)); err != nil {
			return err
		}
	}
	return k.luSolve(mm, a, ld, n, bc, nrhs, dst)
}

// solveRHS is solve with A alone at a (n x n, leading dimension n) and B (n x nrhs,
// row-major) in host memory, moved to column-major there, or on the device, transposed into a
// column-major copy there (cublasDgeam: exact).
func (k *Kernels) solveRHS(mm *mem, a devPtr, n int, rhs sides, nrhs int, dst []float64) error {
	if rhs.dev != 0 {
		db, err := mm.alloc(n * nrhs)
		if err != nil {
			return err
		}
		one, zero := 1.0, 0.0
		if err := check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(n), int32(nrhs), &one, rhs.dev, int32(nrhs), &zero, db, int32(n), db, int32(n))); err != nil {
			return err
		}
		return k.luSolve(mm, a, n, n, db, nrhs, dst)
	}
	b := rhs.host
	bc := b
	if nrhs > 1 {
		bc = make([]float64, n*nrhs)
		for i := 0; i < n; i++ {
			for j := 0; j < nrhs; j++ {
				bc[j*n+i] = b[i*nrhs+j]
			}
		}
	}
	db, err := mm.upload(bc)
	if err != nil {
		return err
	}
	return k.luSolve(mm, a, n, n, db, nrhs, dst)
}

// luSolve factors the column-major view of A (n x n at a, leading dimension lda: A^T) and
// solves A X = B with getrs' transpose flag, B being column-major n x nrhs at b; X goes to
// dst row-major.
func (k *Kernels) luSolve(mm *mem, a devPtr, lda, n int, b devPtr, nrhs int, dst []float64) error {
	ipiv, info, err := k.getrf(mm, n, a, lda)
	if err != nil {
		return err
	}
	if info > 0 {
		return errSingular
	}
	if err := k.getrs(mm, opT, n, nrhs, a, lda, ipiv, b); err != nil {
		return err
	}
	if nrhs == 1 {
		return mm.download(dst, b)
	}
	x := make([]float64, n*nrhs)
	if err := mm.download(x, b); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		for j := 0; j < nrhs; j++ {
			dst[i*nrhs+j] = x[j*n+i]
		}
	}
	return nil
}

// eigh: syevd of the column-major view's upper triangle (the row-major lower one). The
// eigenvectors come back as the view's columns, so they are transposed into dst's columns.
func (k *Kernels) eigh(mm *mem, a devPtr, n int, vectors bool, dst []float64) error {
	dw, err := k.syevd(mm, a, n, vectors)
	if err != nil {
		return err
	}
	if !vectors {
		return mm.download(dst, dw)
	}
	v := make([]float64, n*n)
	if err := mm.download(v, a); err != nil {
		return err
	}
	linalg.Mat{Rows: n, Cols: n, Data: v}.TransposeInto(linalg.Mat{Rows: n, Cols: n, Data: dst})
	return nil
}

// syevd computes the eigenvalues (returned, on the device) and with vectors the eigenvectors
// (in place of a's column-major view, as its columns) of the view's upper triangle.
func (k *Kernels) syevd(mm *mem, a devPtr, n int, vectors bool) (devPtr, error) {
	jobz := eigNoVectors
	if vectors {
		jobz = eigVectors
	}
	dw, err := mm.alloc(n)
	if err != nil {
		return 0, err
	}
	var lwork int32
	if err := check("cusolverDnDsyevd_bufferSize", cusolverDsyevdBuf(k.cusolver, jobz, fillUpper, int32(n), a, int32(n), dw, &lwork)); err != nil {
		return 0, err
	}
	b, err := mm.allocs(int(lwork), 1)
	if err != nil {
		return 0, err
	}
	if err := check("cusolverDnDsyevd", cusolverDsyevd(k.cusolver, jobz, fillUpper, int32(n), a, int32(n), dw, b[0], lwork, b[1])); err != nil {
		return 0, err
	}
	info, err := mm.info("cusolverDnDsyevd", b[1])
	if err != nil {
		return 0, err
	}
	if info > 0 {
		return 0, errors.New("eigenvalues did not converge")
	}
	return dw, nil
}

// svdFn computes Pinv, MatrixRank and Lstsq from cusolverDnDgesvd, which takes column-major
// p x q matrices with p >= q: the row-major m x N matrix A's view A^T when N >= m, else A
// transposed on the device (cublasDgeam). The pseudo-inverse is formed on the device with one
// GEMM from U, the cut singular values and V^T; Lstsq multiplies it with b (a second GEMM).
func (k *Kernels) svdFn(mm *mem, c *plan.CallStep, a devPtr, rhs sides, m, n int, dst []float64) error {
	return k.svdFnInto(mm, c, a, rhs, m, n, dst, 0)
}

// svdFnInto is svdFn writing Pinv's and Lstsq's result into the device buffer into (row-major)
// instead of dst, where into is not 0.
func (k *Kernels) svdFnInto(mm *mem, c *plan.CallStep, a devPtr, rhs sides, m, n int, dst []float64, into devPtr) error {
	cols, nrhs := n, 0 // A's columns; right-hand sides
	if c.Fn == expr.FnLstsq {
		cols, nrhs = c.N, n-c.N
		if rhs.given() {
			nrhs = c.RHS
		}
	}
	wide := cols >= m // the view of A is A^T, cols x m, p >= q
	p, q := m, cols
	if wide {
		p, q = cols, m
	}
	g, err := mm.alloc(p * q) // column-major p x q
	if err != nil {
		return err
	}
	one, zero := 1.0, 0.0
	if wide { // A^T: the view's first cols rows (leading dimension n)
		err = check("cublasDgeam", cublasDgeam(k.cublas, opN, opN, int32(cols), int32(m), &one, a, int32(n), &zero, g, int32(cols), g, int32(cols)))
	} else { // A: the transpose of the view
		err = check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(m), int32(cols), &one, a, int32(n), &zero, g, int32(m), g, int32(m)))
	}
	if err != nil {
		return err
	}
	var bt devPtr // b row-major m x nrhs: column-major b^T, nrhs x m
	if rhs.dev != 0 {
		bt = rhs.dev // read only
	} else if rhs.host != nil {
		if bt, err = mm.upload(rhs.host); err != nil {
			return err
		}
	} else if nrhs > 0 {
		if bt, err = mm.alloc(m * nrhs); err != nil {
			return err
		}
		if err := check("cublasDgeam", cublasDgeam(k.cublas, opN, opN, int32(nrhs), int32(m), &one, a+devPtr(cols*8), int32(n), &zero, bt, int32(nrhs), bt, int32(nrhs))); err != nil {
			return err
		}
	}
	job := int8('S')
	if c.Fn == expr.FnMatrixRank {
		job = 'N'
	}
	var lwork int32
	if err := check("cusolverDnDgesvd_bufferSize", cusolverDgesvdBuf(k.cusolver, int32(p), int32(q), &lwork)); err != nil {
		return err
	}
	b, err := mm.allocs(q, p*q, q*q, int(lwork), 1) // S, U, V^T, work, info
	if err != nil {
		return err
	}
	ds, du, dvt := b[0], b[1], b[2]
	if err := check("cusolverDnDgesvd", cusolverDgesvd(k.cusolver, job, job, int32(p), int32(q), g, int32(p), ds, du, int32(p), dvt, int32(q), b[3], lwork, 0, b[4])); err != nil {
		return err
	}
	info, err := mm.info("cusolverDnDgesvd", b[4])
	if err != nil {
		return err
	}
	if info > 0 {
		return errors.New("SVD did not converge")
	}
	s := make([]float64, q)
	if err := mm.download(s, ds); err != nil {
		return err
	}
	cut := linalg.RankCutoff(m, cols, s)
	if c.Fn == expr.FnMatrixRank {
		dst[0] = float64(linalg.Rank(s, cut))
		return nil
	}
	// V^T's rows scaled by the inverted singular values above the cutoff (0 below), on the
	// device (cublasDdgmm: diag(S+) V^T in place; only the q values of S+ cross).
	inv := make([]float64, q)
	for i, v := range s {
		if v > cut {
			inv[i] = 1 / v
		}
	}
	dinv, err := mm.upload(inv)
	if err != nil {
		return err
	}
	if err := check("cublasDdgmm", cublasDdgmm(k.cublas, sideLeft, int32(q), int32(q), dvt, int32(q), dinv, 1, dvt, int32(q))); err != nil {
		return err
	}
	// pinv(A)^T, column-major m x cols (pinv(A) row-major): U S+ V^T when A was transposed
	// (p = m), else (S+ V^T)^T U^T.
	pt := into
	if c.Fn != expr.FnPinv || into == 0 {
		if pt, err = mm.alloc(m * cols); err != nil {
			return err
		}
	}
	if wide {
		err = check("cublasDgemm", cublasDgemm(k.cublas, opT, opT, int32(q), int32(p), int32(q), &one, dvt, int32(q), du, int32(p), &zero, pt, int32(q)))
	} else {
		err = check("cublasDgemm", cublasDgemm(k.cublas, opN, opN, int32(p), int32(q), int32(q), &one, du, int32(p), dvt, int32(q), &zero, pt, int32(p)))
	}
	if err != nil {
		return err
	}
	if c.Fn == expr.FnPinv {
		if into != 0 {
			return nil
		}
		return mm.download(dst, pt)
	}
	if nrhs == 0 {
		return nil
	}
	// x^T (nrhs x cols, column-major; x row-major) = b^T pinv(A)^T.
	xt := into
	if into == 0 {
		if xt, err = mm.alloc(nrhs * cols); err != nil {
			return err
		}
	}
	if err := check("cublasDgemm", cublasDgemm(k.cublas, opN, opN, int32(nrhs), int32(cols), int32(m), &one, bt, int32(nrhs), pt, int32(m), &zero, xt, int32(nrhs))); err != nil {
		return err
	}
	if into != 0 {
		return nil
	}
	return mm.download(dst, xt)
}
