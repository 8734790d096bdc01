package gpuarray_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
	"gonum.org/v1/gonum/mat"
)

func dense(t *testing.T, a *gpuarray.Array) *mat.Dense {
	t.Helper()
	v, err := a.ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	s := a.Shape()
	switch len(s) {
	case 1:
		return mat.NewDense(s[0], 1, v)
	case 2:
		return mat.NewDense(s[0], s[1], v)
	}
	t.Fatalf("shape %v", s)
	return nil
}

func relErr(a, b mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return mat.Norm(&d, 2) / mat.Norm(b, 2)
}

func orthErr(q mat.Matrix) float64 {
	_, c := q.Dims()
	var g mat.Dense
	g.Mul(q.T(), q)
	for i := 0; i < c; i++ {
		g.Set(i, i, g.At(i, i)-1)
	}
	return mat.Norm(&g, 2)
}

func checkSVD(t *testing.T, name string, a *gpuarray.Array, r *gpuarray.SVDResult) {
	t.Helper()
	A, U, V := dense(t, a), dense(t, r.U), dense(t, r.V)
	s, err := r.S.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	var us, rec mat.Dense
	us.Mul(U, mat.NewDiagDense(len(s), s))
	rec.Mul(&us, V)
	if e := relErr(&rec, A); e > 1e-12 {
		t.Errorf("%s: ||A - U S V|| / ||A|| = %.3g", name, e)
	}
	if e := orthErr(U); e > 1e-12 {
		t.Errorf("%s: ||U^T U - I|| = %.3g", name, e)
	}
	var ref mat.SVD
	ref.Factorize(A, mat.SVDNone)
	want := ref.Values(nil)
	for i := range s {
		if d := math.Abs(s[i]-want[i]) / want[i]; d > 1e-10 {
			t.Errorf("%s: S[%d] = %v, gonum %v", name, i, s[i], want[i])
		}
	}
}

func TestSVDArrays(t *testing.T) {
	rs := gpuarray.NewRandomState(7)
	cases := []struct {
		name string
		a    *gpuarray.Array
	}{
		{"tall random", rs.StandardNormal(gpuarray.Shape(300, 40), gpuarray.Chunks(64, 40))},
		{"tall expression", rs.Uniform(-1, 1, gpuarray.Shape(250, 30), gpuarray.Chunks(50, 30)).Mul(3).Add(1)},
		{"short-fat", rs.StandardNormal(gpuarray.Shape(30, 270), gpuarray.Chunks(30, 100))},
		{"computed data", nil}, // set below
	}
	d, err := rs.StandardNormal(gpuarray.Shape(120, 12), gpuarray.Chunks(25, 12)).Compute()
	if err != nil {
		t.Fatal(err)
	}
	cases[3].a = d
	for _, c := range cases {
		r, err := gpuarray.SVD(c.a)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkSVD(t, c.name, c.a, r)
		if got, want := r.U.Chunks()[0], c.a.Chunks()[0]; len(got) != len(want) {
			t.Errorf("%s: U chunks %v, want rows chunked %v", c.name, r.U.Chunks(), want)
		}
		h := r.HTML()
		for _, w := range []string{"U", "(" + strconv.Itoa(c.a.Shape()[0]) + ", ", "chunks", r.Path} {
			if !strings.Contains(h, w) {
				t.Errorf("%s: HTML lacks %q", c.name, w)
			}
		}
	}
}

func TestQRArray(t *testing.T) {
	a := gpuarray.NewRandomState(3).StandardNormal(gpuarray.Shape(200, 25), gpuarray.Chunks(30, 25))
	r, err := gpuarray.QR(a)
	if err != nil {
		t.Fatal(err)
	}
	Q, R := dense(t, r.Q), dense(t, r.R)
	var qr mat.Dense
	qr.Mul(Q, R)
	if e := relErr(&qr, dense(t, a)); e > 1e-13 {
		t.Errorf("||QR - A|| / ||A|| = %.3g", e)
	}
	if e := orthErr(Q); e > 1e-12 {
		t.Errorf("||Q^T Q - I|| = %.3g", e)
	}
	if !strings.Contains(r.String(), "(200, 25)") {
		t.Errorf("String: %s", r)
	}
}

func TestSVDCompressedArray(t *testing.T) {
	rs := gpuarray.NewRandomState(5)
	// A rank-6 matrix chunked along both axes.
	x := rs.StandardNormal(gpuarray.Shape(240, 6), gpuarray.Chunks(60, 6))
	y := rs.StandardNormal(gpuarray.Shape(6, 90), gpuarray.Chunks(6, 30))
	a := gpuarray.MatMul(x, y)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	if c := a.Chunks(); len(c[0]) != 4 || len(c[1]) != 3 {
		t.Fatalf("product chunks %v", c)
	}
	r1, err := gpuarray.SVDCompressed(a, 6, 2, 4, 42)
	if err != nil {
		t.Fatal(err)
	}
	checkSVD(t, "compressed", a, r1)
	r2, err := gpuarray.SVDCompressed(a.Rechunk(80, 45), 6, 2, 4, 42)
	if err != nil {
		t.Fatal(err)
	}
	u1, u2 := dense(t, r1.U), dense(t, r2.U)
	if e := relErr(u2, u1); e > 1e-10 {
		t.Errorf("U differs between chunkings by %.3g", e)
	}
}

func TestDot(t *testing.T) {
	rs := gpuarray.NewRandomState(9)
	a := rs.StandardNormal(gpuarray.Shape(50, 40), gpuarray.Chunks(16, 13))
	b := rs.StandardNormal(gpuarray.Shape(40, 30), gpuarray.Chunks(9, 7))
	v := rs.StandardNormal(gpuarray.Shape(40), gpuarray.Chunks(11))
	w := rs.StandardNormal(gpuarray.Shape(50), gpuarray.Chunks(20))
	A, B, V, W := dense(t, a), dense(t, b), dense(t, v), dense(t, w)
	var ab, av, wa mat.Dense
	ab.Mul(A, B)
	av.Mul(A, V)
	wa.Mul(W.T(), A)
	var vv mat.Dense
	vv.Mul(V.T(), V)
	cases := []struct {
		name  string
		got   *gpuarray.Array
		shape []int
		want  mat.Matrix
	}{
		{"matrix matrix", a.Dot(b), []int{50, 30}, &ab},
		{"matrix vector", a.Dot(v), []int{50}, &av},
		{"vector matrix", w.Dot(a), []int{40}, wa.T()},
		{"vector vector", gpuarray.MatMul(v, v), []int{}, &vv},
	}
	for _, c := range cases {
		if err := c.got.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// Computed, the product says which library ran, also in its HTML repr.
		e, err := c.got.Compute()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.HasPrefix(e.Path(), "matmul on the CPU with ") || !strings.Contains(e.HTML(), e.Path()) {
			t.Errorf("%s: path %q, not in the HTML repr", c.name, e.Path())
		}
		if s := c.got.Shape(); len(s) != len(c.shape) || (len(s) > 0 && s[0] != c.shape[0]) {
			t.Fatalf("%s: shape %v, want %v", c.name, s, c.shape)
		}
		vals, err := c.got.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		r, cc := c.want.Dims()
		if e := relErr(mat.NewDense(r, cc, vals), c.want); e > 1e-14 {
			t.Errorf("%s: relative error %.3g", c.name, e)
		}
	}
}

// TestMatMulLazyEqualsBlocked: the lazy product (a node computed by Compute, elementwise work
// fused around it, one panel product per column chunk of b) gives the bits of the blocked
// product (linalg.MatMul on the operands' chunks), for random shapes, 1-d operands and inner
// axes chunked differently on both sides, on the inline and threaded schedulers, and the
// values of gonum's product.
func TestMatMulLazyEqualsBlocked(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 12; i++ {
		m, k, n := 1+r.IntN(70), 1+r.IntN(70), 1+r.IntN(70)
		ck := func(d int) int { return 1 + r.IntN(d) }
		rs := gpuarray.NewRandomState(int64(i))
		x := rs.StandardNormal(gpuarray.Shape(m, k), gpuarray.Chunks(ck(m), ck(k)))
		y := rs.StandardNormal(gpuarray.Shape(k, n), gpuarray.Chunks(ck(k), ck(n)))
		v := rs.StandardNormal(gpuarray.Shape(k), gpuarray.Chunks(ck(k)))
		w := rs.StandardNormal(gpuarray.Shape(m), gpuarray.Chunks(ck(m)))
		x2, ya := x.Mul(2).Sub(1), y.Abs()
		cases := []struct {
			name   string
			lazy   *gpuarray.Array
			a, b   *gpuarray.Array
			after  func(*gpuarray.Array) *gpuarray.Array
			chunks string
		}{
			{"matrix matrix", gpuarray.MatMul(x, y), x, y, nil, fmt.Sprint([][]int{x.Chunks()[0], y.Chunks()[1]})},
			{"fused around", gpuarray.MatMul(x2, ya).Add(3).Sqrt(), x2, ya, func(p *gpuarray.Array) *gpuarray.Array { return p.Add(3).Sqrt() }, ""},
			{"reduced after", gpuarray.MatMul(x, y).Sum(0), x, y, func(p *gpuarray.Array) *gpuarray.Array { return p.Sum(0) }, ""},
			{"matrix vector", x.Dot(v), x, v, nil, fmt.Sprint([][]int{x.Chunks()[0]})},
			{"vector matrix", gpuarray.MatMul(w, x), w, x, nil, fmt.Sprint([][]int{x.Chunks()[1]})},
			{"vector vector", gpuarray.MatMul(v, v), v, v, nil, "[]"},
			{"transpose", gpuarray.MatMul(x.T(), x), x.T(), x, nil, fmt.Sprint([][]int{x.Chunks()[1], x.Chunks()[1]})},
		}
		for _, c := range cases {
			what := fmt.Sprintf("%s (%d x %d) (%d x %d)", c.name, m, k, k, n)
			ref := blockedProduct(t, c.a, c.b)
			if c.after != nil {
				ref = c.after(ref)
			}
			want, err := ref.ToSlice(gpuarray.Inline())
			if err != nil {
				t.Fatal(err)
			}
			if c.chunks != "" && fmt.Sprint(c.lazy.Chunks()) != c.chunks {
				t.Fatalf("%s: chunks %v, want %s (a's rows by b's columns)", what, c.lazy.Chunks(), c.chunks)
			}
			for _, opt := range []gpuarray.ComputeOption{gpuarray.Inline(), gpuarray.Threads(0)} {
				got, err := c.lazy.ToSlice(opt)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				equalBits(t, what, got, want)
			}
		}
		var ref mat.Dense
		ref.Mul(dense(t, x), dense(t, y))
		got, err := gpuarray.MatMul(x, y).ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(mat.NewDense(m, n, got), &ref); e > 1e-13 {
			t.Errorf("%d x %d x %d: relative error %.3g against gonum", m, k, n, e)
		}
	}
}

func TestLinalgBadInput(t *testing.T) {
	rs := gpuarray.NewRandomState(1)
	a := rs.StandardNormal(gpuarray.Shape(5, 4))
	b := rs.StandardNormal(gpuarray.Shape(3, 2))
	err := a.Dot(b).Err()
	if err == nil || !strings.Contains(err.Error(), "(5, 4)") || !strings.Contains(err.Error(), "(3, 2)") {
		t.Errorf("Dot of (5, 4) and (3, 2): %v", err)
	}
	for _, x := range []*gpuarray.Array{rs.StandardNormal(gpuarray.Shape(10)), rs.StandardNormal(gpuarray.Shape(4, 3, 2))} {
		_, err := gpuarray.SVD(x)
		if err == nil || !strings.Contains(err.Error(), "2-d") || !strings.Contains(err.Error(), "shape (") {
			t.Errorf("SVD of shape %v: %v", x.Shape(), err)
		}
	}
	grid := rs.StandardNormal(gpuarray.Shape(100, 20), gpuarray.Chunks(10, 10))
	_, err = gpuarray.SVD(grid)
	if err == nil || !strings.Contains(err.Error(), "SVDCompressed") || !strings.Contains(err.Error(), "Rechunk(10, 20)") || !strings.Contains(err.Error(), "(100, 20)") {
		t.Errorf("SVD of a grid: %v", err)
	}
	_, err = gpuarray.QR(grid)
	if err == nil || !strings.Contains(err.Error(), "one column of chunks") || !strings.Contains(err.Error(), "Rechunk(10, 20)") {
		t.Errorf("QR of a grid: %v", err)
	}
	if _, err := gpuarray.SVDCompressed(grid, 50, 1, 1, 1); err == nil || !strings.Contains(err.Error(), "(100, 20)") {
		t.Errorf("SVDCompressed with k > n: %v", err)
	}
}

// TestSVDOnGPU: with the GPU backend the block kernels are cuBLAS/cuSOLVER (when they load) and
// the factors meet the same bounds. It runs on the GPU machine (make test-gpu).
func TestSVDOnGPU(t *testing.T) {
	if err := gpuarray.GPUError(); err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	a := gpuarray.NewRandomState(3).StandardNormal(gpuarray.Shape(4000, 200), gpuarray.Chunks(500, 200))
	r, err := gpuarray.SVD(a, gpuarray.OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("path: %s", r.Path)
	if !strings.Contains(r.Path, "cuBLAS") || !strings.Contains(r.Path, "TSQR on the device") {
		t.Errorf("SVD on the GPU ran %q", r.Path)
	}
	checkSVD(t, "gpu", a, r)
	p, err := a.T().Dot(a).ToSlice(gpuarray.OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	q, err := a.T().Dot(a).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range p {
		if math.Abs(p[i]-q[i]) > 1e-9*(1+math.Abs(q[i])) {
			t.Fatalf("GPU Dot element %d = %v, CPU %v", i, p[i], q[i])
		}
	}
}

// TestDotOnGPU checks the GPU products against the CPU's: operands generated on the device
// (random, fused, transposed), data operands uploaded chunk by chunk, and inner chunkings that
// differ (the block-by-block path).
func TestDotOnGPU(t *testing.T) {
	if err := gpuarray.GPUError(); err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	rs := gpuarray.NewRandomState(5)
	x := rs.StandardNormal(gpuarray.Shape(300, 200), gpuarray.Chunks(64, 50)).Mul(2).Add(1)
	y := rs.StandardNormal(gpuarray.Shape(200, 150), gpuarray.Chunks(50, 40))
	y2 := rs.StandardNormal(gpuarray.Shape(200, 150), gpuarray.Chunks(60, 40))
	xs, err := x.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	xd := gpuarray.FromSlice(xs, gpuarray.Shape(300, 200), gpuarray.Chunks(64, 50))
	for _, c := range []struct {
		name     string
		a, b     *gpuarray.Array
		onDevice bool
	}{
		{"generated", x, y, true},
		{"data", xd, y, true},
		{"transposed", y.T(), y, true},
		{"inner chunks differ", x, y2, false},
	} {
		got, err := c.a.Dot(c.b).Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := c.a.Dot(c.b)
		t.Logf("%s: %s", c.name, got.Path())
		if on := strings.Contains(got.Path(), "operands generated on the device"); on != c.onDevice || !strings.HasPrefix(got.Path(), "gpu 0 ") {
			t.Errorf("%s: path %q", c.name, got.Path())
		}
		if e := relErr(dense(t, got), dense(t, want)); e > 1e-13 {
			t.Errorf("%s: GPU and CPU products differ by %.3g", c.name, e)
		}
	}
}

// TestLazyMatMulOnGPU: a lazy product computed with OnGPU runs its tasks with cuBLAS (the row
// panels generated on the device, no host fallback), fused with the work around it, and
// matches the CPU's blocked product to 1e-12 of the largest magnitude (cuBLAS sums in its own
// order).
func TestLazyMatMulOnGPU(t *testing.T) {
	if err := gpuarray.GPUError(); err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	rs := gpuarray.NewRandomState(6)
	x := rs.StandardNormal(gpuarray.Shape(300, 200), gpuarray.Chunks(64, 50))
	y := rs.StandardNormal(gpuarray.Shape(200, 150), gpuarray.Chunks(70, 40))
	v := rs.StandardNormal(gpuarray.Shape(200))
	for name, p := range map[string]*gpuarray.Array{
		"fused":         gpuarray.MatMul(x.Mul(2).Add(1), y).Sub(3),
		"matrix vector": x.Dot(v),
		"reduced after": gpuarray.MatMul(x, y).Sum(1),
	} {
		want, err := p.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if path := c.Path(); !strings.Contains(path, "matmul on cuBLAS") || strings.Contains(path, "host") {
			t.Errorf("%s: Path %q does not say cuBLAS, or says host", name, path)
		}
		got, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		scale := 1.0
		for _, w := range want {
			scale = math.Max(scale, math.Abs(w))
		}
		for i := range want {
			if d := math.Abs(got[i] - want[i]); !(d <= 1e-12*scale) {
				t.Fatalf("%s: element %d is %v on the GPU, %v on the CPU", name, i, got[i], want[i])
			}
		}
	}
}
