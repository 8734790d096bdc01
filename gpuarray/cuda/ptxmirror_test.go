package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// TestMirrorLower: with the mirror on, Lower mirrors the full reductions of f(x, x.T) over a
// whole square x, regenerated or stored (two float64 inputs the planner marks as one array,
// then not tiled), and nothing else: not x + y, not a slice, not an axis reduction, not argmax
// (its index), not a rectangle, not float32 inputs; with the switch off, nothing (and a stored
// x.T is tiled).
func TestMirrorLower(t *testing.T) {
	defer func(o ptx.Options, w int64) { ptx.SetOptions(o); mirrorStrip = w }(ptx.CurrentOptions(), mirrorStrip)
	straight := []expr.AxisMap{{Axis: 0, Step: 1}, {Axis: 1, Step: 1}}
	swapped := []expr.AxisMap{{Axis: 1, Step: 1}, {Axis: 0, Step: 1}}
	sliced := []expr.AxisMap{{Axis: 1, Step: 1}, {Axis: 0, Off: 1, Step: 1}}
	rnd := func(key uint32, src []int, m []expr.AxisMap) plan.Instr {
		return plan.Instr{Code: plan.Random, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{key, 7}}, Src: src, Map: m}
	}
	inp := func(slot, alias int, dt expr.DType, m []expr.AxisMap) plan.Instr {
		return plan.Instr{Code: plan.Input, DType: dt, Slot: slot, Alias: alias, Src: []int{100, 100}, Map: m}
	}
	kernel := func(shape []int, red expr.Red, axes []int, a, b plan.Instr) *plan.Kernel {
		return &plan.Kernel{Shape: shape, Instrs: []plan.Instr{a, b,
			{Code: plan.Binary, DType: expr.Float64, Op: expr.OpSub, Args: []int{0, 1}},
			{Code: plan.Unary, DType: expr.Float64, Op: expr.OpExp, Args: []int{2}}},
			Result: 3, Reduce: &plan.Reduction{Red: red, Axes: axes}}
	}
	sq := []int{100, 100}
	cases := []struct {
		name string
		k    *plan.Kernel
		want []int
	}{
		{"sum exp(x - x.T)", kernel(sq, expr.Sum, []int{0, 1}, rnd(42, sq, straight), rnd(42, sq, swapped)), []int{0, 1}},
		{"std exp(x.T - x)", kernel(sq, expr.Std, []int{0, 1}, rnd(42, sq, swapped), rnd(42, sq, straight)), []int{1, 0}},
		{"max", kernel(sq, expr.Max, []int{0, 1}, rnd(42, sq, straight), rnd(42, sq, swapped)), []int{0, 1}},
		{"x - y", kernel(sq, expr.Sum, []int{0, 1}, rnd(42, sq, straight), rnd(43, sq, swapped)), nil},
		{"a slice of x.T", kernel([]int{100, 99}, expr.Sum, []int{0, 1}, rnd(42, sq, straight), rnd(42, sq, sliced)), nil},
		{"sum(axis=0)", kernel(sq, expr.Sum, []int{0}, rnd(42, sq, straight), rnd(42, sq, swapped)), nil},
		{"argmax", kernel(sq, expr.ArgMax, []int{0, 1}, rnd(42, sq, straight), rnd(42, sq, swapped)), nil},
		{"x - x", kernel(sq, expr.Sum, []int{0, 1}, rnd(42, sq, straight), rnd(42, sq, straight)), nil},
		{"stored sum exp(x - x.T)", kernel(sq, expr.Sum, []int{0, 1}, inp(0, 0, expr.Float64, straight), inp(1, 1, expr.Float64, swapped)), []int{0, 1}},
		{"stored std exp(x.T - x)", kernel(sq, expr.Std, []int{0, 1}, inp(0, 0, expr.Float64, swapped), inp(1, 1, expr.Float64, straight)), []int{1, 0}},
		{"stored x - y.T", kernel(sq, expr.Sum, []int{0, 1}, inp(0, 0, expr.Float64, straight), inp(1, 0, expr.Float64, swapped)), nil},
		{"stored float32 x - x.T", kernel(sq, expr.Sum, []int{0, 1}, inp(0, 0, expr.Float32, straight), inp(1, 1, expr.Float32, swapped)), nil},
		{"stored x - x.T, x random", kernel(sq, expr.Sum, []int{0, 1}, inp(0, 0, expr.Float64, straight), rnd(42, sq, swapped)), nil},
		{"stored argmax", kernel(sq, expr.ArgMax, []int{0, 1}, inp(0, 0, expr.Float64, straight), inp(1, 1, expr.Float64, swapped)), nil},
	}
	for _, on := range []bool{false, true} {
		setPTX(func(o *ptx.Options) { o.Mirror = on })
		for _, c := range cases {
			s, _, err := Lower(c.k)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			want := c.want
			if !on {
				want = nil
			}
			if len(s.Mirror) != len(want) || (want != nil && (s.Mirror[0] != want[0] || s.Mirror[1] != want[1])) {
				t.Errorf("switch %v, %s: Mirror %v, want %v", on, c.name, s.Mirror, want)
			}
			if s.Rank != 2 {
				t.Errorf("switch %v, %s: rank %d", on, c.name, s.Rank)
			}
			if stored := c.name == "stored sum exp(x - x.T)" || c.name == "stored std exp(x.T - x)"; stored && s.Tile == (want != nil) {
				t.Errorf("switch %v, %s: Tile %v with Mirror %v", on, c.name, s.Tile, s.Mirror)
			}
		}
	}
	// GPUNOTES_PTX_MIRROR_STRIP: mirrored specs become rank 3 (Device.Run walks their tasks in
	// strips), the others stay.
	mirrorStrip = 40
	for _, c := range cases {
		s, _, err := Lower(c.k)
		if err != nil {
			t.Fatalf("strips, %s: %v", c.name, err)
		}
		if want := map[bool]int{true: 3, false: 2}[c.want != nil]; s.Rank != want {
			t.Errorf("strips, %s: rank %d, want %d", c.name, s.Rank, want)
		}
	}
}

// TestMirrorPTX: a mirrored kernel branches past an element above the diagonal before its
// draws, draws each of its two normals once per element (as the unmirrored kernel does: the
// mirrored value reuses them), keeps two values per element in its batch (the second folded
// in but on the diagonal), and keeps this in the deferred elements' computation too.
func TestMirrorPTX(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	normal := func(leaf, same int) Node {
		return Node{Kind: NRandom, Leaf: leaf, SameKey: same, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{42, 7}}}
	}
	spec := func(mirror []int) *Spec {
		return &Spec{Rank: 2, Reduce: RSum, Mirror: mirror, Nodes: []Node{normal(0, 0), normal(1, 1),
			{Kind: NBinary, Op: expr.OpSub, Args: [3]int{0, 1}}, {Kind: NUnary, Op: expr.OpExp, Args: [3]int{2}}}}
	}
	plain, _, err := GeneratePTX(spec(nil), string(lib))
	if err != nil {
		t.Fatal(err)
	}
	mirrored, _, err := GeneratePTX(spec([]int{0, 1}), string(lib))
	if err != nil {
		t.Fatal(err)
	}
	if spec(nil).Key() == spec([]int{0, 1}).Key() {
		t.Fatal("a mirrored spec shares its key with the plain one")
	}
	// Values are made in the loop, in the deferred elements computed by their own lane, and by
	// the warp together where coopPays.
	places := 2
	if ptx.CoopPays(spec([]int{0, 1})) {
		places = 3
	}
	// A paired pass (pairedInOrder) makes two more values in the plain kernel.
	pairs := 2 * strings.Count(plain, ptx.PairMark)
	if p, m := strings.Count(ptx.CollapseInlinedSlow(plain), "mul.hi.u32"), strings.Count(ptx.CollapseInlinedSlow(mirrored), "mul.hi.u32"); p != 40*(places+pairs) || m != 40*places {
		t.Errorf("Philox multiplies: plain %d, mirrored %d, want %d and %d (2 draws in each of %d places, %d more plain)", p, m, 40*(places+pairs), 40*places, places, pairs)
	}
	// exp is called (or inlined, see inlineOn) once per value in each place (plain 1 value an
	// element, mirrored 2).
	exps := func(text string) int {
		return strings.Count(text, "gpn_exp, (") + strings.Count(text, "gpn_exp inlined")
	}
	if p, m := exps(plain), exps(mirrored); p != places+pairs || m != 2*places {
		t.Errorf("exp calls: plain %d (want %d), mirrored %d (want %d)", p, places+pairs, m, 2*places)
	}
	loop := ptx.LoopBody(mirrored)
	past := strings.Index(loop, "setp.gt.s64")
	if past < 0 || past > strings.Index(loop, "mul.hi.u32") || !strings.Contains(loop, "setp.eq.s64") {
		t.Errorf("the mirrored loop does not branch past elements above the diagonal before drawing")
	}
	// Both values of an element go to the batch (deferredInOrder), in each place values are made,
	// and are folded in from there, in order.
	if n := strings.Count(mirrored, "st.local.f64"); n != 2*places {
		t.Errorf("mirrored: %d values stored in the batch, want %d (two values in each of %d places)", n, 2*places, places)
	}
	if n := strings.Count(mirrored, "add.rn.f64 %fd1, %fd1,"); n != 33 {
		t.Errorf("mirrored: the sum folded in at %d places, want 33 (a full batch's 16 elements' 2 values unrolled, a partial batch's loop)", n)
	}
	bad := spec([]int{0, 1})
	bad.Reduce = RArgMax
	if _, _, err := GeneratePTX(bad, string(lib)); err == nil {
		t.Error("a mirrored argmax spec validates")
	}
}
