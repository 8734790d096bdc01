package gpuarray

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// factorShape returns a random shape with size n (one -1 in asked, sometimes).
func factorShape(rs *rand.Rand, n int) (shape, asked []int) {
	if n == 0 {
		shape = []int{0, 1 + rs.IntN(3)}
		return shape, slices.Clone(shape)
	}
	left := n
	for len(shape) < 3 && left > 1 {
		var divs []int
		for d := 2; d <= left; d++ {
			if left%d == 0 {
				divs = append(divs, d)
			}
		}
		d := divs[rs.IntN(len(divs))]
		shape = append(shape, d)
		left /= d
		if rs.IntN(4) == 0 {
			shape = append(shape, 1)
		}
	}
	if left > 1 {
		shape = append(shape, left)
	}
	if len(shape) == 0 {
		shape = []int{1}
	}
	asked = slices.Clone(shape)
	if rs.IntN(2) == 0 {
		asked[rs.IntN(len(asked))] = -1
	}
	return shape, asked
}

// manipChecks returns random cases of every manipulation function against NumPy.
func manipChecks(seed uint64, rounds int) []check {
	rs := rand.New(rand.NewPCG(seed, 7))
	var cs []check
	for round := 0; round < rounds; round++ {
		r := 1 + rs.IntN(3)
		x, xi := randArray(rs, "x", npShape(rs, r, 0, 6))
		shape := xi.shape
		size := 1
		for _, d := range shape {
			size *= d
		}
		// Reshape of data, of an elementwise expression, of a transpose (computed first),
		// then an axis reduction.
		_, asked := factorShape(rs, size)
		cs = append(cs,
			check{what: fmt.Sprintf("Reshape(%v) of %v", asked, shape), got: x.Reshape(asked...), code: "np.reshape(x, " + tuple(asked) + ")", inputs: []input{xi}},
			check{what: "Reshape of x*2+1", got: x.Mul(2).Add(1).Reshape(asked...), code: "np.reshape(x*2+1, " + tuple(asked) + ")", inputs: []input{xi}},
			check{what: "Reshape of x.T", got: x.T().Reshape(asked...), code: "np.reshape(x.T, " + tuple(asked) + ")", inputs: []input{xi}},
			check{what: "Ravel", got: x.Ravel(), code: "np.ravel(x)", inputs: []input{xi}},
			check{what: "Ravel of a slice", got: x.Slice(Every(-1)).Ravel(), code: "np.ravel(x[::-1])", inputs: []input{xi}},
		)
		if size > 0 {
			rsh, _ := factorShape(rs, size)
			ax := rs.IntN(len(rsh))
			cs = append(cs, check{what: fmt.Sprintf("Reshape(%v).Max(%d)", rsh, ax), got: x.Reshape(rsh...).Max(ax), code: fmt.Sprintf("np.reshape(x, %s).max(axis=%d)", tuple(rsh), ax), inputs: []input{xi}})
			cs = append(cs, check{what: "Linspace.Reshape", got: Linspace(-1, 2, size, Chunks(1+rs.IntN(size))).Reshape(rsh...),
				code: fmt.Sprintf("np.linspace(-1, 2, %d).reshape(%s)", size, tuple(rsh))})
			cs = append(cs, check{what: "Arange.Reshape", got: Arange(0, float64(size), 1, Chunks(1+rs.IntN(size))).Reshape(rsh...).Mul(3),
				code: fmt.Sprintf("np.arange(0, %d, 1.0).reshape(%s)*3", size, tuple(rsh))})
		}
		// Joins: Concat and Stack, then elementwise work, reductions and a rechunk that
		// straddles the pieces.
		ax := rs.IntN(r)
		k := 1 + rs.IntN(3)
		var xs []*Array
		var ins []input
		var names []string
		for j := 0; j < k; j++ {
			s := slices.Clone(shape)
			s[ax] = rs.IntN(5)
			a, ai := randArray(rs, fmt.Sprintf("c%d", j), s)
			xs, ins, names = append(xs, a), append(ins, ai), append(names, ai.name)
		}
		list := "[" + joinNames(names) + "]"
		cs = append(cs,
			check{what: fmt.Sprintf("ConcatAxis(%d)", ax), got: ConcatAxis(ax, xs...), code: fmt.Sprintf("np.concat(%s, axis=%d)", list, ax), inputs: ins},
			check{what: "ConcatAxis(negative)+1", got: ConcatAxis(ax-r, xs...).Add(1), code: fmt.Sprintf("np.concat(%s, axis=%d)+1", list, ax-r), inputs: ins},
			check{what: "ConcatAxis.Rechunk(2)", got: ConcatAxis(ax, xs...).Rechunk(2).Neg(), code: fmt.Sprintf("-np.concat(%s, axis=%d)", list, ax), inputs: ins},
			check{what: "ConcatAxis.T.Sum(0)", got: ConcatAxis(ax, xs...).T().Sum(0), code: fmt.Sprintf("np.concat(%s, axis=%d).T.sum(axis=0)", list, ax), inputs: ins},
		)
		sx := make([]*Array, k)
		for j := range sx {
			sx[j] = x.Mul(float64(j + 1))
		}
		sax := rs.IntN(r + 1)
		cs = append(cs,
			check{what: fmt.Sprintf("StackAxis(%d)", sax), got: StackAxis(sax, sx...), code: fmt.Sprintf("np.stack([x*(j+1) for j in range(%d)], axis=%d)", k, sax), inputs: []input{xi}},
			check{what: "Unstack", list: Unstack(x, ax), code: fmt.Sprintf("np.unstack(x, axis=%d)", ax), inputs: []input{xi}},
			check{what: "ExpandDims", got: ExpandDims(x, sax), code: fmt.Sprintf("np.expand_dims(x, %d)", sax), inputs: []input{xi}},
			check{what: "Squeeze", got: ExpandDims(x, sax).Squeeze(), code: fmt.Sprintf("np.squeeze(np.expand_dims(x, %d))", sax), inputs: []input{xi}},
			check{what: "Squeeze(axis)", got: Squeeze(ExpandDims(x, sax), sax), code: fmt.Sprintf("np.squeeze(np.expand_dims(x, %d), axis=%d)", sax, sax), inputs: []input{xi}},
			check{what: "Flip", got: Flip(x), code: "np.flip(x)", inputs: []input{xi}},
			check{what: fmt.Sprintf("Flip(%d)", ax), got: Flip(x, ax), code: fmt.Sprintf("np.flip(x, axis=%d)", ax), inputs: []input{xi}},
		)
		sh := rs.IntN(13) - 6
		cs = append(cs,
			check{what: fmt.Sprintf("Roll(%d)", sh), got: Roll(x, sh), code: fmt.Sprintf("np.roll(x, %d)", sh), inputs: []input{xi}},
			check{what: fmt.Sprintf("Roll(%d, %d)", sh, ax), got: Roll(x, sh, ax), code: fmt.Sprintf("np.roll(x, %d, axis=%d)", sh, ax), inputs: []input{xi}},
		)
		reps := make([]int, 1+rs.IntN(3))
		for j := range reps {
			reps[j] = rs.IntN(3)
		}
		rep := rs.IntN(3)
		cs = append(cs,
			check{what: fmt.Sprintf("Tile(%v)", reps), got: Tile(x, reps...).Sub(1), code: fmt.Sprintf("np.tile(x, %s)-1", tuple(reps)), inputs: []input{xi}},
			check{what: fmt.Sprintf("Repeat(%d, %d)", rep, ax), got: x.Repeat(rep, ax), code: fmt.Sprintf("np.repeat(x, %d, axis=%d)", rep, ax), inputs: []input{xi}},
			check{what: fmt.Sprintf("Repeat(%d)", rep), got: Repeat(x, rep), code: fmt.Sprintf("np.repeat(x, %d)", rep), inputs: []input{xi}},
			check{what: "MoveAxis", got: MoveAxis(x, ax, -1), code: fmt.Sprintf("np.moveaxis(x, %d, -1)", ax), inputs: []input{xi}},
		)
		perm := rs.Perm(r)
		cs = append(cs, check{what: fmt.Sprintf("PermuteDims(%v)", perm), got: PermuteDims(x, perm...), code: fmt.Sprintf("np.permute_dims(x, %s)", tuple(perm)), inputs: []input{xi}})
		// Broadcasting.
		bs := append([]int{1 + rs.IntN(3)}, shape...)
		y, yi := randArray(rs, "y", []int{1, shape[len(shape)-1]})
		cs = append(cs,
			check{what: fmt.Sprintf("BroadcastTo(%v)", bs), got: BroadcastTo(x, bs...), code: fmt.Sprintf("np.broadcast_to(x, %s)", tuple(bs)), inputs: []input{xi}},
			check{what: "BroadcastArrays", list: BroadcastArrays(x, y), code: "list(np.broadcast_arrays(x, y))", inputs: []input{xi, yi}},
		)
		// Slices with new axes and an ellipsis.
		cs = append(cs,
			check{what: "Slice(NewAxis, Ellipsis, Every(-1))", got: x.Slice(NewAxis(), Ellipsis(), Every(-1)), code: "x[None, ..., ::-1]", inputs: []input{xi}},
			check{what: "Slice(Ellipsis, NewAxis)", got: x.Slice(Ellipsis(), NewAxis()), code: "x[..., None]", inputs: []input{xi}},
			check{what: "Slice(Every(2), NewAxis, Ellipsis)", got: x.Slice(Every(2), NewAxis(), Ellipsis()), code: "x[::2, None, ...]", inputs: []input{xi}},
		)
		if shape[0] > 0 {
			cs = append(cs, check{what: "Slice(Ellipsis, At(0) first)", got: x.Slice(At(-1), Ellipsis(), NewAxis()), code: "x[-1, ..., None]", inputs: []input{xi}})
		}
	}
	return cs
}

func countOrder(a *Array) int { return len(plan.Order(a.n)) }

func lowerRoot(t *testing.T, a *Array) *plan.Stage {
	t.Helper()
	st, err := plan.Lower(0, a.n, map[*expr.Node]dtype.Slice{}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func joinNames(ns []string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

func TestManipMatchesNumPy(t *testing.T) {
	runChecks(t, manipChecks(1, 25), Inline())
}

func TestReshapeAddsNoStage(t *testing.T) {
	// A reshape of data is the same data; of an elementwise expression, one stage whose
	// kernel reads the data directly.
	x := FromSlice(make([]float64, 24), Shape(4, 6), Chunks(2, 6))
	if y := x.Reshape(8, 3); y.n.Kind != expr.KData || &y.n.Data.Bytes()[0] != &x.n.Data.Bytes()[0] {
		t.Errorf("reshape of data: kind %d, a copy", y.n.Kind)
	}
	for _, y := range []*Array{x.Add(1).Reshape(2, 12), x.Reshape(-1).Mul(2)} {
		if y.n.Kind == expr.KReshape || countOrder(y) != 1 {
			t.Errorf("reshape to %v: %d stages, kind %d", y.Shape(), countOrder(y), y.n.Kind)
		}
	}
	// A reshape of a transpose computes the transpose first.
	if n := countOrder(x.T().Reshape(-1)); n != 2 {
		t.Errorf("reshape of a transpose: %d stages, want 2", n)
	}
}

func TestConcatKernelPerPiece(t *testing.T) {
	a := Arange(0, 6, 1, Chunks(3))
	b := Arange(10, 14, 1, Chunks(4))
	c := Concat(a, b).Add(1)
	st := lowerRoot(t, c)
	if len(st.Tasks) != 3 || st.Tasks[0].Kernel != st.Tasks[1].Kernel || st.Tasks[1].Kernel == st.Tasks[2].Kernel {
		t.Fatalf("tasks %d: want 3 with kernels a, a, b", len(st.Tasks))
	}
	for _, tk := range st.Tasks {
		if len(tk.Inputs) != 0 {
			t.Errorf("task %d reads %d input blocks; the pieces are ranges read in place", tk.Index, len(tk.Inputs))
		}
	}
	// Rechunked across the pieces: the join is computed first.
	if n := countOrder(Concat(a, b).Rechunk(5)); n != 2 {
		t.Errorf("a join rechunked across its pieces: %d stages, want 2", n)
	}
}

func TestRechunkLikeDask(t *testing.T) {
	x := Zeros(Shape(10, 7), Chunks(3, 2))
	cases := []struct {
		got  *Array
		code string
	}{
		{x.Rechunk(-1), "da.zeros((10, 7), chunks=(3, 2)).rechunk(-1).chunks"},
		{x.Rechunk(4), "da.zeros((10, 7), chunks=(3, 2)).rechunk(4).chunks"},
		{x.Rechunk(-1, 3), "da.zeros((10, 7), chunks=(3, 2)).rechunk((-1, 3)).chunks"},
	}
	ncs := make([]npCase, len(cases))
	for i, c := range cases {
		ncs[i].Code = "(lambda da: " + c.code + ")(__import__('dask.array', fromlist=['x']))"
	}
	res := numpy(t, ncs)
	for i, c := range cases {
		if res[i].Err != "" {
			t.Fatalf("%s: %s", c.code, res[i].Err)
		}
		if fmt.Sprint(c.got.Chunks()) != fmt.Sprint(res[i].Chunks) {
			t.Errorf("%s: chunks %v, dask %v", c.code, c.got.Chunks(), res[i].Chunks)
		}
	}
}
