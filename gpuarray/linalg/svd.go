package linalg

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// SVDResult is a thin SVD A = U*diag(S)*Vt: U is m x k, S has k values in descending order,
// Vt is k x n. Signs are normalized (see FlipSigns), so factors do not depend on the path the
// computation took.
type SVDResult struct {
	U       Mat
	S       []float64
	Vt      Mat
	Kernels string // the kernels that ran
}

// ErrNotTallSkinny is returned (wrapped) by SVD for a matrix chunked along both axes.
var ErrNotTallSkinny = errors.New("SVD needs a single column of chunks (tall-and-skinny) or a single row of chunks (short-and-fat); use SVDCompressed for matrices chunked along both axes")

// SVD computes the thin SVD of a matrix with a single column of chunks (by TSQR, then the SVD
// of R) or a single row of chunks (through the transpose).
func SVD(ctx context.Context, a Matrix, opt Options) (*SVDResult, error) {
	if err := a.Grid.check("SVD"); err != nil {
		return nil, err
	}
	switch {
	case len(a.ColChunks) == 1:
		return tallSVD(ctx, a, opt)
	case len(a.RowChunks) == 1:
		r, err := tallSVD(ctx, a.Transpose(), opt)
		if err != nil {
			return nil, err
		}
		// A^T = U S Vt  =>  A = Vt^T S U^T.
		out := &SVDResult{U: r.Vt.T(), S: r.S, Vt: r.U.T(), Kernels: r.Kernels}
		out.FlipSigns()
		return out, nil
	}
	return nil, fmt.Errorf("SVD of a (%d, %d) matrix with chunks %v: %w", a.Rows(), a.Cols(), a.Grid, ErrNotTallSkinny)
}

func tallSVD(ctx context.Context, a Matrix, opt Options) (*SVDResult, error) {
	q, err := TSQR(ctx, a, opt)
	if err != nil {
		return nil, err
	}
	defer q.Release()
	kern := opt.kernels()
	ur, s, vt, err := kern.SVD(q.R)
	if err != nil {
		return nil, fmt.Errorf("SVD of R %s: %w", q.R.Shape(), err)
	}
	// Signs are fixed on the small factors: U = Q*U_R flips with U_R's columns.
	small := &SVDResult{U: ur, S: s, Vt: vt}
	small.FlipSigns()
	u := NewMat(q.Rows(), ur.Cols)
	if err := q.ApplyQ(ctx, ur, u.Data); err != nil {
		return nil, fmt.Errorf("SVD: U = Q*U_R: %w", err)
	}
	return &SVDResult{U: u, S: s, Vt: vt, Kernels: q.Kernels}, nil
}

// FlipSigns normalizes the sign of each singular pair (a column of U and the row of Vt): the
// entry of largest magnitude of the Vt row (the first such) becomes positive. U is walked row
// by row. Algorithms that form U as Q*U_R flip U_R's columns before (same result, no pass over
// the large U).
func (r *SVDResult) FlipSigns() {
	var flip []int
	for i := 0; i < r.Vt.Rows; i++ {
		row := r.Vt.Data[i*r.Vt.Cols : (i+1)*r.Vt.Cols]
		best, bi := -1.0, 0
		for j, v := range row {
			if math.Abs(v) > best {
				best, bi = math.Abs(v), j
			}
		}
		if len(row) == 0 || row[bi] >= 0 {
			continue
		}
		for j := range row {
			row[j] = -row[j]
		}
		flip = append(flip, i)
	}
	if len(flip) == 0 {
		return
	}
	for k := 0; k < r.U.Rows; k++ {
		row := r.U.Data[k*r.U.Cols : (k+1)*r.U.Cols]
		for _, i := range flip {
			row[i] = -row[i]
		}
	}
}

// TestMatrix returns the n x l standard normal test matrix of the randomized SVD for seed:
// element (r, c) is the Philox normal of global index r*l + c under key (seed, draw 0), so it
// is the same for any chunking and backend.
func TestMatrix(seed uint64, n, l int) Mat {
	om := NewMat(n, l)
	rng.KeyOf(seed, 0).NormalStrided(om.Data, 0, 1, 0, 1)
	return om
}

// SVDCompressed computes an approximate rank-k SVD of a matrix with any chunking by the
// randomized algorithm of Halko, Martinsson and Tropp: Y = A*Omega with k+oversamples
// columns, powerIters rounds of re-orthogonalized power iteration, Q = orth(Y) by TSQR, then
// the SVD of the small Q^T*A. Omega comes from TestMatrix(seed, ...).
func SVDCompressed(ctx context.Context, a Matrix, k, powerIters, oversamples int, seed uint64, opt Options) (*SVDResult, error) {
	if err := a.Grid.check("SVDCompressed"); err != nil {
		return nil, err
	}
	m, n := a.Rows(), a.Cols()
	if k <= 0 || k > min(m, n) {
		return nil, fmt.Errorf("SVDCompressed: rank k = %d must be in 1..%d for a (%d, %d) matrix", k, min(m, n), m, n)
	}
	if powerIters < 0 || oversamples < 0 {
		return nil, fmt.Errorf("SVDCompressed: powerIters %d and oversamples %d must not be negative", powerIters, oversamples)
	}
	l := min(k+oversamples, m, n)
	kern := opt.kernels()
	orth := func(y Mat, rows []int) (Mat, error) {
		ym, err := FromGrid(y, Grid{RowChunks: rows, ColChunks: []int{y.Cols}})
		if err != nil {
			return Mat{}, err
		}
		q, err := TSQR(ctx, ym, opt)
		if err != nil {
			return Mat{}, err
		}
		defer q.Release()
		return q.Q(ctx)
	}
	y, err := mulRight(ctx, a, TestMatrix(seed, n, l), opt)
	if err != nil {
		return nil, fmt.Errorf("SVDCompressed: A*Omega: %w", err)
	}
	for it := 0; it < powerIters; it++ {
		qy, err := orth(y, a.RowChunks)
		if err != nil {
			return nil, fmt.Errorf("SVDCompressed: power iteration %d: %w", it, err)
		}
		z, err := mulLeftT(ctx, a, qy, opt)
		if err != nil {
			return nil, fmt.Errorf("SVDCompressed: power iteration %d: %w", it, err)
		}
		qz, err := orth(z, a.ColChunks)
		if err != nil {
			return nil, fmt.Errorf("SVDCompressed: power iteration %d: %w", it, err)
		}
		if y, err = mulRight(ctx, a, qz, opt); err != nil {
			return nil, fmt.Errorf("SVDCompressed: power iteration %d: %w", it, err)
		}
	}
	q, err := orth(y, a.RowChunks)
	if err != nil {
		return nil, fmt.Errorf("SVDCompressed: %w", err)
	}
	bt, err := mulLeftT(ctx, a, q, opt) // B^T = A^T Q, n x l
	if err != nil {
		return nil, fmt.Errorf("SVDCompressed: Q^T*A: %w", err)
	}
	ub, s, vt, err := kern.SVD(bt.T())
	if err != nil {
		return nil, fmt.Errorf("SVDCompressed: SVD of Q^T*A: %w", err)
	}
	// Keep k: U = Q*Ub[:, :k].
	ubk := NewMat(ub.Rows, k)
	for i := 0; i < ub.Rows; i++ {
		copy(ubk.Data[i*k:(i+1)*k], ub.Data[i*ub.Cols:i*ub.Cols+k])
	}
	u := NewMat(m, k)
	ro := Offsets(a.RowChunks)
	err = parallel(ctx, kern, len(a.RowChunks), opt.workers(), func(i int) error {
		qi := Mat{Rows: a.RowChunks[i], Cols: l, Data: q.Data[ro[i]*l : ro[i+1]*l]}
		ui := Mat{Rows: a.RowChunks[i], Cols: k, Data: u.Data[ro[i]*k : ro[i+1]*k]}
		return kern.Gemm(false, false, 1, qi, ubk, 0, ui)
	})
	if err != nil {
		return nil, fmt.Errorf("SVDCompressed: U = Q*Ub: %w", err)
	}
	out := &SVDResult{U: u, S: s[:k], Vt: Mat{Rows: k, Cols: n, Data: vt.Data[:k*n]}, Kernels: kern.Name()}
	out.FlipSigns()
	return out, nil
}

// mulRight returns A*x (m x p) for a dense x (n x p), row chunk by row chunk, summing the
// column chunks' products in order.
func mulRight(ctx context.Context, a Matrix, x Mat, opt Options) (Mat, error) {
	if x.Rows != a.Cols() {
		return Mat{}, fmt.Errorf("matrix A is (%d, %d), the operand is %s", a.Rows(), a.Cols(), x.Shape())
	}
	kern := opt.kernels()
	p := x.Cols
	y := NewMat(a.Rows(), p)
	ro, co := Offsets(a.RowChunks), Offsets(a.ColChunks)
	err := parallel(ctx, kern, len(a.RowChunks), opt.workers(), func(i int) error {
		yi := Mat{Rows: a.RowChunks[i], Cols: p, Data: y.Data[ro[i]*p : ro[i+1]*p]}
		for j := range a.ColChunks {
			b, err := a.block(ctx, i, j)
			if err != nil {
				return err
			}
			xj := Mat{Rows: a.ColChunks[j], Cols: p, Data: x.Data[co[j]*p : co[j+1]*p]}
			if err := kern.Gemm(false, false, 1, b, xj, 1, yi); err != nil {
				return err
			}
		}
		return nil
	})
	return y, err
}

// mulLeftT returns A^T*y (n x p) for a dense y (m x p), column chunk by column chunk, summing
// the row chunks' products in order.
func mulLeftT(ctx context.Context, a Matrix, y Mat, opt Options) (Mat, error) {
	if y.Rows != a.Rows() {
		return Mat{}, fmt.Errorf("matrix A^T is (%d, %d), the operand is %s", a.Cols(), a.Rows(), y.Shape())
	}
	kern := opt.kernels()
	p := y.Cols
	z := NewMat(a.Cols(), p)
	ro, co := Offsets(a.RowChunks), Offsets(a.ColChunks)
	err := parallel(ctx, kern, len(a.ColChunks), opt.workers(), func(j int) error {
		zj := Mat{Rows: a.ColChunks[j], Cols: p, Data: z.Data[co[j]*p : co[j+1]*p]}
		for i := range a.RowChunks {
			b, err := a.block(ctx, i, j)
			if err != nil {
				return err
			}
			yi := Mat{Rows: a.RowChunks[i], Cols: p, Data: y.Data[ro[i]*p : ro[i+1]*p]}
			if err := kern.Gemm(true, false, 1, b, yi, 1, zj); err != nil {
				return err
			}
		}
		return nil
	})
	return z, err
}

// RankCutoff is NumPy's default tolerance for pinv, matrix_rank and lstsq of an m x n matrix
// with singular values s: max(m, n) * eps * the largest singular value. Singular values at
// or below it count as zero.
func RankCutoff(m, n int, s []float64) float64 {
	top := 0.0
	for _, v := range s {
		top = math.Max(top, v)
	}
	return float64(max(m, n)) * (math.Nextafter(1, 2) - 1) * top
}

// Rank counts the singular values above cut.
func Rank(s []float64, cut float64) int {
	r := 0
	for _, v := range s {
		if v > cut {
			r++
		}
	}
	return r
}
