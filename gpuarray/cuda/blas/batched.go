package blas

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// batchedMax is the largest matrix side that stacks factor with cuBLAS's batched LU: one
// launch for the whole stack, where the loop over matrices pays allocations, launches and a
// synchronization per matrix (cuBLAS meant the batched routines for small matrices).
const batchedMax = 32

// batchedLU reports whether runMatrix computes a stack of batch m x n matrices with the batched
// LU (luBatch): inverses, determinants and solves with the right-hand sides joined to them.
func batchedLU(c *plan.CallStep, batch, m, n int, rhs []float64) bool {
	if batch < 2 || m < 1 || m > batchedMax || rhs != nil {
		return false
	}
	switch c.Fn {
	case expr.FnInv, expr.FnDet, expr.FnSlogdetSign, expr.FnSlogdetLog:
		return m == n
	case expr.FnSolve:
		return c.N == m && n > m
	}
	return false
}

// pointers uploads the device addresses base, base+step, … (batch of them, step in bytes): the
// pointer arrays of cuBLAS's batched routines.
func (mm *mem) pointers(base devPtr, step, batch int) (devPtr, error) {
	p := make([]uint64, batch)
	for b := range p {
		p[b] = uint64(base) + uint64(b*step)
	}
	return mm.upload(unsafe.Slice((*float64)(unsafe.Pointer(&p[0])), batch))
}

// luBatch computes c for the batch m x n row-major matrices at x (which it overwrites) into y:
// cublasDgetrfBatched of the column-major views (a^T, leading dimension n), then
// cublasDgetriBatched (inverses: a^-T column-major is a^-1 row-major), the diagonals and
// pivots (determinants), or cublasDgetrsBatched with the transpose flag (solves).
func (k *Kernels) luBatch(mm *mem, c *plan.CallStep, x devPtr, batch, m, n int, y []float64) error {
	pa, err := mm.pointers(x, m*n*8, batch)
	if err != nil {
		return err
	}
	b, err := mm.allocs((batch*m+1)/2, (batch+1)/2) // int32 pivots, int32 infos
	if err != nil {
		return err
	}
	piv, info := b[0], b[1]
	if err := check("cublasDgetrfBatched", cublasDgetrfBatch(k.cublas, int32(m), pa, int32(n), piv, info, int32(batch))); err != nil {
		return err
	}
	infos := make([]int32, batch)
	if err := mm.readInt32s(infos, info); err != nil {
		return err
	}
	singular := func() error {
		for i, v := range infos {
			if v > 0 {
				return fmt.Errorf("matrix %d of %d: %w", i, batch, errSingular)
			}
		}
		return nil
	}
	switch c.Fn {
	case expr.FnInv:
		if err := singular(); err != nil {
			return err
		}
		out, err := mm.alloc(batch * m * m)
		if err != nil {
			return err
		}
		pc, err := mm.pointers(out, m*m*8, batch)
		if err != nil {
			return err
		}
		if err := check("cublasDgetriBatched", cublasDgetriBatch(k.cublas, int32(m), pa, int32(n), piv, pc, int32(m), info, int32(batch))); err != nil {
			return err
		}
		return mm.download(y, out)
	case expr.FnSolve:
		if err := singular(); err != nil {
			return err
		}
		nrhs := n - m
		bc, err := mm.alloc(batch * m * nrhs)
		if err != nil {
			return err
		}
		one, zero := 1.0, 0.0
		for i := 0; i < batch; i++ {
			// The view's rows m.. of matrix i are B^T (nrhs x m, leading dimension n): its
			// transpose is B column-major, m x nrhs.
			src, dst := x+devPtr(i*m*n*8+m*8), bc+devPtr(i*m*nrhs*8)
			if err := check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(m), int32(nrhs), &one, src, int32(n), &zero, dst, int32(m), dst, int32(m))); err != nil {
				return err
			}
		}
		pb, err := mm.pointers(bc, m*nrhs*8, batch)
		if err != nil {
			return err
		}
		var hinfo int32
		if err := check("cublasDgetrsBatched", cublasDgetrsBatch(k.cublas, opT, int32(m), int32(nrhs), pa, int32(n), piv, pb, int32(m), &hinfo, int32(batch))); err != nil {
			return err
		}
		if hinfo != 0 {
			return fmt.Errorf("cublasDgetrsBatched: argument %d is invalid", -hinfo)
		}
		xs := make([]float64, batch*m*nrhs)
		if err := mm.download(xs, bc); err != nil {
			return err
		}
		for i := 0; i < batch; i++ {
			for r := 0; r < m; r++ {
				for j := 0; j < nrhs; j++ {
					y[i*m*nrhs+r*nrhs+j] = xs[i*m*nrhs+j*m+r]
				}
			}
		}
		return nil
	}
	lu := make([]float64, batch*m*n)
	if err := mm.download(lu, x); err != nil {
		return err
	}
	pivs := make([]int32, batch*m)
	if err := mm.readInt32s(pivs, piv); err != nil {
		return err
	}
	for i := 0; i < batch; i++ {
		diag := make([]float64, m)
		for r := range diag {
			diag[r] = lu[i*m*n+r*n+r]
		}
		sign, logdet, prod := 1.0, 0.0, 1.0
		for r, u := range diag {
			if int(pivs[i*m+r]) != r+1 {
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
		switch c.Fn {
		case expr.FnDet:
			y[i] = prod
		case expr.FnSlogdetSign:
			y[i] = sign
		default:
			y[i] = logdet
		}
	}
	return nil
}
