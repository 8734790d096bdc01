package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/linalg/openblas"
)

// largeFactorChecks are matrix functions on matrices large enough for OpenBLAS to use its
// threads, on stacks of small matrices (spread over the cores), with several right-hand
// sides, and on rank-deficient matrices, against NumPy.
func largeFactorChecks(seed uint64) []check {
	rs := rand.New(rand.NewPCG(seed, 17))
	const n, r = 240, 12
	a, ia := randArray(rs, "a", []int{n, n})
	b, ib := randArray(rs, "b", []int{n, 5})
	v, iv := randArray(rs, "v", []int{n})
	st, ist := randArray(rs, "s", []int{40, 9, 9})
	sb, isb := randArray(rs, "c", []int{9, 3})
	p, ip := randArray(rs, "p", []int{70, r})
	q, iq := randArray(rs, "q", []int{r, 50})
	y, iy := randArray(rs, "y", []int{70, 3})
	shift := 30.0 * n
	well := a.Add(Eye(n, n, 0).Mul(shift))
	wellNP := fmt.Sprintf("(a + %v*np.eye(%d))", shift, n)
	spd := Einsum("ij,kj->ik", a, a).Add(Eye(n, n, 0).Mul(n))
	spdNP := fmt.Sprintf("(a @ a.T + %d*np.eye(%d))", n, n)
	stack := st.Add(Eye(9, 9, 0).Mul(270))
	stackNP := "(s + 270*np.eye(9))"
	low := Einsum("ij,jk->ik", p, q) // 70 x 50 of rank 12
	lowNP := "(p @ q)"
	tall := a.Slice(Span(0, 90), Span(0, 60))
	sign, logdet := Slogdet(stack)
	w, vecs := Eigh(spd)
	return []check{
		{what: "Solve 240x240, 5 right-hand sides", got: Solve(well, b), code: "np.linalg.solve(" + wellNP + ", b)", inputs: []input{ia, ib}},
		{what: "Solve 240x240, a vector", got: Solve(well, v), code: "np.linalg.solve(" + wellNP + ", v)", inputs: []input{ia, iv}},
		{what: "Solve of a stack of 40, broadcast b", got: Solve(stack, sb), code: "np.linalg.solve(" + stackNP + ", c)", inputs: []input{ist, isb}},
		{what: "Inv 240x240", got: Inv(well), code: "np.linalg.inv(" + wellNP + ")", inputs: []input{ia}},
		{what: "Inv of a stack of 40", got: Inv(stack), code: "np.linalg.inv(" + stackNP + ")", inputs: []input{ist}},
		{what: "Det of a stack of 40", got: Det(stack), code: "np.linalg.det(" + stackNP + ")", inputs: []input{ist}},
		{what: "Slogdet sign of a stack", got: sign, code: "np.linalg.slogdet(" + stackNP + ").sign", inputs: []input{ist}},
		{what: "Slogdet log of a stack", got: logdet, code: "np.linalg.slogdet(" + stackNP + ").logabsdet", inputs: []input{ist}},
		{what: "Slogdet log 240x240", got: func() *Array { _, l := Slogdet(well); return l }(), code: "np.linalg.slogdet(" + wellNP + ").logabsdet", inputs: []input{ia}},
		{what: "Cholesky 240x240", got: Cholesky(spd), code: "np.linalg.cholesky(" + spdNP + ")", inputs: []input{ia}},
		{what: "Eigh values 240x240", got: w, code: "np.linalg.eigh(" + spdNP + ").eigenvalues", inputs: []input{ia}},
		// Each vector's sign is LAPACK's choice: compare the projector of the top ones.
		{what: "Eigh vectors 240x240 (v v^T of the top 3)", got: Einsum("ik,jk->ij", vecs.Slice(All(), Span(n-3, n)), vecs.Slice(All(), Span(n-3, n))),
			code: "(lambda v: v @ v.T)(np.linalg.eigh(" + spdNP + ").eigenvectors[:, -3:])", inputs: []input{ia}},
		{what: "Eigvalsh of a stack", got: Eigvalsh(stack.Add(stack.Transpose(0, 2, 1))), code: "np.linalg.eigvalsh(" + stackNP + " + np.swapaxes(" + stackNP + ", -1, -2))", inputs: []input{ist}},
		{what: "Pinv 90x60", got: Pinv(tall), code: "np.linalg.pinv(a[:90, :60], rtol=90*np.finfo(float).eps)", inputs: []input{ia}},
		{what: "Pinv of a rank-12 70x50", got: Pinv(low), code: "np.linalg.pinv(" + lowNP + ", rtol=70*np.finfo(float).eps)", inputs: []input{ip, iq}},
		{what: "MatrixRank of a rank-12 70x50", got: MatrixRank(low), code: "np.linalg.matrix_rank(" + lowNP + ")", inputs: []input{ip, iq}},
		{what: "MatrixRank of a stack", got: MatrixRank(stack), code: "np.linalg.matrix_rank(" + stackNP + ")", inputs: []input{ist}},
		{what: "Lstsq 90x60, 3 right-hand sides", got: Lstsq(tall, ConcatAxis(0, y, y.Slice(Span(0, 20)))), code: "np.linalg.lstsq(a[:90, :60], np.concatenate([y, y[:20]]))[0]", inputs: []input{ia, iy}},
		{what: "Lstsq of a rank-12 70x50 (least norm)", got: Lstsq(low, y), code: "np.linalg.lstsq(" + lowNP + ", y)[0]", inputs: []input{ip, iq, iy}},
		{what: "Lstsq of a wide 12x50", got: Lstsq(q, y.Slice(Span(0, r), At(0))), code: "np.linalg.lstsq(q, y[:12, 0])[0]", inputs: []input{iq, iy}},
	}
}

// TestMatrixFunctionsLarge runs the matrix functions on larger matrices than
// TestFactorizationsMatchNumPy, with OpenBLAS's LAPACK where it loads (gonum in the child of
// TestMatrixFunctionsGonumFallback), and checks that Path names the library that ran.
func TestMatrixFunctionsLarge(t *testing.T) {
	checkClose(t, largeFactorChecks(1), 1e-9, Inline())
	checkClose(t, largeFactorChecks(2), 1e-9) // the threaded scheduler: stacks in several tasks

	rs := rand.New(rand.NewPCG(3, 5))
	a, _ := randArray(rs, "a", []int{50, 50})
	x, err := Solve(a.Add(Eye(50, 50, 0).Mul(2000)), Ones(Shape(50))).Compute()
	if err != nil {
		t.Fatal(err)
	}
	want := "solve on the CPU with gonum"
	if _, err := openblas.New(); err == nil {
		want = "solve on the CPU with " + openblas.Version() + " (LAPACK)"
	} else if os.Getenv("CI") == "true" && os.Getenv(openblas.EnvLibrary) != "off" {
		t.Fatalf("OpenBLAS is required under CI: %v", err)
	}
	if os.Getenv(openblas.EnvLibrary) == "off" && !strings.HasSuffix(want, "gonum") {
		t.Fatalf("%s=off, but OpenBLAS loaded", openblas.EnvLibrary)
	}
	if x.Path() != want {
		t.Errorf("Path %q, want %q", x.Path(), want)
	}
}

// TestMatrixFunctionsSingular: exactly singular matrices give NumPy's answers (a zero
// determinant, a sign of 0 and a log of -Inf, the rank, the pseudo-inverse) or its error
// (a solve).
func TestMatrixFunctionsSingular(t *testing.T) {
	sq := Ones(Shape(3, 3)).Mul(2)
	// One chunk: both matrices in one task.
	stack := FromSlice([]float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 0, 0, 0, 1, 0, 0, 0, 1}, Shape(2, 3, 3))
	checkClose(t, []check{
		{what: "Det of a singular stack", got: Det(stack), code: "np.linalg.det(np.stack([2*np.ones((3, 3)), np.eye(3)]))"},
		{what: "Slogdet sign of a singular stack", got: func() *Array { s, _ := Slogdet(stack); return s }(), code: "np.linalg.slogdet(np.stack([2*np.ones((3, 3)), np.eye(3)])).sign"},
		{what: "MatrixRank of a singular matrix", got: MatrixRank(sq), code: "np.linalg.matrix_rank(2*np.ones((3, 3)))"},
		{what: "Pinv of a singular matrix", got: Pinv(sq), code: "np.linalg.pinv(2*np.ones((3, 3)), rtol=3*np.finfo(float).eps)"},
		{what: "Lstsq of a singular matrix", got: Lstsq(sq, Ones(Shape(3))), code: "np.linalg.lstsq(2*np.ones((3, 3)), np.ones(3))[0]"},
	}, 1e-12, Inline())
	_, logdet := Slogdet(stack)
	got, err := logdet.ToSlice()
	if err != nil || len(got) != 2 || !math.IsInf(got[0], -1) || got[1] != 0 {
		t.Errorf("Slogdet log of [singular, identity] = %v, %v; NumPy: [-inf 0]", got, err)
	}
	if _, err := Solve(sq, Ones(Shape(3))).Compute(); err == nil || !strings.Contains(err.Error(), "singular matrix") {
		t.Errorf("Solve with a singular matrix: %v, want NumPy's error (singular matrix)", err)
	}
	if _, err := Inv(stack).Compute(); err == nil || !strings.Contains(err.Error(), "matrix 0 of 2") {
		t.Errorf("Inv of a stack with a singular matrix: %v, want an error naming matrix 0 of 2", err)
	}
}

// TestMatrixFunctionsGonumFallback runs the NumPy checks of the matrix functions again in a
// child process with GPUNOTES_OPENBLAS=off: gonum's routines, the fallback where OpenBLAS does
// not load.
func TestMatrixFunctionsGonumFallback(t *testing.T) {
	if os.Getenv(openblas.EnvLibrary) == "off" {
		t.Skip("this is the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^(TestMatrixFunctionsLarge|TestMatrixFunctionsSingular|TestFactorizationsMatchNumPy|TestFactorizationErrors)$", "-test.v")
	cmd.Env = append(os.Environ(), openblas.EnvLibrary+"=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with %s=off: %v\n%s", openblas.EnvLibrary, err, out)
	}
	for _, name := range []string{"TestMatrixFunctionsLarge", "TestMatrixFunctionsSingular", "TestFactorizationsMatchNumPy", "TestFactorizationErrors"} {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Errorf("with %s=off, %s did not pass:\n%s", openblas.EnvLibrary, name, out)
		}
	}
}

// BenchmarkMatrixFunctions times each CPU matrix function on one N x N matrix (default 500,
// GPUNOTES_BENCH_N), generation included; run it with GPUNOTES_OPENBLAS=off for gonum's.
func BenchmarkMatrixFunctions(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_BENCH_N")); err == nil {
		n = v
	}
	rs := NewRandomState(7)
	a := rs.StandardNormal(Shape(n, n))
	spd := Einsum("ij,kj->ik", a, a).Add(Eye(n, n, 0).Mul(float64(n)))
	spd, err := spd.Compute()
	if err != nil {
		b.Fatal(err)
	}
	if a, err = a.Compute(); err != nil {
		b.Fatal(err)
	}
	v := Ones(Shape(n))
	for _, c := range []struct {
		name string
		f    func() *Array
	}{
		{"Solve", func() *Array { return Solve(a, v) }},
		{"Inv", func() *Array { return Inv(a) }},
		{"Det", func() *Array { return Det(a) }},
		{"Cholesky", func() *Array { return Cholesky(spd) }},
		{"Eigvalsh", func() *Array { return Eigvalsh(spd) }},
		{"Eigh", func() *Array { _, vecs := Eigh(spd); return vecs }},
		{"Pinv", func() *Array { return Pinv(a) }},
		{"MatrixRank", func() *Array { return MatrixRank(a) }},
		{"Lstsq", func() *Array { return Lstsq(a, v) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				x, err := c.f().Compute()
				if err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					b.Logf("%s", x.Path())
				}
			}
		})
	}
}
