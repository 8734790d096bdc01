package blas

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// gpuKernels opens GPU 0, or skips when there is none (fails when GPUNOTES_REQUIRE_GPU is set,
// as on the GPU machine).
func gpuKernels(t *testing.T) *Kernels {
	t.Helper()
	k, err := New(0)
	needKernels(t, "cuBLAS/cuSOLVER", err)
	return k
}

// needKernels skips the test when kernels could not be opened, or fails it where
// GPUNOTES_REQUIRE_GPU says they must be there.
func needKernels(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("GPUNOTES_REQUIRE_GPU") != "" {
		t.Fatalf("GPUNOTES_REQUIRE_GPU is set but the %s kernels are unavailable: %v", what, err)
	}
	t.Skipf("no GPU with the %s kernels here: %v", what, err)
}

func TestLoadReportsMissingLibraries(t *testing.T) {
	err := Load()
	if err == nil {
		t.Skipf("libraries present: %s", Libraries())
	}
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("Load without libraries: %v does not wrap ErrNoLibrary", err)
	}
	if _, err := New(0); !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("New without libraries: %v", err)
	}
}

func randMat(seed uint64, r, c int) linalg.Mat {
	g := rand.New(rand.NewPCG(seed, 1))
	m := linalg.NewMat(r, c)
	for i := range m.Data {
		m.Data[i] = g.NormFloat64()
	}
	return m
}

func dense(m linalg.Mat) *mat.Dense { return mat.NewDense(m.Rows, m.Cols, m.Data) }

func checkSVD(t *testing.T, name string, a linalg.Mat, r *linalg.SVDResult) {
	t.Helper()
	A, U, Vt := dense(a), dense(r.U), dense(r.Vt)
	var us, rec, d mat.Dense
	us.Mul(U, mat.NewDiagDense(len(r.S), r.S))
	rec.Mul(&us, Vt)
	d.Sub(&rec, A)
	if e := mat.Norm(&d, 2) / mat.Norm(A, 2); e > 1e-12 {
		t.Errorf("%s: ||A - U S Vt|| / ||A|| = %.3g", name, e)
	}
	var g mat.Dense
	g.Mul(U.T(), U)
	for i := 0; i < len(r.S); i++ {
		g.Set(i, i, g.At(i, i)-1)
	}
	if e := mat.Norm(&g, 2); e > 1e-12 {
		t.Errorf("%s: ||U^T U - I|| = %.3g", name, e)
	}
	var ref mat.SVD
	ref.Factorize(mat.DenseCopyOf(A), mat.SVDNone)
	want := ref.Values(nil)
	for i, s := range r.S {
		if e := math.Abs(s-want[i]) / want[i]; e > 1e-10 {
			t.Errorf("%s: S[%d] = %v, gonum %v", name, i, s, want[i])
		}
	}
	if !strings.Contains(r.Kernels, "cuBLAS") {
		t.Errorf("%s: kernels %q", name, r.Kernels)
	}
}

func TestGPUSVD(t *testing.T) {
	k := gpuKernels(t)
	ctx := context.Background()
	for _, c := range []struct{ m, n, rc, cc int }{
		{300, 40, 64, 40}, {100, 60, 25, 60}, {40, 300, 40, 70}, {2000, 100, 500, 100},
	} {
		a := randMat(uint64(c.m), c.m, c.n)
		am, _ := linalg.FromMat(a, c.rc, c.cc)
		r, err := linalg.SVD(ctx, am, linalg.Options{Kernels: k, LeafRows: 2 * c.n})
		if err != nil {
			t.Fatal(err)
		}
		checkSVD(t, "svd", a, r)
	}
	// The dense SVD kernel, wide and tall.
	for _, s := range [][2]int{{30, 50}, {50, 30}} {
		a := randMat(9, s[0], s[1])
		u, sv, vt, err := k.SVD(a)
		if err != nil {
			t.Fatal(err)
		}
		checkSVD(t, "dense", a, &linalg.SVDResult{U: u, S: sv, Vt: vt, Kernels: k.Name()})
	}
}

func TestGPUMatMulAndCompressed(t *testing.T) {
	k := gpuKernels(t)
	if k2, err := New(0); err != nil || k2 != k {
		t.Errorf("a second New(0) made new library handles (%p, %p, %v)", k, k2, err)
	}
	ctx := context.Background()
	a, b := randMat(1, 70, 50), randMat(2, 50, 40)
	am, _ := linalg.FromMat(a, 16, 13)
	bm, _ := linalg.FromMat(b, 9, 40)
	p, err := linalg.MatMul(ctx, am, bm, linalg.Options{Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	var want, d mat.Dense
	want.Mul(dense(a), dense(b))
	d.Sub(&want, dense(p.C))
	if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); e > 1e-14 {
		t.Errorf("MatMul relative error %.3g", e)
	}
	// Transposed operands: op(a^T) = a.
	c := linalg.NewMat(70, 40)
	if err := k.Gemm(true, false, 1, a.T(), b, 0, c); err != nil {
		t.Fatal(err)
	}
	d.Sub(&want, dense(c))
	if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); e > 1e-14 {
		t.Errorf("Gemm with a transposed operand: relative error %.3g", e)
	}
	low := linalg.NewMat(200, 90)
	x, y := randMat(3, 200, 5), randMat(4, 5, 90)
	var lr mat.Dense
	lr.Mul(dense(x), dense(y))
	copy(low.Data, lr.RawMatrix().Data)
	lm, _ := linalg.FromMat(low, 50, 30)
	r, err := linalg.SVDCompressed(ctx, lm, 5, 2, 5, 42, linalg.Options{Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	checkSVD(t, "compressed", low, r)
}

// TestGPUSeedSVDTime logs the time of seed 001's SVD (10000 x 1000 in chunks of 1000 x 1000)
// with the GPU kernels, for bench/RESULTS.md; it asserts the accuracy of the result.
func TestGPUSeedSVDTime(t *testing.T) {
	k := gpuKernels(t)
	if testing.Short() {
		t.Skip("short")
	}
	a := randMat(5, 10000, 1000)
	am, _ := linalg.FromMat(a, 1000, 1000)
	for _, lr := range []int{0, 2000} {
		t0 := time.Now()
		r, err := linalg.SVD(context.Background(), am, linalg.Options{Kernels: k, LeafRows: lr})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("GPU SVD 10000 x 1000, chunks 1000 x 1000, leaves >= %d rows: %.3f s (%s)", lr, time.Since(t0).Seconds(), r.Kernels)
		if len(r.S) != 1000 || r.S[0] <= r.S[999] {
			t.Fatalf("singular values %d, first %v last %v", len(r.S), r.S[0], r.S[999])
		}
	}
}

// TestTallSVDTime logs, for bench/RESULTS.md, where the device TSQR's time goes on seed 001's
// 10000 x 1000 (blocks already on the device): the whole TallSVD for several leaf sizes, and the
// dense SVD of a 1000 x 1000 R alone.
func TestTallSVDTime(t *testing.T) {
	k := gpuKernels(t)
	if testing.Short() {
		t.Skip("short")
	}
	a := randMat(5, 10000, 1000)
	rc := make([]int, 10)
	for i := range rc {
		rc[i] = 1000
	}
	mm := &mem{dev: k.dev, s: k.dev.Stream()}
	var ab Blocks
	if err := k.dev.Do(context.Background(), func() error {
		ab = uploadBlocks(t, mm, a, rc, []int{1000})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.dev.Do(context.Background(), func() error { mm.free(); return nil }) }()
	for _, lr := range []int{2000, 2500, 5000, 10000, 2500} {
		t0 := time.Now()
		if _, err := k.TallSVD(context.Background(), ab, lr, false); err != nil {
			t.Fatal(err)
		}
		t.Logf("TallSVD 10000 x 1000, leaves >= %d rows: %.3f s", lr, time.Since(t0).Seconds())
	}
	r := randMat(6, 1000, 1000)
	for i := 0; i < 2; i++ {
		t0 := time.Now()
		if _, _, _, err := k.SVD(r); err != nil {
			t.Fatal(err)
		}
		t.Logf("dense SVD of 1000 x 1000 (cusolverDnDgesvd, with transfers): %.3f s", time.Since(t0).Seconds())
	}
}

// ownKernels opens the own GEMM kernel on GPU 0 (QR and SVD on gonum), or skips without a GPU
// (fails when GPUNOTES_REQUIRE_GPU is set).
func ownKernels(t *testing.T) *OwnKernels {
	t.Helper()
	k, err := NewOwn(0, linalg.CPU())
	needKernels(t, "own GEMM", err)
	return k
}

// TestOwnGemm checks the own tiled kernel against gonum on shapes that are and are not
// multiples of its 64 x 64 tiles and 16-deep slices, with transposed operands and beta != 0.
func TestOwnGemm(t *testing.T) {
	k := ownKernels(t)
	if !strings.Contains(k.Name(), "own GEMM kernel") || !strings.Contains(k.Name(), "gonum") {
		t.Errorf("name %q", k.Name())
	}
	for _, s := range [][3]int{{1, 1, 1}, {64, 64, 16}, {70, 40, 50}, {129, 257, 33}, {1, 300, 1}, {300, 1, 500}, {512, 512, 512}} {
		m, n, kk := s[0], s[1], s[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			a, b := randMat(uint64(m+kk), m, kk), randMat(uint64(n+kk+1), kk, n)
			c0 := randMat(7, m, n)
			var want mat.Dense
			want.Mul(dense(a), dense(b))
			want.Scale(1.5, &want)
			var bc mat.Dense
			bc.Scale(-0.5, dense(c0))
			want.Add(&want, &bc)
			oa, ob := a, b
			if tr[0] {
				oa = a.T()
			}
			if tr[1] {
				ob = b.T()
			}
			c := linalg.Mat{Rows: m, Cols: n, Data: append([]float64(nil), c0.Data...)}
			if err := k.Gemm(tr[0], tr[1], 1.5, oa, ob, -0.5, c); err != nil {
				t.Fatalf("%v %v: %v", s, tr, err)
			}
			var d mat.Dense
			d.Sub(&want, dense(c))
			if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); !(e < 1e-14) {
				t.Errorf("m, n, k = %v, trans %v: relative error %.3g", s, tr, e)
			}
		}
	}
	// beta = 0 must not read C: NaN there stays out of the result.
	a, b := randMat(1, 33, 17), randMat(2, 17, 65)
	c := linalg.NewMat(33, 65)
	for i := range c.Data {
		c.Data[i] = math.NaN()
	}
	if err := k.Gemm(false, false, 1, a, b, 0, c); err != nil {
		t.Fatal(err)
	}
	for i, v := range c.Data {
		if math.IsNaN(v) {
			t.Fatalf("beta = 0 read C: NaN at %d", i)
		}
	}
	if err := k.Gemm(false, false, 1, a, b, 0, linalg.NewMat(33, 64)); err == nil || !strings.Contains(err.Error(), "(33, 64)") {
		t.Errorf("a mismatched C: %v", err)
	}
	// A chunked product and an SVD through the own kernel.
	x, y := randMat(3, 300, 120), randMat(4, 120, 90)
	xm, _ := linalg.FromMat(x, 64, 50)
	ym, _ := linalg.FromMat(y, 37, 90)
	p, err := linalg.MatMul(context.Background(), xm, ym, linalg.Options{Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	var want, d mat.Dense
	want.Mul(dense(x), dense(y))
	d.Sub(&want, dense(p.C))
	if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); e > 1e-14 {
		t.Errorf("chunked MatMul on the own kernel: relative error %.3g", e)
	}
	if p.Kernels != k.Name() {
		t.Errorf("MatMul kernels %q", p.Kernels)
	}
}

// TestOwnGemmTime logs the own kernel's speed on an n x n x n product next to cuBLAS's, on
// operands already on the device (kernel time only), for bench/RESULTS.md.
func TestOwnGemmTime(t *testing.T) {
	own := ownKernels(t)
	if testing.Short() {
		t.Skip("short")
	}
	cb, cbErr := New(0)
	const n = 8192
	a, b := randMat(1, n, n), randMat(2, n, n)
	err := own.dev.Do(context.Background(), func() error {
		mm := &mem{dev: own.dev, s: own.dev.Stream()}
		defer mm.free()
		d, err := mm.uploads(a.Data, b.Data)
		if err != nil {
			return err
		}
		da, db := d[0], d[1]
		dc, err := mm.alloc(n * n)
		if err != nil {
			return err
		}
		run := map[string]func() error{
			"own gpn_dgemm_nn": func() error { return own.gemmNN(n, n, n, 1, da, n, db, n, 0, dc, n) },
		}
		if cbErr == nil {
			one, zero := 1.0, 0.0
			run["cuBLAS cublasDgemm"] = func() error {
				return check("cublasDgemm", cublasDgemm(cb.cublas, opN, opN, n, n, n, &one, db, n, da, n, &zero, dc, n))
			}
		}
		for name, f := range run {
			for i := 0; i < 2; i++ { // the first run warms up
				if err := own.dev.Stream().Synchronize(); err != nil {
					return err
				}
				t0 := time.Now()
				if err := f(); err != nil {
					return err
				}
				if err := own.dev.Stream().Synchronize(); err != nil {
					return err
				}
				if s := time.Since(t0).Seconds(); i == 1 {
					t.Logf("%s: %d^3 product %.4f s, %.2f TFLOP/s (%s)", name, n, s, 2*float64(n)*n*n/s/1e12, own.dev.Info.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// uploadBlocks puts the blocks of m (chunked rc x cc) on the device.
func uploadBlocks(t *testing.T, mm *mem, m linalg.Mat, rc, cc []int) Blocks {
	t.Helper()
	b := Blocks{Grid: linalg.Grid{RowChunks: rc, ColChunks: cc}}
	r0 := 0
	for _, r := range rc {
		c0 := 0
		for _, c := range cc {
			blk := linalg.NewMat(r, c)
			for i := 0; i < r; i++ {
				copy(blk.Data[i*c:(i+1)*c], m.Data[(r0+i)*m.Cols+c0:(r0+i)*m.Cols+c0+c])
			}
			p, err := mm.upload(blk.Data)
			if err != nil {
				t.Fatal(err)
			}
			b.Ptr = append(b.Ptr, p)
			c0 += c
		}
		r0 += r
	}
	return b
}

// TestMatMulBlocks multiplies matrices whose uneven blocks are on the device, with cuBLAS
// and with the own kernel, against gonum.
func TestMatMulBlocks(t *testing.T) {
	own := ownKernels(t)
	gs := []DeviceGemm{own}
	if cb, err := New(0); err == nil {
		gs = append(gs, cb)
	} else if os.Getenv("GPUNOTES_REQUIRE_GPU") != "" {
		t.Fatalf("cuBLAS: %v", err)
	}
	a, b := randMat(1, 150, 97), randMat(2, 97, 130)
	var want mat.Dense
	want.Mul(dense(a), dense(b))
	for _, g := range gs {
		mm := &mem{dev: own.dev, s: own.dev.Stream()}
		var ab, bb Blocks
		err := own.dev.Do(context.Background(), func() error {
			ab = uploadBlocks(t, mm, a, []int{64, 64, 22}, []int{50, 47})
			bb = uploadBlocks(t, mm, b, []int{50, 47}, []int{100, 30})
			return own.dev.Stream().Synchronize()
		})
		if err != nil {
			t.Fatal(err)
		}
		c := make([]float64, 150*130)
		var calls []int
		err = MatMulBlocks(context.Background(), g, ab, bb, c, func(done, total int) { calls = append(calls, done) })
		_ = own.dev.Do(context.Background(), func() error { mm.free(); return nil })
		if err != nil {
			t.Fatalf("%s: %v", g.Name(), err)
		}
		var d mat.Dense
		d.Sub(&want, mat.NewDense(150, 130, c))
		if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); e > 1e-14 {
			t.Errorf("%s: relative error %.3g", g.Name(), e)
		}
		if len(calls) != 3 || calls[2] != 3 {
			t.Errorf("%s: progress calls %v, want 1, 2, 3", g.Name(), calls)
		}
		bad := Blocks{Grid: linalg.Grid{RowChunks: []int{97}, ColChunks: []int{130}}, Ptr: bb.Ptr[:1]}
		if err := MatMulBlocks(context.Background(), g, ab, bad, c, nil); err == nil || !strings.Contains(err.Error(), "column chunks") {
			t.Errorf("mismatched inner chunks: %v", err)
		}
	}
}

// TestTallSVDLeavesTime times the device TSQR of a 1,000,000 x 1000 matrix (ten 100000-row
// chunks, each a differently scaled copy of one random block) with U kept on the device, for
// several leaf sizes. It runs only with GPUNOTES_BENCH_TALL=1 (8 GB of input, 16 GB of work).
func TestTallSVDLeavesTime(t *testing.T) {
	k := gpuKernels(t)
	if os.Getenv("GPUNOTES_BENCH_TALL") == "" {
		t.Skip("set GPUNOTES_BENCH_TALL=1")
	}
	const rows, n = 100000, 1000
	b := randMat(9, rows, n)
	mm := &mem{dev: k.dev, s: k.dev.Stream()}
	defer func() { _ = k.dev.Do(context.Background(), func() error { mm.free(); return nil }) }()
	ab := Blocks{Grid: linalg.Grid{RowChunks: make([]int, 10), ColChunks: []int{n}}}
	err := k.dev.Do(context.Background(), func() error {
		for i := range ab.RowChunks {
			ab.RowChunks[i] = rows
			for j := range b.Data {
				b.Data[j] *= 1 + 0.1*float64(i)
			}
			p, err := mm.upload(b.Data)
			if err != nil {
				return err
			}
			ab.Ptr = append(ab.Ptr, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, lr := range []int{250000, 1000000, 500000, 100000, 250000} {
		t0 := time.Now()
		r, err := k.TallSVD(context.Background(), ab, lr, true)
		if err != nil {
			t.Fatalf("leaves of %d rows: %v", lr, err)
		}
		t.Logf("TallSVD 1000000 x 1000, leaves of %d rows: %.3f s", lr, time.Since(t0).Seconds())
		freeBlocks(k.dev, r.UBlocks)
	}
}

// TestTallSVD checks the device TSQR's SVD on blocks already on the device: several leaves, a
// leaf of one block, leaves shorter than wide, and a single leaf; with U brought to the host
// and with U left on the device in blocks like the input's.
func TestTallSVD(t *testing.T) {
	k := gpuKernels(t)
	for _, c := range []struct{ m, n, rc, leafRows int }{
		{300, 40, 64, 80}, {2000, 100, 500, 200}, {2000, 100, 500, 2000}, {250, 60, 25, 30}, {64, 64, 64, 1},
	} {
		a := randMat(uint64(c.m+c.n), c.m, c.n)
		var rc []int
		for r := c.m; r > 0; r -= c.rc {
			rc = append(rc, min(r, c.rc))
		}
		for _, keep := range []bool{false, true} {
			name := fmt.Sprintf("%+v keepU=%v", c, keep)
			mm := &mem{dev: k.dev, s: k.dev.Stream()}
			var ab Blocks
			if err := k.dev.Do(context.Background(), func() error {
				ab = uploadBlocks(t, mm, a, rc, []int{c.n})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			inUse := poolInUse(t, k.dev)
			r, err := k.TallSVD(context.Background(), ab, c.leafRows, keep)
			_ = k.dev.Do(context.Background(), func() error { mm.free(); return nil })
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !strings.Contains(r.Kernels, "TSQR on the device") {
				t.Errorf("kernels %q", r.Kernels)
			}
			if keep {
				if r.U.Data != nil || len(r.UBlocks.Ptr) != len(rc) || !slices.Equal(r.UBlocks.RowChunks, rc) {
					t.Fatalf("%s: U on the host (%d values) or %d blocks for row chunks %v", name, len(r.U.Data), len(r.UBlocks.Ptr), r.UBlocks.RowChunks)
				}
				r.U = downloadBlocks(t, k.dev, r.UBlocks)
				freeBlocks(k.dev, r.UBlocks)
			}
			checkSVD(t, name, a, &r.SVDResult)
			if got := poolInUse(t, k.dev); got != inUse {
				t.Errorf("%s: pool holds %d bytes after the call, %d before", name, got, inUse)
			}
		}
	}
	// A leaf already upper triangular (identity reflectors, tau = 0: the ormqr path) next to
	// ordinary ones, and columns scaled over three orders of magnitude (the singular values'
	// 1e-10 relative check allows no more).
	tri := randMat(11, 400, 50)
	for i := 0; i < 100; i++ {
		for j := 0; j < min(i, 50); j++ {
			tri.Data[i*50+j] = 0
		}
	}
	scaled := randMat(12, 400, 50)
	for i := 0; i < 400; i++ {
		for j := 0; j < 50; j++ {
			scaled.Data[i*50+j] *= math.Pow(10, -3*float64(j)/49)
		}
	}
	for name, a := range map[string]linalg.Mat{"triangular leaf": tri, "scaled columns": scaled} {
		mm := &mem{dev: k.dev, s: k.dev.Stream()}
		var ab Blocks
		if err := k.dev.Do(context.Background(), func() error {
			ab = uploadBlocks(t, mm, a, []int{100, 100, 100, 100}, []int{50})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		r, err := k.TallSVD(context.Background(), ab, 100, false)
		_ = k.dev.Do(context.Background(), func() error { mm.free(); return nil })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkSVD(t, name, a, &r.SVDResult)
	}
	if _, err := k.TallSVD(context.Background(), Blocks{Grid: linalg.Grid{RowChunks: []int{10}, ColChunks: []int{20}}, Ptr: make([]driver.DevicePtr, 1)}, 1, false); err == nil || !strings.Contains(err.Error(), "rows >= columns") {
		t.Errorf("a wide matrix: %v", err)
	}
}

// TestMatMulPanels leaves C on the device in row panels, with a's blocks read as views into
// row panels of their own (Blocks.LD), against gonum.
func TestMatMulPanels(t *testing.T) {
	k := gpuKernels(t)
	a, b := randMat(3, 150, 97), randMat(4, 97, 130)
	var want mat.Dense
	want.Mul(dense(a), dense(b))
	rc, inner, cc := []int{64, 64, 22}, []int{50, 47}, []int{100, 30}
	mm := &mem{dev: k.dev, s: k.dev.Stream()}
	defer func() { _ = k.dev.Do(context.Background(), func() error { mm.free(); return nil }) }()
	var av, bb Blocks
	err := k.dev.Do(context.Background(), func() error {
		// a as full-width row panels, its blocks views into them.
		pan := uploadBlocks(t, mm, a, rc, []int{97})
		av = Blocks{Grid: linalg.Grid{RowChunks: rc, ColChunks: inner}, LD: 97}
		for _, p := range pan.Ptr {
			av.Ptr = append(av.Ptr, p, p+devPtr(50*8))
		}
		bb = uploadBlocks(t, mm, b, inner, cc)
		return k.dev.Stream().Synchronize()
	})
	if err != nil {
		t.Fatal(err)
	}
	inUse := poolInUse(t, k.dev)
	var calls []int
	panels, err := MatMulPanels(context.Background(), k, av, bb, func(done, total int) { calls = append(calls, done) })
	if err != nil {
		t.Fatal(err)
	}
	c := downloadBlocks(t, k.dev, Blocks{Grid: linalg.Grid{RowChunks: rc, ColChunks: []int{130}}, Ptr: panels})
	freeBlocks(k.dev, Blocks{Ptr: panels})
	var d mat.Dense
	d.Sub(&want, dense(c))
	if e := mat.Norm(&d, 2) / mat.Norm(&want, 2); e > 1e-14 {
		t.Errorf("relative error %.3g", e)
	}
	if !slices.Equal(calls, []int{1, 2, 3}) {
		t.Errorf("progress calls %v, want 1, 2, 3", calls)
	}
	if got := poolInUse(t, k.dev); got != inUse {
		t.Errorf("pool holds %d bytes after freeing C, %d before", got, inUse)
	}
	if _, err := MatMulPanels(context.Background(), k, av, Blocks{Grid: linalg.Grid{RowChunks: []int{97}, ColChunks: cc}, Ptr: bb.Ptr[:2]}, nil); err == nil || !strings.Contains(err.Error(), "column chunks") {
		t.Errorf("mismatched inner chunks: %v", err)
	}
}

// poolInUse reads the bytes the device's pool has handed out.
func poolInUse(t *testing.T, dev *cuda.Device) uint64 {
	var n uint64
	if err := dev.Do(context.Background(), func() error { n = dev.Pool().InUse(); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// downloadBlocks copies packed blocks with one column of chunks into a host matrix.
func downloadBlocks(t *testing.T, dev *cuda.Device, b Blocks) linalg.Mat {
	t.Helper()
	m := linalg.NewMat(b.Rows(), b.Cols())
	off := linalg.Offsets(b.RowChunks)
	err := dev.Do(context.Background(), func() error {
		for i, p := range b.Ptr {
			if err := dev.CopyToHost(m.Data[off[i]*m.Cols:off[i+1]*m.Cols], p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func freeBlocks(dev *cuda.Device, b Blocks) {
	_ = dev.Do(context.Background(), func() error {
		for _, p := range b.Ptr {
			dev.Pool().Free(p)
		}
		return nil
	})
}

// TestSVDPolarAccuracy compares cusolverDnDgesvd and cusolverDnXgesvdp on the R factor of a
// 10000 x 1000 uniform matrix (seed 001's), for time and for the 1e-12 tolerances.
func TestSVDPolarAccuracy(t *testing.T) {
	k := gpuKernels(t)
	if !haveGesvdp {
		t.Skip("cusolverDnXgesvdp not in this cuSOLVER")
	}
	g := rand.New(rand.NewPCG(7, 7))
	a := linalg.NewMat(10000, 1000)
	for i := range a.Data {
		a.Data[i] = g.Float64()
	}
	am, _ := linalg.FromMat(a, 10000, 1000)
	q, err := linalg.TSQR(context.Background(), am, linalg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := q.R
	gesvd := func(a linalg.Mat) (linalg.Mat, []float64, linalg.Mat, error) {
		haveGesvdp = false
		defer func() { haveGesvdp = true }()
		return k.SVD(a)
	}
	for name, svd := range map[string]func(linalg.Mat) (linalg.Mat, []float64, linalg.Mat, error){"gesvd": gesvd, "gesvdp": k.svdPolar} {
		for i := 0; i < 2; i++ {
			t0 := time.Now()
			u, sv, vt, err := svd(r)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			s := time.Since(t0).Seconds()
			U := dense(u)
			var gg, us, rec, d mat.Dense
			gg.Mul(U.T(), U)
			for j := 0; j < 1000; j++ {
				gg.Set(j, j, gg.At(j, j)-1)
			}
			us.Mul(U, mat.NewDiagDense(1000, sv))
			rec.Mul(&us, dense(vt))
			d.Sub(&rec, dense(r))
			t.Logf("%s of R (1000 x 1000): %.3f s, ||U^T U - I||_F %.3g, ||R - U S Vt||_F/||R||_F %.3g", name, s, mat.Norm(&gg, 2), mat.Norm(&d, 2)/mat.Norm(dense(r), 2))
		}
	}
}

// TestPanelGemmTime compares, for one 10000-row panel of a 40000^3 product (GPUNOTES_BENCH_TALL=1
// only: 6.4 GB of device memory), the sixteen 10000^3 block products MatMulPanels makes with one
// product over contiguous operands; the contents do not matter for the time.
func TestPanelGemmTime(t *testing.T) {
	k := gpuKernels(t)
	if os.Getenv("GPUNOTES_BENCH_TALL") == "" {
		t.Skip("set GPUNOTES_BENCH_TALL=1")
	}
	const r, n = 10000, 40000
	err := k.dev.Do(context.Background(), func() error {
		mm := &mem{dev: k.dev, s: k.dev.Stream()}
		defer mm.free()
		b := make([]devPtr, 3)
		var err error
		for i, sz := range []int{r * n, n * n, r * n} { // A panel, B, C panel
			if b[i], err = mm.alloc(sz); err != nil {
				return err
			}
			if err := driver.MemsetD32Async(b[i], 0, uint64(sz)*2, k.dev.Stream()); err != nil {
				return err
			}
		}
		da, db, dc := b[0], b[1], b[2]
		one := 1.0
		blocks := func() error { // row-major, as MatMulPanels: 4 column blocks x 4 inner blocks
			for j := 0; j < 4; j++ {
				for kk := 0; kk < 4; kk++ {
					beta := 1.0
					if kk == 0 {
						beta = 0
					}
					if err := k.gemmDev(r, r, r, 1, da+devPtr(kk*r*8), n, db+devPtr((kk*r*n+j*r)*8), n, beta, dc+devPtr(j*r*8), n); err != nil {
						return err
					}
				}
			}
			return nil
		}
		whole := func() error {
			zero := 0.0
			return check("cublasDgemm", cublasDgemm(k.cublas, opN, opN, n, r, n, &one, db, n, da, n, &zero, dc, n))
		}
		for _, c := range []struct {
			name string
			f    func() error
		}{{"16 block products", blocks}, {"one product", whole}, {"16 block products", blocks}, {"one product", whole}} {
			if err := k.dev.Stream().Synchronize(); err != nil {
				return err
			}
			t0 := time.Now()
			if err := c.f(); err != nil {
				return err
			}
			if err := k.dev.Stream().Synchronize(); err != nil {
				return err
			}
			s := time.Since(t0).Seconds()
			t.Logf("%s: %d x %d x %d in %.4f s, %.2f TFLOP/s", c.name, r, n, n, s, 2*float64(r)*n*n/s/1e12)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
