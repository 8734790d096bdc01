package linalg

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
)

// Factor is the QR factorization of one block, A = Q*R, kept in the form its Kernels chose
// (Householder reflectors): Q is never formed unless asked for.
type Factor interface {
	// R returns the k x n upper trapezoidal factor, k = min(m, n).
	R() (Mat, error)
	// ApplyQ overwrites c (m x p) with Q*c, where Q is the full m x m orthogonal factor. A
	// thin product Q*W (W of k rows) is ApplyQ of W padded with zero rows.
	ApplyQ(c Mat) error
	// Release frees what the factor holds (device memory); the factor is unusable after.
	Release()
}

// Kernels is the dense linear algebra on single blocks that the chunked algorithms are built
// from. Implementations must be safe for concurrent use.
type Kernels interface {
	// Name says which implementation runs, for results to report.
	Name() string
	// QR factors a (m x n). It may overwrite a.
	QR(a Mat) (Factor, error)
	// Gemm computes c = alpha*op(a)*op(b) + beta*c, op transposing when the flag is set.
	Gemm(transA, transB bool, alpha float64, a, b Mat, beta float64, c Mat) error
	// SVD returns the thin SVD a = u*diag(s)*vt of a small dense matrix, singular values in
	// descending order: u is m x k, vt is k x n, k = min(m, n).
	SVD(a Mat) (u Mat, s []float64, vt Mat, err error)
}

// Triangular is implemented by kernels that also solve triangular systems and form Gram
// matrices. With it, and factors that expose their reflectors (Reflectors), Q*[W; 0] runs as
// matrix products instead of a reflector-by-reflector application (see applyThin).
type Triangular interface {
	// Trsm overwrites b (k x p) with a^-1 * b, a (k x k) upper triangular with its diagonal.
	Trsm(a, b Mat) error
	// Syrk computes the upper triangle of c = alpha * a^T * a + beta * c, a m x n, c n x n;
	// c's strictly lower triangle is left as it was.
	Syrk(alpha float64, a Mat, beta float64, c Mat) error
}

// Reflectors is implemented by factors that keep Householder reflectors as LAPACK's QR of a
// row-major block does: for the m x n block a (m >= n), reflector j is column j of a below
// the diagonal with an implicit 1 on it, and H_j = I - tau[j]*v_j*v_j^T; Q = H_0*H_1*...
type Reflectors interface {
	Householder() (a Mat, tau []float64)
}

// Concurrent is implemented by kernels that run threads of their own (OpenBLAS): before the
// chunked algorithms make up to n block calls at once they call SetConcurrency(n), and
// SetConcurrency(1) after, so that the kernels share the cores instead of oversubscribing
// them.
type Concurrent interface {
	SetConcurrency(n int)
}

// CPU returns the CPU kernels: gonum's BLAS and LAPACK (pure Go).
func CPU() Kernels { return cpuKernels{} }

type cpuKernels struct{}

func (cpuKernels) Name() string { return "cpu (gonum)" }

// guard turns a panic of gonum (bad dimensions) into an error.
func guard(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: %v", what, r)
	}
}

type cpuFactor struct {
	a   Mat // reflectors below the diagonal, R on and above
	tau []float64
}

func (cpuKernels) QR(a Mat) (f Factor, err error) {
	if err := a.Check("QR"); err != nil {
		return nil, err
	}
	defer guard("QR", &err)
	var impl gonum.Implementation
	m, n := a.Rows, a.Cols
	tau := make([]float64, min(m, n))
	if m == 0 || n == 0 {
		return &cpuFactor{a: a, tau: tau}, nil
	}
	work := []float64{0}
	impl.Dgeqrf(m, n, a.Data, max(n, 1), tau, work, -1)
	work = make([]float64, max(1, int(work[0])))
	impl.Dgeqrf(m, n, a.Data, max(n, 1), tau, work, len(work))
	return &cpuFactor{a: a, tau: tau}, nil
}

func (f *cpuFactor) R() (Mat, error) {
	k := min(f.a.Rows, f.a.Cols)
	r := NewMat(k, f.a.Cols)
	for i := 0; i < k; i++ {
		copy(r.Data[i*r.Cols+i:(i+1)*r.Cols], f.a.Data[i*f.a.Cols+i:(i+1)*f.a.Cols])
	}
	return r, nil
}

func (f *cpuFactor) ApplyQ(c Mat) (err error) {
	if err := c.Check("ApplyQ"); err != nil {
		return err
	}
	if c.Rows != f.a.Rows {
		return fmt.Errorf("ApplyQ: Q is %d x %d, the operand is %s", f.a.Rows, f.a.Rows, c.Shape())
	}
	k := len(f.tau)
	if k == 0 || c.Cols == 0 {
		return nil
	}
	defer guard("ApplyQ", &err)
	var impl gonum.Implementation
	work := []float64{0}
	impl.Dormqr(blas.Left, blas.NoTrans, c.Rows, c.Cols, k, f.a.Data, f.a.Cols, f.tau, c.Data, c.Cols, work, -1)
	work = make([]float64, max(1, int(work[0])))
	impl.Dormqr(blas.Left, blas.NoTrans, c.Rows, c.Cols, k, f.a.Data, f.a.Cols, f.tau, c.Data, c.Cols, work, len(work))
	return nil
}

func (f *cpuFactor) Release() { f.a, f.tau = Mat{}, nil }

// Householder returns the reflectors (gonum's Dgeqrf on the row-major block).
func (f *cpuFactor) Householder() (Mat, []float64) { return f.a, f.tau }

func (cpuKernels) Trsm(a, b Mat) (err error) {
	if err := TrsmCheck(a, b); err != nil || b.Rows == 0 || b.Cols == 0 {
		return err
	}
	defer guard("Trsm", &err)
	blas64.Implementation().Dtrsm(blas.Left, blas.Upper, blas.NoTrans, blas.NonUnit, b.Rows, b.Cols, 1, a.Data, a.Cols, b.Data, b.Cols)
	return nil
}

func (cpuKernels) Syrk(alpha float64, a Mat, beta float64, c Mat) (err error) {
	if err := SyrkCheck(a, c); err != nil || c.Rows == 0 {
		return err
	}
	defer guard("Syrk", &err)
	blas64.Implementation().Dsyrk(blas.Upper, blas.Trans, c.Rows, a.Rows, alpha, a.Data, max(a.Cols, 1), beta, c.Data, c.Cols)
	return nil
}

// TrsmCheck checks the shapes of Triangular.Trsm's operands.
func TrsmCheck(a, b Mat) error {
	if err := checkEach("Trsm", "ab", a, b); err != nil {
		return err
	}
	if a.Rows != a.Cols || a.Rows != b.Rows {
		return fmt.Errorf("Trsm: a is %s, b is %s: want a square a with as many rows as b", a.Shape(), b.Shape())
	}
	return nil
}

// SyrkCheck checks the shapes of Triangular.Syrk's operands.
func SyrkCheck(a, c Mat) error {
	if err := checkEach("Syrk", "ac", a, c); err != nil {
		return err
	}
	if c.Rows != c.Cols || c.Rows != a.Cols {
		return fmt.Errorf("Syrk: a is %s, c is %s: want c square with a's columns", a.Shape(), c.Shape())
	}
	return nil
}

func (cpuKernels) Gemm(transA, transB bool, alpha float64, a, b Mat, beta float64, c Mat) (err error) {
	m, k, n, work, err := GemmCheck(transA, transB, a, b, beta, c)
	if err != nil || !work {
		return err
	}
	defer guard("Gemm", &err)
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	blas64.Implementation().Dgemm(ta, tb, m, n, k, alpha, a.Data, max(a.Cols, 1), b.Data, max(b.Cols, 1), beta, c.Data, max(c.Cols, 1))
	return nil
}

// GemmCheck checks the shapes of c = alpha*op(a)*op(b) + beta*c and does what needs no kernel:
// nothing for an empty c, c = beta*c for an empty inner dimension. It returns m and k of op(a),
// n of op(b), and whether a kernel still has the product to compute.
func GemmCheck(transA, transB bool, a, b Mat, beta float64, c Mat) (m, k, n int, work bool, err error) {
	if err := checkEach("Gemm", "abc", a, b, c); err != nil {
		return 0, 0, 0, false, err
	}
	m, k = a.Rows, a.Cols
	if transA {
		m, k = k, m
	}
	k2, n := b.Rows, b.Cols
	if transB {
		k2, n = n, k2
	}
	if k != k2 || c.Rows != m || c.Cols != n {
		return 0, 0, 0, false, fmt.Errorf("Gemm: op(a) is (%d, %d), op(b) is (%d, %d), c is %s: inner dimensions or result shape mismatch", m, k, k2, n, c.Shape())
	}
	if m == 0 || n == 0 {
		return m, k, n, false, nil
	}
	if k == 0 {
		for i := range c.Data {
			c.Data[i] *= beta
		}
		return m, k, n, false, nil
	}
	return m, k, n, true, nil
}

func (cpuKernels) SVD(a Mat) (u Mat, s []float64, vt Mat, err error) {
	if err := a.Check("SVD"); err != nil {
		return Mat{}, nil, Mat{}, err
	}
	defer guard("SVD", &err)
	m, n := a.Rows, a.Cols
	k := min(m, n)
	u, vt, s = NewMat(m, k), NewMat(k, n), make([]float64, k)
	if k == 0 {
		return u, s, vt, nil
	}
	a = Mat{Rows: m, Cols: n, Data: append([]float64(nil), a.Data...)}
	var impl gonum.Implementation
	work := []float64{0}
	impl.Dgesvd(lapack.SVDStore, lapack.SVDStore, m, n, a.Data, n, s, u.Data, k, vt.Data, n, work, -1)
	work = make([]float64, max(1, int(work[0])))
	if !impl.Dgesvd(lapack.SVDStore, lapack.SVDStore, m, n, a.Data, n, s, u.Data, k, vt.Data, n, work, len(work)) {
		return Mat{}, nil, Mat{}, fmt.Errorf("SVD of a %s matrix did not converge", a.Shape())
	}
	return u, s, vt, nil
}

// checkEach checks the operands of call, each named by one letter of names.
func checkEach(call, names string, ms ...Mat) error {
	for i, m := range ms {
		if err := m.Check(call + " " + names[i:i+1]); err != nil {
			return err
		}
	}
	return nil
}
