package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func pyFloat(v float64) string { return "float.fromhex('" + strconv.FormatFloat(v, 'x', -1, 64) + "')" }

// createChecks returns random cases of the creation functions against NumPy, the edges of
// Arange and Linspace included.
func createChecks(seed uint64, rounds int) []check {
	rs := rand.New(rand.NewPCG(seed, 11))
	var cs []check
	edges := [][3]float64{{0, 10, 1}, {10, 0, -1}, {0, 0, 1}, {5, 0, 1}, {0, 5, -1}, {1, 1.3, 0.1}, {0, 1, 0.1}, {-3, 3.5, 0.7}, {2.5, -1, -0.25}, {0, 1e-3, 1e-4}, {1e16, 1e16 + 10, 3}}
	for _, e := range edges {
		cs = append(cs, check{what: fmt.Sprintf("Arange(%v)", e), got: Arange(e[0], e[1], e[2], Chunks(3)),
			code: fmt.Sprintf("np.arange(%s, %s, %s)", pyFloat(e[0]), pyFloat(e[1]), pyFloat(e[2]))})
	}
	for _, num := range []int{0, 1, 2, 3, 7, 50} {
		for _, ss := range [][2]float64{{0, 1}, {1, 0}, {-2.5, 7.25}, {3, 3}, {0, 1e-300}} {
			cs = append(cs, check{what: fmt.Sprintf("Linspace(%v, %d)", ss, num), got: Linspace(ss[0], ss[1], num, Chunks(4)),
				code: fmt.Sprintf("np.linspace(%s, %s, %d)", pyFloat(ss[0]), pyFloat(ss[1]), num)})
		}
	}
	for round := 0; round < rounds; round++ {
		start := math.Round(rs.NormFloat64()*100) / 8
		stop := start + math.Round(rs.NormFloat64()*100)/8
		step := float64(1+rs.IntN(20)) / float64(1+rs.IntN(7))
		if rs.IntN(2) == 0 {
			step = -step
		}
		cs = append(cs, check{what: fmt.Sprintf("Arange(%v, %v, %v)", start, stop, step), got: Arange(start, stop, step, Chunks(1+rs.IntN(5))),
			code: fmt.Sprintf("np.arange(%s, %s, %s)", pyFloat(start), pyFloat(stop), pyFloat(step))})
		num := rs.IntN(30)
		cs = append(cs, check{what: fmt.Sprintf("Linspace(%v, %v, %d)", start, stop, num), got: Linspace(start, stop, num, Chunks(1+rs.IntN(5))),
			code: fmt.Sprintf("np.linspace(%s, %s, %d)", pyFloat(start), pyFloat(stop), num)})
		n, m, k := rs.IntN(7), rs.IntN(7), rs.IntN(9)-4
		cs = append(cs, check{what: fmt.Sprintf("Eye(%d, %d, %d)", n, m, k), got: Eye(n, m, k, Chunks(1+rs.IntN(3), 1+rs.IntN(3))),
			code: fmt.Sprintf("np.eye(%d, %d, %d)", n, m, k)})
		x, xi := randArray(rs, "x", npShape(rs, 2+rs.IntN(2), 0, 6))
		cs = append(cs,
			check{what: fmt.Sprintf("Tril(%d)", k), got: Tril(x, k), code: fmt.Sprintf("np.tril(x, %d)", k), inputs: []input{xi}},
			check{what: fmt.Sprintf("Triu(%d)", k), got: Triu(x, k), code: fmt.Sprintf("np.triu(x, %d)", k), inputs: []input{xi}},
			check{what: "ZerosLike", got: ZerosLike(x), code: "np.zeros_like(x)", inputs: []input{xi}},
			check{what: "OnesLike", got: OnesLike(x), code: "np.ones_like(x)", inputs: []input{xi}},
			check{what: "FullLike", got: FullLike(x, -2.5), code: "np.full_like(x, -2.5)", inputs: []input{xi}},
			check{what: "EmptyLike", got: EmptyLike(x), code: "np.zeros(np.empty_like(x).shape)", inputs: []input{xi}},
			check{what: "Empty", got: Empty(Shape(xi.shape...)), code: "np.zeros(np.empty(x.shape).shape)", inputs: []input{xi}},
		)
		var gs []*Array
		var ins []input
		var names string
		for j := 0; j < 1+rs.IntN(3); j++ {
			g, gi := randArray(rs, fmt.Sprintf("g%d", j), []int{rs.IntN(5)})
			gs, ins = append(gs, g), append(ins, gi)
			if j > 0 {
				names += ", "
			}
			names += gi.name
		}
		cs = append(cs,
			check{what: "Meshgrid", list: Meshgrid(gs...), code: "list(np.meshgrid(" + names + "))", inputs: ins},
			check{what: "MeshgridIJ", list: MeshgridIJ(gs...), code: "list(np.meshgrid(" + names + ", indexing='ij'))", inputs: ins},
		)
	}
	return cs
}

func TestCreateMatchesNumPy(t *testing.T) {
	runChecks(t, createChecks(1, 25), Inline())
}

func TestLikeKeepsChunksAndDType(t *testing.T) {
	x := Zeros(Shape(5, 4), Chunks(2, 3), WithDType(Float32))
	y := OnesLike(x)
	if fmt.Sprint(y.Chunks()) != fmt.Sprint(x.Chunks()) || y.DType() != Float32 {
		t.Errorf("OnesLike: chunks %v dtype %v", y.Chunks(), y.DType())
	}
	if z := ZerosLike(x, Shape(3)); fmt.Sprint(z.Shape()) != "[3]" || z.Err() != nil {
		t.Errorf("ZerosLike with a shape: %v %v", z.Shape(), z.Err())
	}
}
