package openblas

import (
	"fmt"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// Kernels runs linalg's block kernels with OpenBLAS. It implements linalg.Kernels and is safe
// for concurrent use (OpenBLAS serializes its thread pool between callers).
type Kernels struct {
	name string
}

// New loads OpenBLAS (see Load) and returns its kernels.
func New() (*Kernels, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	return &Kernels{name: "cpu (" + Version() + ")"}, nil
}

// Name says which kernels run, like "cpu (OpenBLAS 0.3.21)".
func (k *Kernels) Name() string { return k.name }

// Gemm computes c = alpha*op(a)*op(b) + beta*c with cblas_dgemm, which takes row-major
// operands as they are.
func (k *Kernels) Gemm(transA, transB bool, alpha float64, a, b linalg.Mat, beta float64, c linalg.Mat) error {
	m, kk, n, work, err := linalg.GemmCheck(transA, transB, a, b, beta, c)
	if err != nil || !work {
		return err
	}
	ta, tb := int32(cblasNoTrans), int32(cblasNoTrans)
	if transA {
		ta = cblasTrans
	}
	if transB {
		tb = cblasTrans
	}
	cblasDgemm(cblasRowMajor, ta, tb, int32(m), int32(n), int32(kk), alpha, &a.Data[0], int32(a.Cols),
		&b.Data[0], int32(b.Cols), beta, &c.Data[0], int32(n))
	return nil
}

// factor is the QR of a row-major m x n block held as the LQ factorization of its transpose
// (dgelqf on the same memory): R on and above the diagonal in row-major terms, the
// reflectors of Q below it.
type factor struct {
	a   linalg.Mat
	tau []float64
}

// QR factors a (overwriting it) as the LQ of a^T: a^T = L*Q' gives a = Q'^T * L^T.
func (k *Kernels) QR(a linalg.Mat) (linalg.Factor, error) {
	if err := a.Check("QR"); err != nil {
		return nil, err
	}
	m, n := a.Rows, a.Cols
	f := &factor{a: a, tau: make([]float64, min(m, n))}
	if m == 0 || n == 0 {
		return f, nil
	}
	if m >= tallRatio*n {
		return f, f.geqrf()
	}
	// Column-major a^T is n x m with leading dimension n.
	M, N, lda := int32(n), int32(m), int32(n)
	if err := lapackCall("dgelqf", func(work *float64, lwork, info *int32) {
		dgelqf(&M, &N, &a.Data[0], &lda, &f.tau[0], work, lwork, info)
	}); err != nil {
		return nil, fmt.Errorf("QR of a %s block: %w", a.Shape(), err)
	}
	return f, nil
}

// tallRatio is the rows-to-columns ratio from which QR copies a block to column-major and
// runs dgeqrf: the LQ of a long transposed block (dgelqf) walks rows m elements apart in its
// panel steps, and ran at 9.5 GFLOP/s per thread on a 100000 x 1000 block (2-core VM, OpenBLAS
// 0.3.21) where dgeqrf of the same block in column-major order runs at about 15.
const tallRatio = 4

// geqrf factors the tall block with dgeqrf on a column-major copy and copies the result back,
// which leaves the same layout as the LQ of the transpose: R on and above the diagonal, the
// reflectors below it (and the same Q = H_0*...*H_{k-1}).
func (f *factor) geqrf() error {
	a := f.a
	m, n := a.Rows, a.Cols
	buf := scratch.get(m * n)
	defer scratch.put(buf)
	cm := linalg.Mat{Rows: n, Cols: m, Data: buf[:m*n]} // a^T row-major: a column-major, lda m
	a.TransposeInto(cm)
	M, N, lda := int32(m), int32(n), int32(m)
	if err := lapackCall("dgeqrf", func(work *float64, lwork, info *int32) {
		dgeqrf(&M, &N, &cm.Data[0], &lda, &f.tau[0], work, lwork, info)
	}); err != nil {
		return fmt.Errorf("QR of a %s block: %w", a.Shape(), err)
	}
	cm.TransposeInto(a)
	return nil
}

// scratch keeps the column-major copies of geqrf for the next leaves: TSQR's leaves have the
// same size, and touching 800 MB of new memory cost more than a second on a 2-core VM.
var scratch scratchPool

type scratchPool struct {
	mu   sync.Mutex
	bufs [][]float64
}

// get returns a buffer of at least n elements (contents undefined).
func (p *scratchPool) get(n int) []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.bufs {
		if cap(b) >= n {
			p.bufs = append(p.bufs[:i], p.bufs[i+1:]...)
			return b[:n]
		}
	}
	return make([]float64, n)
}

// put keeps b for later, up to four buffers (the concurrent leaves of a TSQR).
func (p *scratchPool) put(b []float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bufs) < 4 {
		p.bufs = append(p.bufs, b)
	}
}

// lapackCall runs a LAPACK routine twice, as they are meant to be called: a workspace query
// (lwork = -1), then the call with that workspace. info != 0 becomes an error.
func lapackCall(name string, call func(work *float64, lwork, info *int32)) error {
	var info int32
	work := []float64{0}
	lwork := int32(-1)
	call(&work[0], &lwork, &info)
	if info != 0 {
		return fmt.Errorf("%s workspace query: info %d", name, info)
	}
	work = make([]float64, max(1, int(work[0])))
	lwork = int32(len(work))
	call(&work[0], &lwork, &info)
	if info != 0 {
		return fmt.Errorf("%s: info %d", name, info)
	}
	return nil
}

// R returns the upper trapezoidal k x n factor (L^T, which is already in row-major place).
func (f *factor) R() (linalg.Mat, error) {
	k := min(f.a.Rows, f.a.Cols)
	n := f.a.Cols
	r := linalg.NewMat(k, n)
	for i := 0; i < k; i++ {
		copy(r.Data[i*n+i:(i+1)*n], f.a.Data[i*n+i:(i+1)*n])
	}
	return r, nil
}

// ApplyQ overwrites c (m x p) with Q*c. With Q = Q'^T, (Q*c)^T = c^T * Q', and row-major c is
// column-major c^T: dormlq from the right, no transpose.
func (f *factor) ApplyQ(c linalg.Mat) error {
	if err := c.Check("ApplyQ"); err != nil {
		return err
	}
	m := f.a.Rows
	if c.Rows != m {
		return fmt.Errorf("ApplyQ: Q is %d x %d, the operand is %s", m, m, c.Shape())
	}
	kk := len(f.tau)
	if kk == 0 || c.Cols == 0 {
		return nil
	}
	side, trans := byte('R'), byte('N')
	M, N, K, lda, ldc := int32(c.Cols), int32(m), int32(kk), int32(f.a.Cols), int32(c.Cols)
	if err := lapackCall("dormlq", func(work *float64, lwork, info *int32) {
		dormlq(&side, &trans, &M, &N, &K, &f.a.Data[0], &lda, &f.tau[0], &c.Data[0], &ldc, work, lwork, info, 1, 1)
	}); err != nil {
		return fmt.Errorf("ApplyQ to %s: %w", c.Shape(), err)
	}
	return nil
}

// Release drops the factor's memory.
func (f *factor) Release() { f.a, f.tau = linalg.Mat{}, nil }

// Householder returns the reflectors: dgelqf of a^T leaves reflector j in row j of the
// column-major a^T right of the diagonal, which is column j of row-major a below it, and
// Q = (H_{k-1}*...*H_0)^T = H_0*...*H_{k-1}, as a QR's (see linalg.Reflectors).
func (f *factor) Householder() (linalg.Mat, []float64) { return f.a, f.tau }

// Trsm overwrites b with a^-1 * b (a upper triangular) with cblas_dtrsm.
func (k *Kernels) Trsm(a, b linalg.Mat) error {
	if err := linalg.TrsmCheck(a, b); err != nil || b.Rows == 0 || b.Cols == 0 {
		return err
	}
	cblasDtrsm(cblasRowMajor, cblasLeft, cblasUpper, cblasNoTrans, cblasNonUnit, int32(b.Rows), int32(b.Cols), 1, &a.Data[0], int32(a.Cols), &b.Data[0], int32(b.Cols))
	return nil
}

// Syrk computes the upper triangle of c = alpha * a^T * a + beta * c with cblas_dsyrk.
func (k *Kernels) Syrk(alpha float64, a linalg.Mat, beta float64, c linalg.Mat) error {
	if err := linalg.SyrkCheck(a, c); err != nil || c.Rows == 0 {
		return err
	}
	if a.Rows == 0 {
		for i := 0; i < c.Rows; i++ {
			for j := i; j < c.Cols; j++ {
				c.Data[i*c.Cols+j] *= beta
			}
		}
		return nil
	}
	cblasDsyrk(cblasRowMajor, cblasUpper, cblasTrans, int32(c.Rows), int32(a.Rows), alpha, &a.Data[0], int32(a.Cols), beta, &c.Data[0], int32(c.Cols))
	return nil
}

// SVD returns the thin SVD of a with dgesdd (divide and conquer) on a copy. Row-major a is
// column-major X = a^T; X = U_X*S*VT_X gives a = VT_X^T*S*U_X^T, and column-major VT_X (k x r)
// and U_X (c x k) are exactly row-major u (r x k) and vt (k x c).
func (k *Kernels) SVD(a linalg.Mat) (u linalg.Mat, s []float64, vt linalg.Mat, err error) {
	if err := a.Check("SVD"); err != nil {
		return linalg.Mat{}, nil, linalg.Mat{}, err
	}
	r, c := a.Rows, a.Cols
	kk := min(r, c)
	u, vt, s = linalg.NewMat(r, kk), linalg.NewMat(kk, c), make([]float64, kk)
	if kk == 0 {
		return u, s, vt, nil
	}
	x := append([]float64(nil), a.Data...)
	jobz := byte('S')
	M, N, lda, ldu, ldvt := int32(c), int32(r), int32(c), int32(c), int32(kk)
	iwork := make([]int32, 8*kk)
	var info int32
	work := []float64{0}
	lwork := int32(-1)
	// U_X goes to vt's memory and VT_X to u's.
	dgesdd(&jobz, &M, &N, &x[0], &lda, &s[0], &vt.Data[0], &ldu, &u.Data[0], &ldvt, &work[0], &lwork, &iwork[0], &info, 1)
	if info != 0 {
		return linalg.Mat{}, nil, linalg.Mat{}, fmt.Errorf("SVD of a %s matrix: dgesdd workspace query: info %d", a.Shape(), info)
	}
	work = make([]float64, max(1, int(work[0])))
	lwork = int32(len(work))
	dgesdd(&jobz, &M, &N, &x[0], &lda, &s[0], &vt.Data[0], &ldu, &u.Data[0], &ldvt, &work[0], &lwork, &iwork[0], &info, 1)
	switch {
	case info > 0:
		return linalg.Mat{}, nil, linalg.Mat{}, fmt.Errorf("SVD of a %s matrix did not converge (dgesdd info %d)", a.Shape(), info)
	case info < 0:
		return linalg.Mat{}, nil, linalg.Mat{}, fmt.Errorf("SVD of a %s matrix: dgesdd: argument %d invalid", a.Shape(), -info)
	}
	return u, s, vt, nil
}

// SetConcurrency splits OpenBLAS's threads between n block calls made at once (see
// linalg.Concurrent): each call gets the threads OpenBLAS started with divided by n.
func (k *Kernels) SetConcurrency(n int) {
	setNumThreads(int32(max(1, startThreads/max(n, 1))))
}
