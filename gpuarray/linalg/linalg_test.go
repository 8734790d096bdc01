package linalg_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/linalg/openblas"

	"gonum.org/v1/gonum/mat"
)

// kernelSets returns the block kernels to test: gonum's always, OpenBLAS's where it loads
// (required under CI, where .ci/apt-deps.sh installs it).
func kernelSets(t *testing.T) []linalg.Kernels {
	t.Helper()
	ks := []linalg.Kernels{linalg.CPU()}
	k, err := openblas.New()
	switch {
	case err == nil:
		ks = append(ks, k)
	case os.Getenv("CI") == "true":
		t.Fatalf("OpenBLAS is required under CI (.ci/apt-deps.sh installs libopenblas0-pthread): %v", err)
	default:
		t.Logf("OpenBLAS kernels not tested: %v", err)
	}
	return ks
}

func randMat(seed uint64, r, c int) linalg.Mat {
	g := rand.New(rand.NewPCG(seed, 7))
	m := linalg.NewMat(r, c)
	for i := range m.Data {
		m.Data[i] = g.NormFloat64()
	}
	return m
}

func frob(m linalg.Mat) float64 {
	s := 0.0
	for _, v := range m.Data {
		s += v * v
	}
	return math.Sqrt(s)
}

func mul(a, b linalg.Mat) linalg.Mat {
	c := linalg.NewMat(a.Rows, b.Cols)
	for i := 0; i < a.Rows; i++ {
		for k := 0; k < a.Cols; k++ {
			x := a.At(i, k)
			for j := 0; j < b.Cols; j++ {
				c.Data[i*c.Cols+j] += x * b.At(k, j)
			}
		}
	}
	return c
}

// orthErr returns ||M^T M - I||_F for the columns of m.
func orthErr(m linalg.Mat) float64 {
	g := mul(m.T(), m)
	for i := 0; i < g.Rows; i++ {
		g.Data[i*g.Cols+i]--
	}
	return frob(g)
}

// checkSVD checks a thin linalg.SVD of a against the tolerances.
func checkSVD(t *testing.T, name string, a linalg.Mat, r *linalg.SVDResult) {
	t.Helper()
	k := len(r.S)
	us := linalg.NewMat(r.U.Rows, k)
	for i := 0; i < r.U.Rows; i++ {
		for j := 0; j < k; j++ {
			us.Data[i*k+j] = r.U.At(i, j) * r.S[j]
		}
	}
	rec := mul(us, r.Vt)
	for i := range rec.Data {
		rec.Data[i] -= a.Data[i]
	}
	if e := frob(rec) / frob(a); e > 1e-12 {
		t.Errorf("%s: ||A - U S Vt|| / ||A|| = %.3g > 1e-12", name, e)
	}
	if e := orthErr(r.U); e > 1e-12 {
		t.Errorf("%s: ||U^T U - I|| = %.3g > 1e-12", name, e)
	}
	if e := orthErr(r.Vt.T()); e > 1e-12 {
		t.Errorf("%s: ||V^T V - I|| = %.3g > 1e-12", name, e)
	}
	var ref mat.SVD
	if !ref.Factorize(mat.NewDense(a.Rows, a.Cols, append([]float64(nil), a.Data...)), mat.SVDNone) {
		t.Fatalf("%s: gonum's dense SVD failed", name)
	}
	want := ref.Values(nil)
	if len(want) < k {
		t.Fatalf("%s: %d singular values, gonum has %d", name, k, len(want))
	}
	for i := 0; i < k; i++ {
		if d := math.Abs(r.S[i]-want[i]) / want[i]; d > 1e-10 {
			t.Errorf("%s: singular value %d = %v, gonum %v (relative %.3g > 1e-10)", name, i, r.S[i], want[i], d)
		}
	}
}

// svdCase is one chunked SVD to check.
type svdCase struct {
	m, n, rc, cc int
	opt          linalg.Options
}

func TestSVDShapesAndChunkings(t *testing.T) {
	cases := []svdCase{
		{200, 30, 50, 30, linalg.Options{}},
		{257, 40, 64, 40, linalg.Options{}},                     // uneven last chunk
		{100, 60, 25, 60, linalg.Options{}},                     // leaves with fewer rows than columns
		{500, 20, 37, 20, linalg.Options{FanIn: 2}},             // a deep binary tree
		{500, 20, 37, 20, linalg.Options{LeafRows: 120}},        // chunks grouped into leaves
		{300, 25, 300, 25, linalg.Options{}},                    // one chunk
		{1000, 8, 100, 8, linalg.Options{Workers: 1, FanIn: 3}}, // one worker
		{30, 200, 30, 45, linalg.Options{}},                     // short-and-fat: through the transpose
		{40, 40, 10, 40, linalg.Options{}},                      // square
	}
	for _, k := range kernelSets(t) {
		for _, c := range cases {
			c.opt.Kernels = k
			c.check(t)
		}
	}
}

func (c svdCase) check(t *testing.T) {
	t.Helper()
	name := fmt.Sprintf("%s: %dx%d chunks %dx%d %+v", c.opt.Kernels.Name(), c.m, c.n, c.rc, c.cc, c.opt)
	a := randMat(uint64(c.m*c.n), c.m, c.n)
	am, err := linalg.FromMat(a, c.rc, c.cc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := linalg.SVD(context.Background(), am, c.opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.U.Rows != c.m || r.Vt.Cols != c.n || len(r.S) != min(c.m, c.n) {
		t.Fatalf("%s: U %s, S %d, Vt %s", name, r.U.Shape(), len(r.S), r.Vt.Shape())
	}
	if r.Kernels != c.opt.Kernels.Name() {
		t.Errorf("%s: kernels %q", name, r.Kernels)
	}
	checkSVD(t, name, a, r)
}

func TestTSQR(t *testing.T) {
	for _, k := range kernelSets(t) {
		t.Run(k.Name(), func(t *testing.T) { testTSQR(t, k) })
	}
}

func testTSQR(t *testing.T, k linalg.Kernels) {
	ctx := context.Background()
	a := randMat(3, 333, 17)
	am, _ := linalg.FromMat(a, 40, 17)
	q, err := linalg.TSQR(ctx, am, linalg.Options{FanIn: 3, LeafRows: 70, Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	qm, err := q.Q(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := orthErr(qm); e > 1e-12 {
		t.Errorf("||Q^T Q - I|| = %.3g", e)
	}
	for i := 0; i < q.R.Rows; i++ {
		for j := 0; j < i; j++ {
			if q.R.At(i, j) != 0 {
				t.Fatalf("R(%d, %d) = %v below the diagonal", i, j, q.R.At(i, j))
			}
		}
	}
	d := mul(qm, q.R)
	for i := range d.Data {
		d.Data[i] -= a.Data[i]
	}
	if e := frob(d) / frob(a); e > 1e-13 {
		t.Errorf("||QR - A|| / ||A|| = %.3g", e)
	}
	// The tree depends on the chunking only: the same input gives the same R bit for bit.
	q2, err := linalg.TSQR(ctx, am, linalg.Options{FanIn: 3, LeafRows: 70, Workers: 1, Kernels: k})
	if err != nil {
		t.Fatal(err)
	}
	for i := range q.R.Data {
		if q.R.Data[i] != q2.R.Data[i] {
			t.Fatalf("R differs between runs with 2 and 1 workers at %d: %v vs %v", i, q.R.Data[i], q2.R.Data[i])
		}
	}
}

func TestTSQRNeedsOneColumnOfChunks(t *testing.T) {
	am, _ := linalg.FromMat(randMat(1, 100, 20), 10, 10)
	_, err := linalg.TSQR(context.Background(), am, linalg.Options{})
	if err == nil || !strings.Contains(err.Error(), "single column of chunks") || !strings.Contains(err.Error(), "(100, 20)") {
		t.Fatalf("TSQR of a 2-column grid: %v", err)
	}
	_, err = linalg.SVD(context.Background(), am, linalg.Options{})
	if !errors.Is(err, linalg.ErrNotTallSkinny) || !strings.Contains(err.Error(), "SVDCompressed") {
		t.Fatalf("SVD of a 2-d grid: %v", err)
	}
}

func TestMatMul(t *testing.T) {
	for _, k := range kernelSets(t) {
		t.Run(k.Name(), func(t *testing.T) { testMatMul(t, k) })
	}
}

func testMatMul(t *testing.T, k linalg.Kernels) {
	ctx := context.Background()
	cases := []struct{ m, k, n, ar, ac, br, bc int }{
		{50, 40, 30, 16, 16, 16, 7},
		{50, 40, 30, 16, 13, 9, 30},  // inner chunkings differ
		{1, 40, 1, 1, 40, 40, 1},     // vectors
		{64, 64, 64, 64, 64, 64, 64}, // one block
		{33, 1, 20, 5, 1, 1, 6},
	}
	for _, c := range cases {
		a, b := randMat(1, c.m, c.k), randMat(2, c.k, c.n)
		am, _ := linalg.FromMat(a, c.ar, c.ac)
		bm, _ := linalg.FromMat(b, c.br, c.bc)
		p, err := linalg.MatMul(ctx, am, bm, linalg.Options{Kernels: k})
		if err != nil {
			t.Fatal(err)
		}
		want := mul(a, b)
		for i := range want.Data {
			want.Data[i] -= p.C.Data[i]
		}
		if e := frob(want) / frob(mul(a, b)); e > 1e-14 {
			t.Errorf("%+v: relative error %.3g", c, e)
		}
		if p.Grid.Rows() != c.m || p.Grid.Cols() != c.n || len(p.Grid.ColChunks) != len(bm.ColChunks) {
			t.Errorf("%+v: grid %v", c, p.Grid)
		}
	}
	am, _ := linalg.FromMat(randMat(1, 5, 4), 5, 4)
	bm, _ := linalg.FromMat(randMat(1, 3, 2), 3, 2)
	_, err := linalg.MatMul(ctx, am, bm, linalg.Options{Kernels: k})
	if err == nil || !strings.Contains(err.Error(), "(5, 4)") || !strings.Contains(err.Error(), "(3, 2)") {
		t.Fatalf("mismatched MatMul: %v", err)
	}
}

// lowRank returns an m x n matrix of rank r with singular values 1, 1/2, 1/4, ….
func lowRank(m, n, r int) linalg.Mat {
	u, v := randMat(11, m, r), randMat(12, n, r)
	for j := 0; j < r; j++ {
		s := math.Pow(0.5, float64(j))
		for i := 0; i < m; i++ {
			u.Data[i*r+j] *= s
		}
	}
	return mul(u, v.T())
}

func TestSVDCompressed(t *testing.T) {
	for _, k := range kernelSets(t) {
		t.Run(k.Name(), func(t *testing.T) { testSVDCompressed(t, k) })
	}
}

func testSVDCompressed(t *testing.T, k linalg.Kernels) {
	ctx := context.Background()
	a := lowRank(300, 120, 10)
	var first *linalg.SVDResult
	for _, ch := range [][2]int{{64, 50}, {300, 120}, {37, 19}} {
		am, _ := linalg.FromMat(a, ch[0], ch[1])
		r, err := linalg.SVDCompressed(ctx, am, 10, 2, 5, 42, linalg.Options{Kernels: k})
		if err != nil {
			t.Fatal(err)
		}
		checkSVD(t, fmt.Sprintf("chunks %v", ch), a, r)
		if first == nil {
			first = r
			continue
		}
		// The same test matrix for every chunking: the same factors up to rounding.
		for i := range r.U.Data {
			if d := math.Abs(r.U.Data[i] - first.U.Data[i]); d > 1e-9 {
				t.Fatalf("chunks %v: U differs from the first chunking by %.3g at %d", ch, d, i)
			}
		}
	}
	am, _ := linalg.FromMat(a, 64, 50)
	if _, err := linalg.SVDCompressed(ctx, am, 0, 1, 1, 1, linalg.Options{}); err == nil {
		t.Fatal("k = 0 accepted")
	}
}

func TestTestMatrixIndependentOfShapeSplit(t *testing.T) {
	om := linalg.TestMatrix(9, 20, 7)
	om2 := linalg.TestMatrix(9, 10, 7)
	for i := range om2.Data {
		if om.Data[i] != om2.Data[i] {
			t.Fatalf("element %d: %v vs %v", i, om.Data[i], om2.Data[i])
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	am, _ := linalg.FromMat(randMat(1, 100, 10), 10, 10)
	if _, err := linalg.SVD(ctx, am, linalg.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SVD with a cancelled context: %v", err)
	}
}

// TestGemmTrivialCases: every kernel set leaves an empty product to GemmCheck, which scales c
// by beta for an empty inner dimension and does nothing for an empty c.
func TestGemmTrivialCases(t *testing.T) {
	for _, k := range kernelSets(t) {
		c := linalg.Mat{Rows: 2, Cols: 3, Data: []float64{1, 2, 3, 4, 5, 6}}
		if err := k.Gemm(false, false, 1, linalg.NewMat(2, 0), linalg.NewMat(0, 3), 0.5, c); err != nil {
			t.Fatalf("%s: %v", k.Name(), err)
		}
		if c.Data[0] != 0.5 || c.Data[5] != 3 {
			t.Errorf("%s: k = 0 gave %v, want c/2", k.Name(), c.Data)
		}
		if err := k.Gemm(false, false, 1, linalg.NewMat(0, 4), linalg.NewMat(4, 3), 0, linalg.NewMat(0, 3)); err != nil {
			t.Errorf("%s: empty c: %v", k.Name(), err)
		}
		if err := k.Gemm(false, false, 1, linalg.NewMat(2, 4), linalg.NewMat(5, 3), 0, linalg.NewMat(2, 3)); err == nil {
			t.Errorf("%s: mismatched inner dimensions accepted", k.Name())
		}
	}
}

// TestTSQRHardInputs: Q stays orthonormal and QR = A for inputs that stress how Q is applied:
// a leaf that is already upper triangular (its reflectors are identities, tau = 0), columns
// scaled over 10 orders of magnitude, a rank-deficient leaf, and a leaf exactly square.
func TestTSQRHardInputs(t *testing.T) {
	for _, k := range kernelSets(t) {
		t.Run(k.Name(), func(t *testing.T) {
			ctx := context.Background()
			tri := randMat(5, 240, 30)
			for i := 0; i < 60; i++ { // first leaf: upper triangular on top, zeros below
				for j := 0; j < 30; j++ {
					if i > j {
						tri.Data[i*30+j] = 0
					}
				}
			}
			scaled := randMat(6, 240, 30)
			for i := 0; i < 240; i++ {
				for j := 0; j < 30; j++ {
					scaled.Data[i*30+j] *= math.Pow(10, -10*float64(j)/29)
				}
			}
			deficient := randMat(7, 240, 30)
			for i := 0; i < 240; i++ { // column 5 repeats column 4
				deficient.Data[i*30+5] = deficient.Data[i*30+4]
			}
			for _, c := range []struct {
				name     string
				a        linalg.Mat
				chunk    int
				leafRows int
			}{
				{"triangular leaf", tri, 60, 60},
				{"scaled columns", scaled, 60, 60},
				{"rank deficient", deficient, 60, 60},
				{"square leaves", randMat(8, 240, 30), 30, 30},
			} {
				am, _ := linalg.FromMat(c.a, c.chunk, 30)
				q, err := linalg.TSQR(ctx, am, linalg.Options{LeafRows: c.leafRows, Kernels: k})
				if err != nil {
					t.Fatal(err)
				}
				qm, err := q.Q(ctx)
				q.Release()
				if err != nil {
					t.Fatal(err)
				}
				if e := orthErr(qm); e > 1e-12 {
					t.Errorf("%s: ||Q^T Q - I|| = %.3g", c.name, e)
				}
				d := mul(qm, q.R)
				for i := range d.Data {
					d.Data[i] -= c.a.Data[i]
				}
				if e := frob(d) / frob(c.a); e > 1e-13 {
					t.Errorf("%s: ||QR - A|| / ||A|| = %.3g", c.name, e)
				}
			}
		})
	}
}

// TestRankCutoff: NumPy's tolerance (max(m, n) * eps * the largest singular value, in any
// order) and the count above it.
func TestRankCutoff(t *testing.T) {
	eps := math.Nextafter(1, 2) - 1
	s := []float64{1e-20, 4, 2, 4 * 7 * eps}
	cut := linalg.RankCutoff(5, 7, s)
	if cut != 7*eps*4 {
		t.Fatalf("RankCutoff %v, want %v", cut, 7*eps*4)
	}
	if r := linalg.Rank(s, cut); r != 2 { // the value equal to the cutoff counts as zero
		t.Fatalf("Rank %d, want 2", r)
	}
	if linalg.RankCutoff(3, 2, nil) != 0 || linalg.Rank(nil, 0) != 0 {
		t.Fatal("empty singular values")
	}
}
