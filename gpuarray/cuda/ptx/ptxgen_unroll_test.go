package ptx

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/kernels"
)

var singleLabel = regexp.MustCompile(`\n\$L_single_\d+:`)

// TestUnrolledLoads: kernels that read inputs and draw no random numbers load unrollLoads
// elements of each input before accumulating any (so each thread has that many loads in
// flight), then accumulate them in element order; the one-element body stays for row ends.
// Random kernels keep one element per pass.
func TestUnrolledLoads(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	in := func(leaf int) Node { return Node{Kind: NInput, DType: expr.Float64, Leaf: leaf} }
	cases := []struct {
		name   string
		s      Spec
		loads  int // ld.global.nc.f64 in the kernel
		unroll bool
	}{
		{"sum", Spec{Rank: 2, Reduce: RSum, Nodes: []Node{in(0)}}, UnrollLoads + 1, true},
		{"sum x+y", Spec{Rank: 2, Reduce: RSum, Nodes: []Node{in(0), in(1), {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}}}}, 2 * (UnrollLoads + 1), true},
		{"argmax", Spec{Rank: 3, Reduce: RArgMax, Nodes: []Node{in(0)}}, UnrollLoads + 1, true},
		{"store", Spec{Rank: 2, Reduce: RNone, Nodes: []Node{in(0), {Kind: NConst, Value: 1}, {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}}}}, UnrollLoads + 1, true},
		{"rows", Spec{Rank: 2, Reduce: RSum, Kept: 1, Rows: true, Nodes: []Node{in(0)}}, UnrollLoads + 1, true},
		{"columns", Spec{Rank: 2, Reduce: RWelford, Kept: 1, Nodes: []Node{in(0)}}, UnrollLoads + 1, true},
		{"random", *seedSpec(), 3, false}, // the ziggurat's table, in the loop and where deferred elements are computed (by the warp, by each lane)
		{"five inputs", Spec{Rank: 1, Reduce: RSum, Nodes: []Node{in(0), in(1), in(2), in(3), in(4),
			{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}}, {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{5, 2}},
			{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{6, 3}}, {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{7, 4}}}}, 5, false},
	}
	// Inputs of 4-byte floats: narrowUnroll loads per pass, up to two inputs.
	narrow := func(leaf int) Node { return Node{Kind: NInput, DType: expr.Float32, Leaf: leaf, Narrow: true} }
	for _, c := range []struct {
		name  string
		s     Spec
		loads int // ld.global.nc.f32, in the pass and in the one-element body
	}{
		{"narrow sum", Spec{Rank: 2, Reduce: RSum, Nodes: []Node{narrow(0)}}, narrowUnroll + 1},
		{"narrow rows", Spec{Rank: 2, Reduce: RSum, Kept: 1, Rows: true, Nodes: []Node{narrow(0)}}, narrowUnroll + 1},
		{"narrow x+y", Spec{Rank: 2, Reduce: RSum, Nodes: []Node{narrow(0), narrow(1), {Kind: NBinary, Op: expr.OpAdd, DType: expr.Float32, Args: [3]int{0, 1}}}}, 2 * (narrowUnroll + 1)},
		{"narrow and wide", Spec{Rank: 2, Reduce: RSum, Nodes: []Node{narrow(0), {Kind: NInput, DType: expr.Float32, Leaf: 1}, {Kind: NBinary, Op: expr.OpAdd, DType: expr.Float32, Args: [3]int{0, 1}}}}, UnrollLoads + 1},
	} {
		ptx, _, err := GeneratePTX(&c.s, string(lib))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := strings.Count(ptx, "ld.global.nc.f32"); n != c.loads {
			t.Errorf("%s: %d f32 loads, want %d", c.name, n, c.loads)
		}
	}
	for _, c := range cases {
		ptx, _, err := GeneratePTX(&c.s, string(lib))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// The ziggurat's w, alone or with its k in one load (Options.NormalFold), counts as one.
		if n := strings.Count(ptx, "ld.global.nc.f64") + strings.Count(ptx, "ld.global.nc.v2.u64"); n != c.loads {
			t.Errorf("%s: %d f64 loads, want %d", c.name, n, c.loads)
		}
		if strings.Contains(ptx, "$L_single_") != c.unroll {
			t.Errorf("%s: unrolled %v, want %v", c.name, !c.unroll, c.unroll)
		}
		if !c.unroll {
			continue
		}
		// In the unrolled pass, every load comes before the first use of a loaded value.
		body := ptx[strings.Index(ptx, "\n$L_loop_"):singleLabel.FindStringIndex(ptx)[0]]
		lastLoad := strings.LastIndex(body, "ld.global.nc.f64")
		for _, use := range []string{"add.rn.f64", "max.f64", "setp.gt.f64", "st.global.f64", "div.rn.f64"} {
			if i := strings.Index(body, use); i >= 0 && i < lastLoad {
				t.Errorf("%s: %s before the pass's last load", c.name, use)
			}
		}
		if n := strings.Count(body, "ld.global.nc.f64"); n != c.loads/(UnrollLoads+1)*UnrollLoads {
			t.Errorf("%s: %d loads in the unrolled pass", c.name, n)
		}
	}
}
