package blas

import (
	"context"
	"fmt"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// TallSVDBytes returns the device memory TallSVD needs besides its input blocks, and besides
// U's blocks when it keeps U on the device (as many bytes as the input).
func TallSVDBytes(a Blocks, leafRows int, keepU bool) uint64 {
	n := a.Cols()
	maxLeaf, leaves := 0, 0
	for _, l := range groupLeaves(a.RowChunks, leafRows) {
		maxLeaf = max(maxLeaf, l.rows)
		leaves++
	}
	m := a.Rows()
	// The leaves' column-major copies, the stacked R factors, and per leaf U column-major
	// (and row-major too, to copy to the host, unless U is kept).
	perLeaf := 2
	if keepU {
		perLeaf = 1
	}
	return uint64(m*n+leaves*n*n+perLeaf*maxLeaf*n) * 8
}

type leafSpan struct{ c0, c1, row0, rows int }

// groupLeaves groups consecutive row chunks into leaves of at least leafRows rows (the last
// leaf may be shorter).
func groupLeaves(rc []int, leafRows int) []leafSpan {
	var out []leafSpan
	row := 0
	for c := 0; c < len(rc); {
		s := leafSpan{c0: c, row0: row}
		for c < len(rc) && (c == s.c0 || s.rows < leafRows) {
			s.rows += rc[c]
			c++
		}
		s.c1 = c
		row += s.rows
		out = append(out, s)
	}
	return out
}

// TallSVDResult is TallSVD's result: S and V on the host, U either on the host (U.Data) or,
// when asked for, left on the device as one row-major block per row chunk of the input
// (UBlocks, allocated from the device's pool and owned by the caller).
type TallSVDResult struct {
	linalg.SVDResult
	UBlocks Blocks
}

// TallSVD computes the thin SVD of a tall-and-skinny matrix (m >= n, one column of chunks)
// whose row blocks are on the device, by TSQR without leaving it: each leaf (a run of row
// chunks of at least leafRows rows) is factored with cusolverDnDgeqrf, the stacked R factors
// once more, R's SVD is taken, and U is formed leaf by leaf (cusolverDnDormqr), then copied
// into the host's U, or with keepU left on the device in blocks like a's. Only R factors (and
// U, unless kept) cross to the host. Signs are normalized as linalg's.
func (k *Kernels) TallSVD(ctx context.Context, a Blocks, leafRows int, keepU bool) (*TallSVDResult, error) {
	r, _, err := k.tall(ctx, a, leafRows, keepU, true)
	return r, err
}

// TallQRResult is TallQR's result: R (n x n, upper triangular, row-major) on the host and Q
// on the device as one row-major block per row chunk of the input (QBlocks, allocated from
// the device's pool and owned by the caller).
type TallQRResult struct {
	R       linalg.Mat
	QBlocks Blocks
	Kernels string
}

// TallQR computes the thin QR of a tall-and-skinny matrix (m >= n, one column of chunks)
// whose row blocks are on the device, as TallSVD's TSQR does (leaf QRs, the stacked R
// factors' QR) with Q = Q_leaves * Q_stack formed on the device from the identity and left
// there in blocks like a's. R is the stacked QR's (Householder signs, as linalg.TSQR's for a
// tree of one level).
func (k *Kernels) TallQR(ctx context.Context, a Blocks, leafRows int) (*TallQRResult, error) {
	r, r2, err := k.tall(ctx, a, leafRows, true, false)
	if err != nil {
		return nil, err
	}
	return &TallQRResult{R: r2, QBlocks: r.UBlocks, Kernels: k.name + ", TSQR on the device"}, nil
}

// tall is TallSVD (svd) or TallQR (U is then Q, formed from the identity); it returns the
// stacked R factors' R too.
func (k *Kernels) tall(ctx context.Context, a Blocks, leafRows int, keepU, svd bool) (*TallSVDResult, linalg.Mat, error) {
	what := "TallSVD"
	if !svd {
		what = "TallQR"
	}
	if len(a.ColChunks) != 1 || len(a.Ptr) != len(a.RowChunks) {
		return nil, linalg.Mat{}, fmt.Errorf("%s needs one column of chunks, got %d", what, len(a.ColChunks))
	}
	m, n := a.Rows(), a.ColChunks[0]
	if m < n || n == 0 {
		return nil, linalg.Mat{}, fmt.Errorf("%s of a (%d, %d) matrix: want rows >= columns > 0", what, m, n)
	}
	t0 := time.Now()
	leaves := groupLeaves(a.RowChunks, leafRows)
	type leaf struct {
		leafSpan
		acol, tau devPtr
		k         int
		v1        []float64 // the top k x k of the reflectors, column-major, unit lower
		tauHost   []float64
	}
	ls := make([]leaf, len(leaves))
	K := 0 // rows of the stacked R factors
	for i, s := range leaves {
		ls[i] = leaf{leafSpan: s, k: min(s.rows, n)}
		K += ls[i].k
	}
	var u linalg.Mat
	ub := Blocks{Grid: a.Grid, Ptr: make([]devPtr, len(a.Ptr))}
	if !keepU {
		u = linalg.NewMat(m, n)
	}
	freeU := func() {
		_ = k.dev.Do(context.Background(), func() error {
			for _, p := range ub.Ptr {
				if p != 0 {
					k.dev.Pool().Free(p)
				}
			}
			return nil
		})
	}
	var r2 linalg.Mat
	stackHost := make([]float64, K*n) // column-major K x n
	var stack, tau2 devPtr
	one, zero := 1.0, 0.0
	mm := &mem{dev: k.dev, s: k.dev.Stream()}
	defer func() { _ = k.dev.Do(context.Background(), func() error { mm.free(); return nil }) }()

	// Leaves: column-major copies, QR, and their R factors stacked on the host.
	err := k.dev.Do(ctx, func() error {
		off := 0
		for i := range ls {
			l := &ls[i]
			var err error
			if l.acol, err = mm.alloc(l.rows * n); err != nil {
				return err
			}
			if l.tau, err = mm.alloc(l.k); err != nil {
				return err
			}
			ro := 0
			for c := l.c0; c < l.c1; c++ {
				rb := a.RowChunks[c]
				// Row-major block (rb x n) is column-major n x rb; its transpose goes to rows
				// ro.. of the leaf's column-major copy.
				dst := l.acol + devPtr(ro*8)
				if err := check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(rb), int32(n), &one, a.Ptr[c], int32(a.ld(0)), &zero, dst, int32(l.rows), dst, int32(l.rows))); err != nil {
					return err
				}
				ro += rb
			}
			if err := k.geqrf(mm, l.rows, n, l.acol, l.tau); err != nil {
				return fmt.Errorf("leaf %d (%d rows): %w", i, l.rows, err)
			}
			// R_i: the upper k x n part (reflectors below its diagonal are left out).
			t, err := mm.alloc(l.k * n)
			if err != nil {
				return err
			}
			if err := check("cublasDgeam", cublasDgeam(k.cublas, opN, opN, int32(l.k), int32(n), &one, l.acol, int32(l.rows), &zero, t, int32(l.k), t, int32(l.k))); err != nil {
				return err
			}
			top := make([]float64, l.k*n)
			if err := mm.download(top, t); err != nil {
				return err
			}
			for j := 0; j < n; j++ {
				for r := 0; r <= min(j, l.k-1); r++ {
					stackHost[off+r+j*K] = top[r+j*l.k]
				}
			}
			if l.k == n { // the reflectors' top block, for applyThin
				l.v1 = top
				for j := 0; j < n; j++ {
					for r := 0; r <= j; r++ {
						l.v1[r+j*n] = 0
					}
					l.v1[j+j*n] = 1
				}
				l.tauHost = make([]float64, n)
				if err := mm.download(l.tauHost, l.tau); err != nil {
					return err
				}
			}
			off += l.k
		}
		// The stacked QR.
		var err error
		if stack, err = mm.upload(stackHost); err != nil {
			return err
		}
		if tau2, err = mm.alloc(n); err != nil {
			return err
		}
		if err := k.geqrf(mm, K, n, stack, tau2); err != nil {
			return fmt.Errorf("stacked R (%d x %d): %w", K, n, err)
		}
		if err := mm.download(stackHost, stack); err != nil {
			return err
		}
		r2 = linalg.NewMat(n, n) // row-major upper triangle
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				r2.Data[i*n+j] = stackHost[i+j*K]
			}
		}
		return nil
	})
	if err != nil {
		return nil, linalg.Mat{}, fmt.Errorf("TSQR on GPU %d: %w", k.dev.Info.Index, err)
	}
	tLeaves := time.Now()
	var ur, vt linalg.Mat
	var s []float64
	if svd {
		// Not the Jacobi SVD (gesvdj): 0.06 s faster than gesvd on a 1000 x 1000 R, but it
		// left ||U^T U - I|| at 1.7e-11 on seed 001's matrix, above the 1e-12 asked for.
		if ur, s, vt, err = k.SVD(r2); err != nil {
			return nil, linalg.Mat{}, fmt.Errorf("SVD of R (%d x %d): %w", n, n, err)
		}
		// Signs as linalg's, fixed on the small factors: U = Q*U_R flips with U_R's columns.
		small := &linalg.SVDResult{U: ur, S: s, Vt: vt}
		small.FlipSigns()
	} else {
		ur = linalg.NewMat(n, n) // Q = Q * I
		for i := 0; i < n; i++ {
			ur.Data[i*n+i] = 1
		}
	}
	tSVD := time.Now()
	// U = Q * U_R: W = Q2 * [U_R; 0] for the stack, then each leaf's Q on its rows of W.
	err = k.dev.Do(ctx, func() error {
		w0 := make([]float64, K*n) // column-major K x n
		for r := 0; r < n; r++ {
			for c := 0; c < n; c++ {
				w0[r+c*K] = ur.Data[r*n+c]
			}
		}
		w, err := mm.upload(w0)
		if err != nil {
			return err
		}
		if err := k.ormqr(mm, K, n, n, stack, K, tau2, w, K); err != nil {
			return fmt.Errorf("stacked Q: %w", err)
		}
		maxRows := 0
		for _, l := range ls {
			maxRows = max(maxRows, l.rows)
		}
		ci, err := mm.alloc(maxRows * n)
		if err != nil {
			return err
		}
		var ti devPtr // row-major staging of a leaf's U on its way to the host
		if !keepU {
			if ti, err = mm.alloc(maxRows * n); err != nil {
				return err
			}
		}
		off := 0
		for i, l := range ls {
			if err := ctx.Err(); err != nil {
				return err
			}
			done, err := k.applyThin(mm, l.rows, n, l.acol, l.v1, l.tauHost, w+devPtr(off*8), K, ci)
			if err != nil {
				return fmt.Errorf("leaf %d Q: %w", i, err)
			}
			if !done {
				if err := driver.MemsetD32Async(ci, 0, uint64(l.rows*n)*2, k.dev.Stream()); err != nil {
					return err
				}
				if err := check("cublasDgeam", cublasDgeam(k.cublas, opN, opN, int32(l.k), int32(n), &one, w+devPtr(off*8), int32(K), &zero, ci, int32(l.rows), ci, int32(l.rows))); err != nil {
					return err
				}
				if err := k.ormqr(mm, l.rows, n, l.k, l.acol, l.rows, l.tau, ci, l.rows); err != nil {
					return fmt.Errorf("leaf %d Q: %w", i, err)
				}
			}
			if keepU {
				// Each chunk's rows of the column-major leaf, transposed into its own
				// row-major block.
				ro := 0
				for c := l.c0; c < l.c1; c++ {
					rb := a.RowChunks[c]
					if ub.Ptr[c], err = k.dev.Pool().Alloc(uint64(max(rb*n, 1)) * 8); err != nil {
						return fmt.Errorf("block %d of U: %w", c, err)
					}
					if err := check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(n), int32(rb), &one, ci+devPtr(ro*8), int32(l.rows), &zero, ub.Ptr[c], int32(n), ub.Ptr[c], int32(n))); err != nil {
						return err
					}
					ro += rb
				}
				off += l.k
				continue
			}
			// Column-major rows x n to row-major: its transpose, column-major n x rows.
			if err := check("cublasDgeam", cublasDgeam(k.cublas, opT, opN, int32(n), int32(l.rows), &one, ci, int32(l.rows), &zero, ti, int32(n), ti, int32(n))); err != nil {
				return err
			}
			if err := mm.download(u.Data[l.row0*n:(l.row0+l.rows)*n], ti); err != nil {
				return err
			}
			off += l.k
		}
		return nil
	})
	if err == nil && keepU {
		// The blocks are read by later work on other streams (downloads, a later product).
		err = k.dev.Do(ctx, func() error { return k.dev.Stream().Synchronize() })
	}
	if err != nil {
		freeU()
		return nil, linalg.Mat{}, fmt.Errorf("forming U on GPU %d: %w", k.dev.Info.Index, err)
	}
	cuda.Trace("%s %d x %d, %d leaves: leaf and stacked QRs %.3f s, SVD of R %.3f s, U %.3f s (kept on the device: %v)",
		what, m, n, len(ls), tLeaves.Sub(t0).Seconds(), tSVD.Sub(tLeaves).Seconds(), time.Since(tSVD).Seconds(), keepU)
	r := &TallSVDResult{SVDResult: linalg.SVDResult{U: u, S: s, Vt: vt, Kernels: k.name + ", TSQR on the device"}}
	if keepU {
		r.UBlocks = ub
	}
	return r, r2, nil
}

// applyThin writes Q*[w; 0] into c (column-major rows x n, leading dimension rows) for the QR
// of a leaf (geqrf's reflectors in a, rows x n, leading dimension rows; v1 their top n x n,
// unit lower triangular, on the host; tau on the host) with w n x n at leading dimension ldw:
// c = [w; 0] - V*Y, Y = T*(V1^T*w), T^-1 = striu(V^T*V) + diag(1/tau), as linalg's applyThin
// does on the CPU (the UT transform). That is a Gram matrix, a triangular solve and products
// (3*rows*n^2 flops at GEMM speed) instead of cusolverDnDormqr applying every reflector to all
// rows of [w; 0] (4*rows*n^2). It reports false, having done nothing, where it does not apply
// (a leaf shorter than wide, an identity reflector with tau = 0).
func (k *Kernels) applyThin(mm *mem, rows, n int, a devPtr, v1, tau []float64, w devPtr, ldw int, c devPtr) (bool, error) {
	if v1 == nil || rows < n || len(tau) != n {
		return false, nil
	}
	for _, t := range tau {
		if t == 0 {
			return false, nil
		}
	}
	one, zero, minus := 1.0, 0.0, -1.0
	dv1, err := mm.upload(v1)
	if err != nil {
		return true, err
	}
	g, err := mm.alloc(n * n)
	if err != nil {
		return true, err
	}
	// G = V1^T*V1 + Vb^T*Vb, upper triangle (Vb: the rows below the top n, in place in a).
	if err := check("cublasDsyrk", cublasDsyrk(k.cublas, fillUpper, opT, int32(n), int32(n), &one, dv1, int32(n), &zero, g, int32(n))); err != nil {
		return true, err
	}
	vb := a + devPtr(n*8)
	if rows > n {
		if err := check("cublasDsyrk", cublasDsyrk(k.cublas, fillUpper, opT, int32(n), int32(rows-n), &one, vb, int32(rows), &one, g, int32(n))); err != nil {
			return true, err
		}
	}
	// Its diagonal becomes 1/tau (on the host: n values in an n x n matrix).
	gh := make([]float64, n*n)
	if err := mm.download(gh, g); err != nil {
		return true, err
	}
	for j := 0; j < n; j++ {
		gh[j+j*n] = 1 / tau[j]
	}
	if err := k.dev.CopyToDevice(g, gh); err != nil {
		return true, err
	}
	// Y = T * (V1^T * w).
	y, err := mm.alloc(n * n)
	if err != nil {
		return true, err
	}
	if err := check("cublasDgemm", cublasDgemm(k.cublas, opT, opN, int32(n), int32(n), int32(n), &one, dv1, int32(n), w, int32(ldw), &zero, y, int32(n))); err != nil {
		return true, err
	}
	if err := check("cublasDtrsm", cublasDtrsm(k.cublas, sideLeft, fillUpper, opN, diagNonUnit, int32(n), int32(n), &one, g, int32(n), y, int32(n))); err != nil {
		return true, err
	}
	// Top rows: w - V1*Y; the rest: -Vb*Y.
	if err := check("cublasDgeam", cublasDgeam(k.cublas, opN, opN, int32(n), int32(n), &one, w, int32(ldw), &zero, c, int32(rows), c, int32(rows))); err != nil {
		return true, err
	}
	if err := check("cublasDgemm", cublasDgemm(k.cublas, opN, opN, int32(n), int32(n), int32(n), &minus, dv1, int32(n), y, int32(n), &one, c, int32(rows))); err != nil {
		return true, err
	}
	if rows > n {
		if err := check("cublasDgemm", cublasDgemm(k.cublas, opN, opN, int32(rows-n), int32(n), int32(n), &minus, vb, int32(rows), y, int32(n), &zero, c+devPtr(n*8), int32(rows))); err != nil {
			return true, err
		}
	}
	return true, nil
}

// geqrf factors the column-major m x n matrix at a (leading dimension m) in place.
func (k *Kernels) geqrf(mm *mem, m, n int, a, tau devPtr) error {
	var lwork int32
	if err := check("cusolverDnDgeqrf_bufferSize", cusolverDgeqrfBuf(k.cusolver, int32(m), int32(n), a, int32(m), &lwork)); err != nil {
		return err
	}
	b, err := mm.allocs(int(lwork), 1) // workspace, info
	if err != nil {
		return err
	}
	work, info := b[0], b[1]
	return check("cusolverDnDgeqrf", cusolverDgeqrf(k.cusolver, int32(m), int32(n), a, int32(m), tau, work, lwork, info))
}

// ormqr overwrites the column-major m x p matrix c with Q*c, Q the m x m factor of a QR of
// kk reflectors in a (leading dimension lda).
func (k *Kernels) ormqr(mm *mem, m, p, kk int, a devPtr, lda int, tau, c devPtr, ldc int) error {
	var lwork int32
	if err := check("cusolverDnDormqr_bufferSize", cusolverDormqrBuf(k.cusolver, 0, 0, int32(m), int32(p), int32(kk), a, int32(lda), tau, c, int32(ldc), &lwork)); err != nil {
		return err
	}
	b, err := mm.allocs(int(lwork), 1) // workspace, info
	if err != nil {
		return err
	}
	work, info := b[0], b[1]
	return check("cusolverDnDormqr", cusolverDormqr(k.cusolver, 0, 0, int32(m), int32(p), int32(kk), a, int32(lda), tau, c, int32(ldc), work, lwork, info))
}

// svdPolar is SVD of a square or wide row-major a through cusolverDnXgesvdp (the SVD by polar
// decomposition), which wants a column-major matrix with at least as many rows as columns:
// row-major a (r x c, c >= r) is that matrix, M = a^T (c x r). M = U_M*S*V_M^T gives
// a = V_M*S*U_M^T: vt is U_M^T, which column-major U_M already is in row-major terms, and u is
// V_M transposed.
func (k *Kernels) svdPolar(a linalg.Mat) (linalg.Mat, []float64, linalg.Mat, error) {
	if err := a.Check("SVD"); err != nil {
		return linalg.Mat{}, nil, linalg.Mat{}, err
	}
	r, c := a.Rows, a.Cols
	if c < r || r == 0 {
		return linalg.Mat{}, nil, linalg.Mat{}, fmt.Errorf("SVD (polar) of a %s matrix: want 0 < rows <= columns", a.Shape())
	}
	s := make([]float64, r)
	vt := linalg.NewMat(r, c)
	vbuf := make([]float64, r*r)       // column-major V_M, r x r
	const f64, vectors, econ = 1, 1, 1 // CUDA_R_64F, CUSOLVER_EIG_MODE_VECTOR
	err := k.do(func(mm *mem) error {
		dm, err := mm.upload(a.Data)
		if err != nil {
			return err
		}
		var params uintptr
		if err := check("cusolverDnCreateParams", cusolverCreateParams(&params)); err != nil {
			return err
		}
		defer cusolverDestroyParams(params)
		b, err := mm.allocs(r, c*r, r*r, 1)
		if err != nil {
			return err
		}
		ds, du, dv, info := b[0], b[1], b[2], b[3]
		M, N := int64(c), int64(r)
		var devBytes, hostBytes uint64
		if err := check("cusolverDnXgesvdp_bufferSize", cusolverXgesvdpBuf(k.cusolver, params, vectors, econ, M, N, f64, dm, M, f64, ds, f64, du, M, f64, dv, N, f64, &devBytes, &hostBytes)); err != nil {
			return err
		}
		work, err := mm.alloc(int((devBytes + 7) / 8))
		if err != nil {
			return err
		}
		host := make([]byte, max(hostBytes, 1))
		var errSigma float64
		if err := check("cusolverDnXgesvdp", cusolverXgesvdp(k.cusolver, params, vectors, econ, M, N, f64, dm, M, f64, ds, f64, du, M, f64, dv, N, f64, work, devBytes, &host[0], hostBytes, info, &errSigma)); err != nil {
			return err
		}
		return mm.downloads([][]float64{s, vt.Data, vbuf}, ds, du, dv)
	})
	if err != nil {
		return linalg.Mat{}, nil, linalg.Mat{}, fmt.Errorf("SVD (polar) of a %s matrix on the GPU: %w", a.Shape(), err)
	}
	return linalg.Mat{Rows: r, Cols: r, Data: vbuf}.T(), s, vt, nil
}
