package blas

import (
	"fmt"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// batchedMax is the largest matrix side that stacks factor with cuBLAS's batched LU: one
// launch for the whole stack, where the loop over matrices pays allocations, launches and a
// synchronization per matrix (cuBLAS meant the batched routines for small matrices).
const batchedMax = 32

// noBatched makes stacks take the loop over matrices (for comparing the two in tests).
var noBatched bool

// batchedLU reports whether runMatrix computes a stack of batch m x n matrices with the batched
// LU (luBatch): inverses, determinants and solves with the right-hand sides joined to them.
func batchedLU(c *plan.CallStep, batch, m, n int, rhs []float64) bool {
	if noBatched || batch < 2 || m < 1 || m > batchedMax || rhs != nil {
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
		for i := 0; i < batch; i++ { // each solution column-major (nrhs x m row-major) into y's rows
			blk := xs[i*m*nrhs : (i+1)*m*nrhs]
			linalg.Mat{Rows: nrhs, Cols: m, Data: blk}.TransposeInto(linalg.Mat{Rows: m, Cols: nrhs, Data: y[i*m*nrhs : (i+1)*m*nrhs]})
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
	diag := make([]float64, m)
	for i := 0; i < batch; i++ {
		for r := range diag {
			diag[r] = lu[i*m*n+r*n+r]
		}
		y[i] = luDet(c.Fn, diag, pivs[i*m:(i+1)*m])
	}
	return nil
}

// batchedEigh reports whether runMatrix computes the eigenvalues (and vectors) of a stack of
// batch n x n symmetric matrices with cuSOLVER's batched Jacobi solver (eighBatch): one launch
// for the stack, where the loop pays a workspace query, allocations, a launch and an info
// read-back per matrix. cuSOLVER limits the batched solver to n <= 32.
func batchedEigh(c *plan.CallStep, batch, m, n int) bool {
	if noBatched || batch < 2 || m != n || n < 1 || n > batchedMax {
		return false
	}
	return c.Fn == expr.FnEigvalsh || c.Fn == expr.FnEighVectors
}

// eighBatch computes the eigenvalues (ascending, the batched solver's default order) and, with
// vectors, the eigenvectors of the batch n x n symmetric row-major matrices at x (which it
// overwrites) into y, with cusolverDnDsyevjBatched of the column-major views' upper triangles
// (the row-major lower ones, as eigh does). The eigenvectors come back as the views' columns
// and are transposed into y's columns.
func (k *Kernels) eighBatch(mm *mem, x devPtr, batch, n int, vectors bool, y []float64) (err error) {
	jobz := eigNoVectors
	if vectors {
		jobz = eigVectors
	}
	var params uintptr
	if err := check("cusolverDnCreateSyevjInfo", cusolverCreateSyevjInfo(&params)); err != nil {
		return err
	}
	defer func() {
		if e := check("cusolverDnDestroySyevjInfo", cusolverDestroySyevjInfo(params)); e != nil && err == nil {
			err = e
		}
	}()
	w, err := mm.alloc(batch * n)
	if err != nil {
		return err
	}
	var lwork int32
	if err := check("cusolverDnDsyevjBatched_bufferSize", cusolverDsyevjBatchedBuf(k.cusolver, jobz, fillUpper, int32(n), x, int32(n), w, &lwork, params, int32(batch))); err != nil {
		return err
	}
	b, err := mm.allocs(int(lwork), (batch+1)/2) // workspace, int32 infos
	if err != nil {
		return err
	}
	if err := check("cusolverDnDsyevjBatched", cusolverDsyevjBatched(k.cusolver, jobz, fillUpper, int32(n), x, int32(n), w, b[0], lwork, b[1], params, int32(batch))); err != nil {
		return err
	}
	infos := make([]int32, batch)
	if err := mm.readInt32s(infos, b[1]); err != nil {
		return err
	}
	for i, v := range infos {
		if v > 0 {
			return fmt.Errorf("matrix %d of %d: eigenvalues did not converge", i, batch)
		}
		if v < 0 {
			return fmt.Errorf("cusolverDnDsyevjBatched: argument %d is invalid", -v)
		}
	}
	if !vectors {
		return mm.download(y, w)
	}
	v := make([]float64, batch*n*n)
	if err := mm.download(v, x); err != nil {
		return err
	}
	for b := 0; b < batch; b++ {
		off, end := b*n*n, (b+1)*n*n
		linalg.Mat{Rows: n, Cols: n, Data: v[off:end]}.TransposeInto(linalg.Mat{Rows: n, Cols: n, Data: y[off:end]})
	}
	return nil
}

// batchedSVD reports whether runMatrix computes the pseudo-inverses or ranks of a stack of
// batch m x n matrices with cuSOLVER's batched Jacobi SVD (svdBatch), limited to m, n <= 32.
func batchedSVD(c *plan.CallStep, batch, m, n int, rhs []float64) bool {
	if noBatched || batch < 2 || rhs != nil || m < 1 || n < 1 || m > batchedMax || n > batchedMax {
		return false
	}
	return c.Fn == expr.FnPinv || c.Fn == expr.FnMatrixRank
}

// svdBatch computes Pinv or MatrixRank of the batch m x n row-major matrices at x (which it
// overwrites) into y, from cusolverDnDgesvdjBatched of their column-major views B = A^T (n x m,
// leading dimension n): B = U S V^T, so pinv(A) = U S+ V^T, row-major n x m, with the CPU's
// cutoff max(m, n) * eps * the largest singular value. The small products are formed on the
// host.
func (k *Kernels) svdBatch(mm *mem, c *plan.CallStep, x devPtr, batch, m, n int, y []float64) (err error) {
	p, q := n, m // the view's rows and columns
	r := min(p, q)
	jobz := eigNoVectors
	if c.Fn == expr.FnPinv {
		jobz = eigVectors
	}
	var params uintptr
	if err := check("cusolverDnCreateGesvdjInfo", cusolverCreateGesvdjInfo(&params)); err != nil {
		return err
	}
	defer func() {
		if e := check("cusolverDnDestroyGesvdjInfo", cusolverDestroyGesvdjInfo(params)); e != nil && err == nil {
			err = e
		}
	}()
	b, err := mm.allocs(batch*r, batch*p*p, batch*q*q) // S, U, V
	if err != nil {
		return err
	}
	ds, du, dv := b[0], b[1], b[2]
	var lwork int32
	if err := check("cusolverDnDgesvdjBatched_bufferSize", cusolverDgesvdjBatchedBuf(k.cusolver, jobz, int32(p), int32(q), x, int32(p), ds, du, int32(p), dv, int32(q), &lwork, params, int32(batch))); err != nil {
		return err
	}
	w, err := mm.allocs(int(lwork), (batch+1)/2) // workspace, int32 infos
	if err != nil {
		return err
	}
	if err := check("cusolverDnDgesvdjBatched", cusolverDgesvdjBatched(k.cusolver, jobz, int32(p), int32(q), x, int32(p), ds, du, int32(p), dv, int32(q), w[0], lwork, w[1], params, int32(batch))); err != nil {
		return err
	}
	infos := make([]int32, batch)
	if err := mm.readInt32s(infos, w[1]); err != nil {
		return err
	}
	for i, v := range infos {
		if v > 0 {
			return fmt.Errorf("matrix %d of %d: SVD did not converge", i, batch)
		}
		if v < 0 {
			return fmt.Errorf("cusolverDnDgesvdjBatched: argument %d is invalid", -v)
		}
	}
	s := make([]float64, batch*r)
	if err := mm.download(s, ds); err != nil {
		return err
	}
	cuts := make([]float64, batch)
	for i := range cuts {
		cuts[i] = linalg.RankCutoff(m, n, s[i*r:(i+1)*r])
	}
	if c.Fn == expr.FnMatrixRank {
		for i := range cuts {
			y[i] = float64(linalg.Rank(s[i*r:(i+1)*r], cuts[i]))
		}
		return nil
	}
	u, v := make([]float64, batch*p*p), make([]float64, batch*q*q)
	if err := mm.downloads([][]float64{u, v}, du, dv); err != nil {
		return err
	}
	for i := 0; i < batch; i++ {
		ui, vi, si, dst := u[i*p*p:], v[i*q*q:], s[i*r:(i+1)*r], y[i*n*m:(i+1)*n*m]
		clear(dst)
		for j, sv := range si {
			if !(sv > cuts[i]) {
				continue
			}
			inv := 1 / sv
			for row := 0; row < p; row++ {
				f := ui[row+j*p] * inv
				for col := 0; col < q; col++ {
					dst[row*q+col] += f * vi[col+j*q]
				}
			}
		}
	}
	return nil
}
