package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// randomGather returns a take (or a take along an axis) of a random operand of rank r, and a
// random box of its result.
func randomGather(rs *rand.Rand, r int) (*plan.Gather, []int, []int) {
	src := make([]int, r)
	for d := range src {
		src[d] = 1 + rs.IntN(9)
	}
	g := &plan.Gather{SrcShape: src, Axis: rs.IntN(r), Along: rs.IntN(2) == 0}
	vals := make([]float64, expr.Size(src))
	for i := range vals {
		vals[i] = rs.NormFloat64()
	}
	g.Src = dtype.OfFloat64(vals)
	g.Shape = append([]int(nil), src...)
	g.Shape[g.Axis] = 1 + rs.IntN(12)
	n := g.Shape[g.Axis]
	if g.Along {
		n = int(expr.Size(g.Shape))
	}
	g.Idx = make([]int64, n)
	for i := range g.Idx {
		g.Idx[i] = int64(rs.IntN(src[g.Axis]))
	}
	origin, box := make([]int, r), make([]int, r)
	for d := range box {
		origin[d] = rs.IntN(g.Shape[d])
		box[d] = 1 + rs.IntN(g.Shape[d]-origin[d])
	}
	return g, origin, box
}

// TestGPUGatherMatchesHost: the device gather of random takes of ranks 1 to 4, read by a fused
// kernel, equals the host's gather (plan.Gather.Box) bit for bit.
func TestGPUGatherMatchesHost(t *testing.T) {
	d := gpu(t)
	rs := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 60; round++ {
		r := 1 + round%4
		g, origin, box := randomGather(rs, r)
		b := &plan.Block{Origin: origin, Shape: box, Gather: g}
		dg := lowerGather(b, expr.Float64, nil)
		dims := make([]int64, r)
		strides := make([]int64, r)
		st := int64(1)
		for k := r - 1; k >= 0; k-- {
			dims[k], strides[k] = int64(box[k]), st
			st *= int64(box[k])
		}
		s := &Spec{Rank: r, Reduce: RNone, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
		task := Task{Dims: dims, Maps: []Map{{Strides: strides}}, Inputs: make([][]float64, 1), Gathers: []*Gather{dg}}
		res, err := d.Run(context.Background(), s, []Task{task}, Options{Poison: true})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		want := g.Box(origin, box).Float64s()
		got := res.Out[0]
		if len(got) != len(want) {
			t.Fatalf("round %d: %d values, want %d", round, len(got), len(want))
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("round %d (rank %d, axis %d, along %v, box %v at %v): element %d is %v, want %v", round, r, g.Axis, g.Along, box, origin, i, got[i], want[i])
			}
		}
	}
}

// TestGatherPTXShape: the generated gather kernel names its entry, takes four parameters and
// four per axis, and reads the index once (a take) or through the flat index (along).
func TestGatherPTXShape(t *testing.T) {
	for _, along := range []bool{false, true} {
		p := gatherPTX("8.0", "sm_80", 3, 1, along)
		name := gatherName(3, 1, along)
		if !strings.Contains(p, ".visible .entry "+name+"(") || !strings.Contains(p, ".param .u64 is2") || !strings.Contains(p, "st.global.u64") {
			t.Errorf("along %v: PTX lacks its entry or parameters:\n%s", along, p)
		}
	}
}
