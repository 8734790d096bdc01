package cuda

import (
	"context"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"math/rand"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// splitInputs are values that take every path of the inlined bodies: exp's overflow,
// underflow and scaled ranges, sin's infinities, NaN and Payne-Hanek range (|x| >= 2^31),
// each side of every threshold, and random magnitudes from 1e-300 to 1e300.
func splitInputs() []float64 {
	in := []float64{0, math.Copysign(0, -1), 5e-324, -5e-324, 1e-310, math.Inf(1), math.Inf(-1), math.NaN(),
		708.39, 708.4, 709.78, 709.79, 709.8, 710, 745.1, 745.2, 746, 1e5,
		1<<31 - 1, 1 << 31, 1<<31 + 0.5, 1 << 40, 1e15, 1e300, math.MaxFloat64,
		math.Pi / 2, math.Pi, 3 * math.Pi / 2, 1e22, 6381956970095103 * math.Pow(2, 797)}
	for _, v := range append([]float64{}, in...) {
		in = append(in, -v, math.Nextafter(v, math.Inf(1)), math.Nextafter(v, math.Inf(-1)))
	}
	r := rand.New(rand.NewSource(5))
	for range 20000 {
		v := math.Pow(10, -300+600*r.Float64())
		if r.Intn(2) == 0 {
			v = -v
		}
		in = append(in, v, r.NormFloat64())
	}
	return in
}

// TestGPUInlinedFastPathsKeepBits: with the inlined bodies split into fast paths and rests
// (inlineSplitOn) and their constants in the constant bank (inlineConstOn), exp, sin, cos,
// tan, exp(x) + sin(x) of every value of splitInputs and the sum and Welford reduction of
// exp(x) + sin(x) of normal draws (the bench's kernel, slow draws deferred), with two elements
// a pass (pairMode) or one, have the bits of the library's bodies copied whole, one a pass.
func TestGPUInlinedFastPathsKeepBits(t *testing.T) {
	d := gpu(t)
	defer ptx.SetOptions(ptx.CurrentOptions())
	in := splitInputs()
	task := Task{Dims: []int64{int64(len(in))}, Maps: []Map{{Strides: []int64{1}}}, Inputs: [][]float64{in}}
	un := func(op expr.Op, a int) Node { return Node{Kind: NUnary, Op: op, Args: [3]int{a}} }
	cases := map[string][]Node{
		"exp": {{Kind: NInput}, un(expr.OpExp, 0)},
		"sin": {{Kind: NInput}, un(expr.OpSin, 0)},
		"cos": {{Kind: NInput}, un(expr.OpCos, 0)},
		"tan": {{Kind: NInput}, un(expr.OpTan, 0)},
		"exp(x) + sin(x) + cos(x)": {{Kind: NInput}, un(expr.OpExp, 0), un(expr.OpSin, 0), un(expr.OpCos, 0),
			{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{1, 2}}, {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{4, 3}}},
	}
	normal := Node{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{42, 0}}}
	draws := []Node{normal, un(expr.OpExp, 0), un(expr.OpSin, 0), {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{1, 2}}}
	var drawTasks []Task
	for k := range int64(4) {
		drawTasks = append(drawTasks, randomTask(k*500, 0, 500, 2000, 1, 1, 2000))
	}
	// run computes nodes under a setting; the leading constant node (unused) gives each
	// setting its own kernel.
	run := func(setting int, nodes []Node, red Reduce, tasks []Task) *Result {
		t.Helper()
		ns := []Node{{Kind: NConst, Value: float64(setting)}}
		for _, nd := range nodes {
			switch nd.Kind {
			case NUnary:
				nd.Args[0]++
			case NBinary:
				nd.Args[0]++
				nd.Args[1]++
			}
			ns = append(ns, nd)
		}
		res, err := d.Run(context.Background(), &Spec{Rank: len(tasks[0].Dims), Reduce: red, Nodes: ns}, tasks, Options{Poison: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	settings := []struct {
		split, cnst bool
		skip        string
	}{{false, false, "0"}, {true, false, "0"}, {false, true, "0"}, {true, true, "0"}, {true, true, "1"}, {true, true, "vote"}}
	for name, nodes := range cases {
		var want []float64
		for i, st := range settings {
			setPTX(func(o *ptx.Options) { o.InlineSplit, o.InlineConst, o.RareSkip = st.split, st.cnst, st.skip })
			got := run(i, nodes, RNone, []Task{task}).Out[0]
			if i == 0 {
				want = got
				continue
			}
			for k := range got {
				if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
					t.Errorf("%s(%v), split %v, constant bank %v, GPUNOTES_PTX_RARE_SKIP=%s: %v, the whole bodies give %v", name, in[k], st.split, st.cnst, st.skip, got[k], want[k])
					break
				}
			}
		}
	}
	// The reductions of draws also with two elements a pass (pairMode: "auto" pairs where
	// the bodies are split) and without.
	pairs := []struct {
		split, cnst bool
		pair, skip  string
	}{{false, false, "auto", "0"}, {true, false, "auto", "0"}, {false, true, "auto", "0"}, {true, true, "auto", "0"}, {true, true, "0", "0"}, {false, false, "1", "0"},
		{true, true, "0", "1"}, {true, true, "0", "vote"}, {true, true, "1", "1"}}
	for ri, red := range []Reduce{RSum, RWelford} {
		var want []float64
		for i, st := range pairs {
			setPTX(func(o *ptx.Options) {
				o.InlineSplit, o.InlineConst, o.Pair, o.RareSkip = st.split, st.cnst, st.pair, st.skip
			})
			res := run(len(settings)+ri*len(pairs)+i, draws, red, drawTasks)
			got := append(res.Values, append(res.Mean, res.M2...)...)
			if len(got) != len(drawTasks)*map[Reduce]int{RSum: 1, RWelford: 2}[red] {
				t.Fatalf("reduction %d: %d values for %d tasks", red, len(got), len(drawTasks))
			}
			if i == 0 {
				want = got
				continue
			}
			for k := range got {
				if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
					t.Errorf("reduction %d of exp(x) + sin(x) of normals, value %d, split %v, constant bank %v, GPUNOTES_PTX_PAIR=%s, GPUNOTES_PTX_RARE_SKIP=%s: %v, the whole bodies one a pass give %v", red, k, st.split, st.cnst, st.pair, st.skip, got[k], want[k])
				}
			}
		}
	}
}
