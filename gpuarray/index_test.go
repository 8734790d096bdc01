package gpuarray

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// indexChecks returns random cases of Take, TakeAlongAxis, Indices in Slice and Mask against
// NumPy.
func indexChecks(seed uint64, rounds int) []check {
	rs := rand.New(rand.NewPCG(seed, 13))
	var cs []check
	for round := 0; round < rounds; round++ {
		r := 1 + rs.IntN(3)
		x, xi := randArray(rs, "x", npShape(rs, r, 1, 6))
		shape := xi.shape
		ax := rs.IntN(r)
		n := shape[ax]
		k := rs.IntN(8)
		iv := make([]float64, k)
		for j := range iv {
			iv[j] = float64(rs.IntN(2*n) - n) // negative ones count from the end
		}
		i := FromSlice(iv, Chunks(1+rs.IntN(3)))
		ii := input{"i", []int{k}, iv}
		cs = append(cs,
			check{what: fmt.Sprintf("Take(axis %d)", ax), got: x.Take(i, ax), code: fmt.Sprintf("np.take(x, i.astype(np.int64), axis=%d)", ax), inputs: []input{xi, ii}},
			check{what: "Take then +1 and Sum", got: Take(x.Add(1), i, ax).Sum(ax), code: fmt.Sprintf("np.take(x+1, i.astype(np.int64), axis=%d).sum(axis=%d)", ax, ax), inputs: []input{xi, ii}},
		)
		idx := make([]Index, ax+1)
		for j := range idx {
			idx[j] = All()
		}
		idx[ax] = Indices(i)
		pre := strings.Repeat(":, ", ax)
		cs = append(cs, check{what: "Slice(..., Indices)", got: x.Slice(idx...), code: fmt.Sprintf("x[%si.astype(np.int64)]", pre), inputs: []input{xi, ii}})
		if r >= 2 {
			cs = append(cs, check{what: "Slice(At(0), Indices) on axis 1", got: x.Slice(At(0), Indices(i.Mul(0))), code: "x[0, (i*0).astype(np.int64)]", inputs: []input{xi, ii}})
		}
		// Along an axis: indices of x's shape with m positions on axis.
		js := append([]int(nil), shape...)
		js[ax] = rs.IntN(5)
		size := 1
		for _, d := range js {
			size *= d
		}
		jv := make([]float64, size)
		for j := range jv {
			jv[j] = float64(rs.IntN(n))
		}
		jx := FromSlice(jv, Shape(js...), ChunkSizes(npChunks(rs, js)...))
		ji := input{"j", js, jv}
		cs = append(cs, check{what: fmt.Sprintf("TakeAlongAxis(%d)", ax), got: TakeAlongAxis(x, jx, ax), code: fmt.Sprintf("np.take_along_axis(x, j.astype(np.int64), axis=%d)", ax), inputs: []input{xi, ji}})
		// Masks: over all of x, and over its leading axes.
		t := float64(rs.IntN(40)-20) / 4
		cs = append(cs,
			check{what: "Mask(x > t)", got: x.Mask(x.Gt(t)), code: fmt.Sprintf("x[x > %v]", t), inputs: []input{xi}},
			check{what: "Mask(x > t)*2+1", got: x.Mask(x.Gt(t)).Mul(2).Add(1), code: fmt.Sprintf("x[x > %v]*2+1", t), inputs: []input{xi}},
			check{what: "Mask(x > t).Sum", got: x.Mask(x.Gt(t)).Sum(), code: fmt.Sprintf("x[x > %v].sum()", t), inputs: []input{xi}},
			check{what: "Mask(x > t).Mean (fused)", got: x.Mask(x.Gt(t)).Mul(3).Mean(), code: fmt.Sprintf("(x[x > %v]*3).mean()", t), inputs: []input{xi}},
			check{what: "Mask(x > t).Mean of int32 (fused)", got: x.Mul(4).AsType(Int32).Mask(x.Gt(t)).Mean(), code: fmt.Sprintf("(x*4).astype(np.int32)[x > %v].mean()", t), inputs: []input{xi}},
			check{what: "Mask(x > t).Max (gathered)", got: x.Mask(x.Ge(-1e9)).Max(), code: "x[x >= -1e9].max()", inputs: []input{xi}},
			check{what: "Mask(x > t).Max(0)", got: Where(x.Gt(t), x, -1e9).Max(), code: fmt.Sprintf("np.where(x > %v, x, -1e9).max()", t), inputs: []input{xi}},
		)
		lead := 1 + rs.IntN(r)
		y, yi := randArray(rs, "y", shape[:lead])
		cs = append(cs, check{what: fmt.Sprintf("Mask over %d leading axes", lead), got: x.Mask(y.Lt(t)), code: fmt.Sprintf("x[y < %v]", t), inputs: []input{xi, yi}})
	}
	return cs
}

func TestIndexMatchesNumPy(t *testing.T) {
	runChecks(t, indexChecks(1, 25), Inline())
}

// reductionCounter records, as the GPU backend would decide them (gpuDecisions), the
// reduction kernels of a computation.
type reductionCounter struct {
	gpuDecisions
	reductions int
}

func (c *reductionCounter) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	seen := map[*plan.Kernel]bool{}
	for _, t := range tasks {
		if t.Kernel.Reduce != nil && !seen[t.Kernel] {
			seen[t.Kernel] = true
			c.reductions++
		}
	}
	return c.gpuDecisions.Run(ctx, tasks, done)
}

// TestMaskedMeanOnePass: the mean of a masked array is one fused reduction (the sum and the
// count as the parts of one complex sum), which the GPU runs (no host step); var and std add
// one more. Their values are those of the same reductions of the gathered selection, to a
// few ulp (the selection is added in chunk order either way, by other kernels).
func TestMaskedMeanOnePass(t *testing.T) {
	x := NewRandomState(4).Normal(0.5, 2, Shape(300, 200), Chunks(70, 90))
	sel, err := x.Mask(x.Gt(1)).ComputeChunkSizes()
	if err != nil {
		t.Fatal(err)
	}
	xi := x.Mul(3).AsType(Int32)
	seli, err := xi.Mask(x.Gt(1)).ComputeChunkSizes()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what       string
		got, want  *Array
		reductions int
		ulps       float64
	}{
		{"mean", x.Mask(x.Gt(1)).Mean(), sel.Mean(), 1, 4},
		{"mean of int32", xi.Mask(x.Gt(1)).Mean(), seli.Mean(), 1, 1},
		{"var", x.Mask(x.Gt(1)).Var(), sel.Var(), 2, 64},
		{"std", x.Mask(x.Gt(1)).Std(), sel.Std(), 2, 64},
		{"var of float32", x.AsType(Float32).Mask(x.Gt(1)).Var(), sel.AsType(Float32).Var(), 2, 8 << 29},
	} {
		rc := &reductionCounter{}
		g, err := c.got.Compute(On(rc))
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if rc.reductions != c.reductions || len(rc.host) > 0 {
			t.Errorf("%s: %d reduction kernels, want %d; host steps %v", c.what, rc.reductions, c.reductions, rc.host)
		}
		gv, _ := g.Float64()
		wv, err := c.want.Float64()
		if err != nil {
			t.Fatal(err)
		}
		if g.DType() != c.want.DType() || math.Abs(gv-wv) > c.ulps*0x1p-52*math.Abs(wv) {
			t.Errorf("%s: %v (%v), want %v (%v)", c.what, gv, g.DType(), wv, c.want.DType())
		}
	}
}

func TestMaskUnknownShape(t *testing.T) {
	x := Arange(0, 12, 1, Chunks(5)).Reshape(3, 4)
	m := x.Mask(x.Gt(4))
	if fmt.Sprint(m.Shape()) != "[-1]" || !strings.Contains(m.String(), "(nan,)") {
		t.Errorf("masked: shape %v, %s", m.Shape(), m)
	}
	for _, bad := range []*Array{m.Reshape(7), Concat(m, m), m.Slice(Every(2)), m.Add(Ones(Shape(7))), m.Rechunk(2)} {
		if err := bad.Err(); err == nil || !strings.Contains(err.Error(), "ComputeChunkSizes") {
			t.Errorf("an operation needing the length: %v", err)
		}
	}
	k, err := m.ComputeChunkSizes()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(k.Shape(), k.Chunks()) != "[7] [[3 4]]" {
		t.Errorf("after ComputeChunkSizes: %v %v", k.Shape(), k.Chunks())
	}
	if p := m.Persist(); p.Err() != nil || fmt.Sprint(p.Shape()) != "[7]" {
		t.Errorf("persisted masked array: %v %v", p.Shape(), p.Err())
	}
	// A full reduction of a masked array fuses: no mask (gather) is left in its graph.
	if r := m.Add(1).Mean(); hasMask(r.n) {
		t.Errorf("masked mean keeps a gather")
	}
	// An out-of-range index fails the compute with a clear error.
	_, err = x.Take(FromSlice([]float64{0, 4}), 1).Compute()
	if err == nil || !strings.Contains(err.Error(), "out of bounds for axis 1 with size 4") {
		t.Errorf("out of range: %v", err)
	}
}
