package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// linalgChecks returns random cases of the lazy linear algebra against NumPy. The inputs are
// small multiples of 1/64, so products and their sums are exact and the results bit-equal
// whatever the summation order.
func linalgChecks(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 11))
	var cs []check
	for i := 0; i < n; i++ {
		m, k, p := 1+rs.IntN(7), 1+rs.IntN(7), 1+rs.IntN(7)
		a, ia := randArray(rs, "a", []int{m, k})
		b, ib := randArray(rs, "b", []int{k, p})
		v, iv := randArray(rs, "v", []int{k})
		w, iw := randArray(rs, "w", []int{m})
		off := rs.IntN(5) - 2
		t3, it3 := randArray(rs, "t", []int{2, m, k})
		c3, ic3 := randArray(rs, "c", []int{m, 3})
		d3, id3 := randArray(rs, "d", []int{1, 3})
		cs = append(cs,
			check{what: fmt.Sprintf("Diagonal(%d) %dx%d", off, m, k), got: Diagonal(a, off), code: fmt.Sprintf("np.diagonal(a, %d, -2, -1)", off), inputs: []input{ia}},
			check{what: "Diagonal of a stack", got: Diagonal(t3, off), code: fmt.Sprintf("np.diagonal(t, %d, -2, -1)", off), inputs: []input{it3}},
			check{what: fmt.Sprintf("Trace(%d)", off), got: Trace(a, off), code: fmt.Sprintf("np.trace(a, %d)", off), inputs: []input{ia}},
			check{what: "Outer", got: Outer(v, w), code: "np.outer(v, w)", inputs: []input{iv, iw}},
			check{what: "Vecdot", got: Vecdot(a, v, -1), code: "np.vecdot(a, v)", inputs: []input{ia, iv}},
			check{what: "Cross", got: Cross(c3, d3, -1), code: "np.cross(c, d)", inputs: []input{ic3, id3}},
			check{what: "VectorNorm 2", got: VectorNorm(a, 2), code: "np.linalg.vector_norm(a)", inputs: []input{ia}},
			check{what: "VectorNorm 1 axis 0", got: VectorNorm(a, 1, 0), code: "np.linalg.vector_norm(a, axis=0, ord=1)", inputs: []input{ia}},
			check{what: "VectorNorm inf", got: VectorNorm(a, math.Inf(1), 1), code: "np.linalg.vector_norm(a, axis=1, ord=np.inf)", inputs: []input{ia}},
			check{what: "VectorNorm -inf", got: VectorNorm(a, math.Inf(-1)), code: "np.linalg.vector_norm(a, ord=-np.inf)", inputs: []input{ia}},
			check{what: "VectorNorm 0", got: VectorNorm(a, 0), code: "np.linalg.vector_norm(a, ord=0)", inputs: []input{ia}},
			check{what: "MatrixNorm fro", got: MatrixNorm(t3, "fro"), code: "np.linalg.matrix_norm(t)", inputs: []input{it3}},
			check{what: "MatrixNorm 1", got: MatrixNorm(a, "1"), code: "np.linalg.matrix_norm(a, ord=1)", inputs: []input{ia}},
			check{what: "MatrixNorm -1", got: MatrixNorm(a, "-1"), code: "np.linalg.matrix_norm(a, ord=-1)", inputs: []input{ia}},
			check{what: "MatrixNorm inf", got: MatrixNorm(a, "inf"), code: "np.linalg.matrix_norm(a, ord=np.inf)", inputs: []input{ia}},
			check{what: "MatrixNorm -inf", got: MatrixNorm(t3, "-inf"), code: "np.linalg.matrix_norm(t, ord=-np.inf)", inputs: []input{it3}},
			check{what: "Tensordot 1", got: Tensordot(a, b, 1), code: "np.tensordot(a, b, 1)", inputs: []input{ia, ib}},
			check{what: "Tensordot 0", got: Tensordot(v, w, 0), code: "np.tensordot(v, w, 0)", inputs: []input{iv, iw}},
			check{what: "Tensordot 2", got: Tensordot(t3, a, 2), code: "np.tensordot(t, a, 2)", inputs: []input{it3, ia}},
			check{what: "TensordotAxes", got: TensordotAxes(a, t3, []int{0}, []int{1}), code: "np.tensordot(a, t, ([0], [1]))", inputs: []input{ia, it3}},
			check{what: "Einsum ij,jk->ik", got: Einsum("ij,jk->ik", a, b), code: "np.einsum('ij,jk->ik', a, b)", inputs: []input{ia, ib}},
			check{what: "Einsum ij,jk (implicit)", got: Einsum("ij,jk", a, b), code: "np.einsum('ij,jk', a, b)", inputs: []input{ia, ib}},
			check{what: "Einsum bij,ik->bkj", got: Einsum("bij,ik->bkj", t3, a), code: "np.einsum('bij,ik->bkj', t, a)", inputs: []input{it3, ia}},
			check{what: "Einsum i,i->", got: Einsum("i,i->", v, v), code: "np.einsum('i,i->', v, v)", inputs: []input{iv}},
			check{what: "Einsum ij->ji", got: Einsum("ij->ji", a), code: "np.einsum('ij->ji', a)", inputs: []input{ia}},
			check{what: "Einsum ij,i,jk->k (three operands)", got: Einsum("ij,i,jk->k", a, w, b), code: "np.einsum('ij,i,jk->k', a, w, b)", inputs: []input{ia, iw, ib}},
		)
	}
	return cs
}

func TestLinalgExtMatchesNumPy(t *testing.T) {
	runChecks(t, linalgChecks(1, 6), Inline())
	runChecks(t, linalgChecks(2, 4)) // the threaded scheduler, other chunks
}

func TestGPULinalgExtMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, linalgChecks(3, 4), OnGPU())
}

func TestLinalgExtErrors(t *testing.T) {
	a := Ones(Shape(3, 4))
	v := Ones(Shape(4))
	for what, x := range map[string]*Array{
		"Diagonal of 1-d":         Diagonal(v, 0),
		"Outer of 2-d":            Outer(a, v),
		"Vecdot positive axis":    Vecdot(a, v, 1),
		"Cross of length 4":       Cross(a, a, -1),
		"MatrixNorm 2":            MatrixNorm(a, "2"),
		"MatrixNorm unknown":      MatrixNorm(a, "max"),
		"Tensordot too many axes": Tensordot(a, v, 3),
		"Einsum mismatch":         Einsum("ij,jk->ik", a, a),
		"Einsum repeated index":   Einsum("ii->i", a),
		"Einsum ellipsis":         Einsum("...i->i", a),
		"Einsum unknown output":   Einsum("ij->z", a),
		"Einsum term count":       Einsum("ij,jk->ik", a),
	} {
		if x.Err() == nil {
			t.Errorf("%s: no error", what)
		}
	}
}

// factorChecks returns random cases of the matrix functions against numpy.linalg, on
// well-conditioned matrices (random plus a multiple of the identity) in random chunks and
// stacks. The results depend on the order of floating-point operations (gonum's LAPACK vs
// NumPy's), so they are compared to a relative tolerance.
func factorChecks(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 13))
	var cs []check
	for i := 0; i < n; i++ {
		k := 1 + rs.IntN(6)
		a, ia := randArray(rs, "a", []int{k, k})
		s3, is3 := randArray(rs, "s", []int{2, k, k})
		b, ib := randArray(rs, "b", []int{k, 1 + rs.IntN(3)})
		v, iv := randArray(rs, "v", []int{k})
		rows := k + rs.IntN(4)
		tall, it := randArray(rs, "t", []int{rows, k})
		y, iy := randArray(rs, "y", []int{rows})
		shift := float64(30 * k)
		well := a.Add(Eye(k, k, 0).Mul(shift))             // diagonally dominant: invertible
		spd := Einsum("ij,kj->ik", a, a).Add(Eye(k, k, 0)) // symmetric positive definite
		wellNP := fmt.Sprintf("(a + %v*np.eye(%d))", shift, k)
		spdNP := fmt.Sprintf("(a @ a.T + np.eye(%d))", k)
		stack := s3.Add(Eye(k, k, 0).Mul(shift))
		stackNP := fmt.Sprintf("(s + %v*np.eye(%d))", shift, k)
		sign, logdet := Slogdet(stack)
		w, vecs := Eigh(spd)
		cs = append(cs,
			check{what: fmt.Sprintf("Inv %dx%d", k, k), got: Inv(well), code: "np.linalg.inv(" + wellNP + ")", inputs: []input{ia}},
			check{what: "Inv of a stack", got: Inv(stack), code: "np.linalg.inv(" + stackNP + ")", inputs: []input{is3}},
			check{what: "Det", got: Det(well), code: "np.linalg.det(" + wellNP + ")", inputs: []input{ia}},
			check{what: "Slogdet sign", got: sign, code: "np.linalg.slogdet(" + stackNP + ").sign", inputs: []input{is3}},
			check{what: "Slogdet log", got: logdet, code: "np.linalg.slogdet(" + stackNP + ").logabsdet", inputs: []input{is3}},
			check{what: "Cholesky", got: Cholesky(spd), code: "np.linalg.cholesky(" + spdNP + ")", inputs: []input{ia}},
			check{what: "Eigh values", got: w, code: "np.linalg.eigh(" + spdNP + ").eigenvalues", inputs: []input{ia}},
			check{what: "Eigh vectors (magnitudes: signs are LAPACK's choice)", got: vecs.Abs(), code: "np.abs(np.linalg.eigh(" + spdNP + ").eigenvectors)", inputs: []input{ia}},
			check{what: "Eigvalsh", got: Eigvalsh(spd), code: "np.linalg.eigvalsh(" + spdNP + ")", inputs: []input{ia}},
			check{what: "Pinv of a tall matrix", got: Pinv(tall), code: fmt.Sprintf("np.linalg.pinv(t, rtol=%d*np.finfo(float).eps)", max(rows, k)), inputs: []input{it}},
			check{what: "MatrixRank", got: MatrixRank(tall), code: "np.linalg.matrix_rank(t)", inputs: []input{it}},
			check{what: "MatrixRank of a rank-1 matrix", got: MatrixRank(Outer(v, v)), code: "np.linalg.matrix_rank(np.outer(v, v))", inputs: []input{iv}},
			check{what: "Solve (matrix b)", got: Solve(well, b), code: "np.linalg.solve(" + wellNP + ", b)", inputs: []input{ia, ib}},
			check{what: "Solve (vector b)", got: Solve(well, v), code: "np.linalg.solve(" + wellNP + ", v)", inputs: []input{ia, iv}},
			check{what: "Solve (stack, broadcast b)", got: Solve(stack, b), code: "np.linalg.solve(" + stackNP + ", b)", inputs: []input{is3, ib}},
			check{what: "Lstsq", got: Lstsq(tall, y), code: "np.linalg.lstsq(t, y)[0]", inputs: []input{it, iy}},
		)
	}
	return cs
}

func TestFactorizationsMatchNumPy(t *testing.T) {
	checkClose(t, factorChecks(1, 6), 1e-9, Inline())
	checkClose(t, factorChecks(2, 3), 1e-9) // the threaded scheduler
}

func TestFactorizationErrors(t *testing.T) {
	sq := Ones(Shape(3, 3))
	if _, err := Inv(sq).Compute(); err == nil || !strings.Contains(err.Error(), "singular") {
		t.Errorf("Inv of a singular matrix: %v, want an error saying singular", err)
	}
	if _, err := Cholesky(sq.Neg()).Compute(); err == nil || !strings.Contains(err.Error(), "positive definite") {
		t.Errorf("Cholesky of a negative matrix: %v, want an error saying not positive definite", err)
	}
	for what, x := range map[string]*Array{
		"Inv of a non-square": Inv(Ones(Shape(2, 3))),
		"Det of 1-d":          Det(Ones(Shape(3))),
		"Solve mismatch":      Solve(sq, Ones(Shape(4))),
		"Lstsq of 3-d":        Lstsq(Ones(Shape(2, 3, 3)), Ones(Shape(3))),
	} {
		if x.Err() == nil {
			t.Errorf("%s: no error", what)
		}
	}
}

// TestGPUFactorizationsOnDevice: with OnGPU the factorizations run on the device with cuSOLVER
// (no host fallback), match NumPy, and Path says which library ran.
func TestGPUFactorizationsOnDevice(t *testing.T) {
	needGPU(t)
	checkClose(t, factorChecks(4, 3), 1e-9, OnGPU())
	rs := NewRandomState(7)
	for what, x := range map[string]*Array{
		"inv":   Inv(Eye(4, 4, 0).Mul(2)),
		"solve": Solve(Eye(300, 300, 0).Mul(4).Add(rs.Uniform(0, 1, Shape(300, 300), Chunks(100, 100))), Ones(Shape(300))),
		"lstsq": Lstsq(rs.Uniform(0, 1, Shape(50, 20)), Ones(Shape(50))),
	} {
		c, err := x.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if p := c.Path(); strings.Contains(p, "host") || !strings.Contains(p, what+" on cuSOLVER") {
			t.Errorf("Path of a GPU %s %q does not say it ran on cuSOLVER, or says host", what, p)
		}
	}
}
