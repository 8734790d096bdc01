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

// matrixKeepRule is RunMatrixKeep's rule (cuda.KeepRule): Inv and Solve of real matrices giving
// float64 stay on the device; the other matrix functions (factors whose other triangle is
// cleared, eigenvalues, SVD-based results, determinants) come to the host.
func matrixKeepRule(c *plan.CallStep, dt dtype.DType) string {
	switch {
	case c.Fn != expr.FnInv && c.Fn != expr.FnSolve:
		return fmt.Sprintf("%v: its result comes to the host (inv and solve stay on the device)", c.Fn)
	case dt.Kind() == dtype.KindComplex:
		return fmt.Sprintf("%v of complex matrices runs on the host", c.Fn)
	case c.DType != dtype.Float64:
		return fmt.Sprintf("%v giving %v: cuSOLVER writes float64, rounded on the host", c.Fn, c.DType)
	}
	return ""
}

// RunMatrixKeep is RunMatrixOnDevice leaving the result on d (cuda.KeepCallRunner): the
// inverse, or the solution of a solve (its right-hand sides the block's columns from c.N on,
// or given apart in operands), of one matrix, written into a buffer of d's pool row-major.
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
		default:
			return k.solveInto(mm, c, a, rhs, m, n, devPtr(res))
		}
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
func (k *Kernels) invInto(mm *mem, a devPtr, n int, dst devPtr) error {
	eye := make([]float64, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = 1
	}
	if err := mm.dev.CopyToDevice(driver.DevicePtr(dst), eye); err != nil {
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
