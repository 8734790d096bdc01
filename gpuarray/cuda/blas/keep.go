package blas

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Matrix results left on the device (issue 32): the inverse and the solution of a solve are
// written by cuSOLVER into device memory, in the row-major float64 words a fused kernel reads,
// so that later stages read them in place instead of from host memory.

// matrixKeepRule is RunMatrixKeep's rule (cuda.KeepRule): the matrix functions of real
// matrices giving float64 stay on the device (inverse, solve, Cholesky factor, determinant and
// slogdet, eigenvalues and eigenvectors, pseudo-inverse, least squares; a determinant of one
// matrix is one value, which the planning brings to the host as any scalar result); a matrix
// rank (one count, read from the singular values on the host) comes to the host.
func matrixKeepRule(c *plan.CallStep, dt dtype.DType) string {
	switch {
	case !c.Fn.Matrix():
		return fmt.Sprintf("%v is not a matrix function", c.Fn)
	case c.Fn == expr.FnMatrixRank:
		return fmt.Sprintf("%v: one count, read from the singular values, comes to the host", c.Fn)
	case dt.Kind() == dtype.KindComplex:
		return fmt.Sprintf("%v of complex matrices runs on the host", c.Fn)
	case c.DType != dtype.Float64:
		return fmt.Sprintf("%v giving %v: cuSOLVER writes float64, rounded on the host", c.Fn, c.DType)
	}
	return ""
}

// RunMatrixKeep is RunMatrixOnDevice leaving the result on d (cuda.KeepCallRunner): the
// result of one matrix (the inverse; the solution of a solve or least squares, its right-hand
// sides the block's columns from c.N on, or given apart in operands; the other functions of
// matrixKeepRule), written into a buffer of d's pool row-major.
// A batch of matrices, an empty one, or a call the rule refuses is ErrNotKept.
func RunMatrixKeep(ctx context.Context, d *cuda.Device, c *plan.CallStep, in driver.DevicePtr, dt dtype.DType, shape []int, operands []cuda.Operand) (cuda.KeptCall, error) {
	notKept := func(why string) (cuda.KeptCall, error) {
		return cuda.KeptCall{}, fmt.Errorf("cuSOLVER: %w: %s", cuda.ErrNotKept, why)
	}
	if why := matrixKeepRule(c, dt); why != "" {
		return notKept(why)
	}
	if len(shape) != 2 {
		return notKept(fmt.Sprintf("%v of a block of shape %s (a batch of matrices) comes to the host", c.Fn, expr.ShapeString(shape)))
	}
	m, n := shape[0], shape[1]
	out := c.OutShape(shape)
	per := prod(out)
	if m == 0 || n == 0 || per == 0 {
		return notKept("an empty matrix")
	}
	var rhs sides
	if c.RHS > 0 {
		if len(operands) != 1 || operands[0].Len() != m*c.RHS {
			return cuda.KeptCall{}, fmt.Errorf("%v: %d right-hand sides of %d rows for a block of shape %s", c.Fn, c.RHS, m, expr.ShapeString(shape))
		}
		if operands[0].DType.Kind() == dtype.KindComplex {
			return notKept("complex right-hand sides run on the host")
		}
		if rhs.dev = devPtr(operands[0].Dev); rhs.dev == 0 {
			rhs.host = dtype.Convert(operands[0].Host, dtype.Float64).Float64s()
		}
	}
	k, err := New(d.Info.Index)
	if err != nil {
		return cuda.KeptCall{}, err
	}
	if k.dev != d {
		return notKept("the device's cuSOLVER handle belongs to another device object")
	}
	var res driver.DevicePtr
	err = k.doCtx(ctx, func(mm *mem) error {
		var err error
		if res, err = d.Pool().Alloc(uint64(per) * 8); err != nil {
			return fmt.Errorf("%v: result buffer: %w", c.Fn, err)
		}
		a := devPtr(in)
		switch c.Fn {
		case expr.FnInv:
			return k.invInto(mm, a, n, devPtr(res))
		case expr.FnSolve:
			return k.solveInto(mm, c, a, rhs, m, n, devPtr(res))
		}
		return k.matrixFnInto(mm, c, a, rhs, m, n, devPtr(res))
	})
	if err != nil {
		if res != 0 {
			_ = d.Do(context.Background(), func() error { d.Pool().Free(res); return nil })
		}
		return cuda.KeptCall{}, fmt.Errorf("%v: %w", c.Fn, err)
	}
	cuda.Trace("cuSOLVER: %v of a %d x %d matrix left on GPU %d", c.Fn, m, n, d.Info.Index)
	return cuda.KeptCall{Ptr: res, Shape: out}, nil
}

// invInto is inv writing a^-1 row-major into dst (n x n on the device).
// The identity getrs turns into a^-1 is made on the device (eyeInto): its upload from host
// memory (134 MB for 4096^2, pageable) was most of the 45 ms inv(a) took against CuPy's 23 on
// an H200 (bench/RESULTS.md).
func (k *Kernels) invInto(mm *mem, a devPtr, n int, dst devPtr) error {
	if err := k.eyeInto(mm, dst, n); err != nil {
		return err
	}
	ipiv, info, err := k.getrf(mm, n, a, n)
	if err != nil {
		return err
	}
	if info > 0 {
		return errSingular
	}
	return k.getrs(mm, opN, n, n, a, n, ipiv, dst)
}

// eyeInto writes the n x n identity into dst on the device: a memset and a strided copy of n
// ones (the only bytes uploaded).
func (k *Kernels) eyeInto(mm *mem, dst devPtr, n int) error {
	if err := driver.MemsetD32Async(driver.DevicePtr(dst), 0, uint64(n*n)*2, mm.s); err != nil {
		return err
	}
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	o, err := mm.upload(ones)
	if err != nil {
		return err
	}
	return check("cublasDcopy", cublasDcopy(k.cublas, int32(n), o, 1, dst, int32(n+1)))
}

// solveInto is solve (or solveRHS, with right-hand sides given apart) writing the solution
// row-major into dst: getrs leaves it column-major, and cublasDgeam transposes it (exact).
func (k *Kernels) solveInto(mm *mem, c *plan.CallStep, a devPtr, rhs sides, m, n int, dst devPtr) error {
	size, nrhs := m, n-c.N // the right-hand sides are a's columns from c.N on
	lda := size + nrhs
	var b devPtr
	var err error
	switch {
	case rhs.dev != 0:
		size, nrhs, lda = n, c.RHS, n
		if b, err = mm.alloc(n * nrhs); err != nil {
			return err
		}
		one, zero := 1.0, 0.0
		if err := check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(n), int32(nrhs), &one, rhs.dev, int32(nrhs), &zero, b, int32(n), b, int32(n))); err != nil {
			return err
		}
	case rhs.host != nil:
		size, nrhs, lda = n, c.RHS, n
		bc := make([]float64, n*nrhs)
		for i := 0; i < n; i++ {
			for j := 0; j < nrhs; j++ {
				bc[j*n+i] = rhs.host[i*nrhs+j]
			}
		}
		if b, err = mm.upload(bc); err != nil {
			return err
		}
	default:
		if b, err = mm.alloc(size * nrhs); err != nil {
			return err
		}
		for j := 0; j < nrhs; j++ {
			if err := check("cublasDcopy", cublasDcopy(k.cublas, int32(size), a+devPtr((size+j)*8), int32(lda), b+devPtr(j*size*8), 1)); err != nil {
				return err
			}
		}
	}
	ipiv, info, err := k.getrf(mm, size, a, lda)
	if err != nil {
		return err
	}
	if info > 0 {
		return errSingular
	}
	if err := k.getrs(mm, opT, size, nrhs, a, lda, ipiv, b); err != nil {
		return err
	}
	// b is the column-major size x nrhs solution; its transpose, column-major nrhs x size, is
	// the row-major solution.
	one, zero := 1.0, 0.0
	return check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(nrhs), int32(size), &one, b, int32(size), &zero, dst, int32(nrhs), dst, int32(nrhs)))
}

// matrixFnInto computes the result of the matrix functions other than Inv and Solve of one
// row-major m x n matrix (at a, which it may overwrite) into dst on the device, row-major.
func (k *Kernels) matrixFnInto(mm *mem, c *plan.CallStep, a devPtr, rhs sides, m, n int, dst devPtr) error {
	switch c.Fn {
	case expr.FnCholesky:
		return k.choleskyInto(mm, a, n, dst)
	case expr.FnDet, expr.FnSlogdetSign, expr.FnSlogdetLog:
		// The determinant is formed from U's diagonal and the pivots (n values each, read on
		// the host, as det does); the one value goes back to the device.
		v := make([]float64, 1)
		if err := k.det(mm, c.Fn, a, n, v); err != nil {
			return err
		}
		return mm.dev.CopyToDevice(driver.DevicePtr(dst), v)
	case expr.FnEigvalsh, expr.FnEighVectors:
		return k.eighInto(mm, a, n, c.Fn == expr.FnEighVectors, dst)
	case expr.FnPinv, expr.FnLstsq:
		return k.svdFnInto(mm, c, a, rhs, m, n, nil, dst)
	}
	return fmt.Errorf("%w: %v is not kept on the device", cuda.ErrNotKept, c.Fn)
}

// choleskyInto is cholesky writing L into dst: the factor is the upper triangle U of a's
// column-major view, which read row-major is L; U = U I by cublasDtrmm (which reads only that
// triangle) clears the other one, I made on the device (a memset and a strided copy of ones).
func (k *Kernels) choleskyInto(mm *mem, a devPtr, n int, dst devPtr) error {
	if err := k.potrf(mm, a, n); err != nil {
		return err
	}
	eye, err := mm.alloc(n * n)
	if err != nil {
		return err
	}
	if err := k.eyeInto(mm, eye, n); err != nil {
		return err
	}
	one := 1.0
	return check("cublasDtrmm", cublasDtrmm(k.cublas, sideLeft, fillUpper, opN, diagNonUnit, int32(n), int32(n), &one, a, int32(n), eye, int32(n), dst, int32(n)))
}

// eighInto is eigh writing the eigenvalues, or the eigenvectors as columns (the transpose of
// syevd's column-major vectors read row-major: cublasDgeam, exact), into dst.
func (k *Kernels) eighInto(mm *mem, a devPtr, n int, vectors bool, dst devPtr) error {
	dw, err := k.syevd(mm, a, n, vectors)
	if err != nil {
		return err
	}
	if !vectors {
		return driver.MemcpyDtoDAsync(driver.DevicePtr(dst), driver.DevicePtr(dw), uint64(n)*8, mm.s)
	}
	one, zero := 1.0, 0.0
	return check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(n), int32(n), &one, a, int32(n), &zero, dst, int32(n), dst, int32(n)))
}
