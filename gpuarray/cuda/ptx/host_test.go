package ptx

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/kernels"
)

// fakeLib has the shape of nvcc's -rdc PTX output for the functions generated kernels call.
const fakeLib = `
.version 9.0
.target sm_90
.address_size 64
.visible .global .align 8 .b64 gpn_zig_k[256];
.visible .func  (.param .b64 func_retval0) gpn_normal_slow(
	.param .b64 gpn_normal_slow_param_0,
	.param .b32 gpn_normal_slow_param_1,
	.param .b32 gpn_normal_slow_param_2,
	.param .b32 gpn_normal_slow_param_3,
	.param .b32 gpn_normal_slow_param_4,
	.param .b32 gpn_normal_slow_param_5,
	.param .b32 gpn_normal_slow_param_6
)
{
}
.visible .func gpn_block_sum(
	.param .b64 gpn_block_sum_param_0,
	.param .b64 gpn_block_sum_param_1
)
{
}
.visible .func  (.param .b64 func_retval0) gpn_exp(
	.param .b64 gpn_exp_param_0
)
{
}
`

func seedSpec() *Spec {
	return &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{
		{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{42, 0}}},
		{Kind: NConst, Value: 1},
		{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}},
	}}
}

func TestGeneratePTXSeed(t *testing.T) {
	ptx, name, err := GeneratePTX(seedSpec(), fakeLib)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		".version 9.0", ".target sm_90", ".visible .entry " + name + "(",
		".extern .func (.param .b64 func_retval0) gpn_normal_slow(",
		".extern .func gpn_block_sum(", "call (retval0), gpn_normal_slow,", "call gpn_block_sum,",
		"mul.hi.u32", "ld.global.nc.u64", "add.rn.f64", ".maxntid 256, 1, 1",
	} {
		if !strings.Contains(ptx, want) {
			t.Errorf("generated PTX lacks %q", want)
		}
	}
	// Ten Philox rounds, two multiplies each for hi and lo, in the element loop and again where
	// the elements whose normal left the fast path are computed (Options.Defer): by the warp's
	// lanes together, and by each lane for its own.
	if n := strings.Count(ptx, "mul.hi.u32"); n != 60 {
		t.Errorf("got %d mul.hi.u32, want 60 (10 rounds x 2, three times)", n)
	}
	// The batch of values folded in element order, the queue of its slow elements' records
	// (place and leaf index), the warp's shared slots.
	for _, want := range []string{fmt.Sprintf(".local .align 8 .b8 gpn_defer_v[%d];", 8*opt.DeferBatch), fmt.Sprintf(".local .align 8 .b8 gpn_defer_q[%d];", 16*opt.DeferBatch),
		".shared .align 8 .b8 gpn_defer_s[2048];", "st.local.u64", "ld.local.u64", "ld.local.f64", "activemask.b32", "bar.warp.sync -1"} {
		if !strings.Contains(ptx, want) {
			t.Errorf("generated PTX lacks %q (the deferred slow draws)", want)
		}
	}
	// The slow path is called only where queued elements are computed: before that, a slow
	// draw only sets the element's predicate.
	loop := LoopBody(ptx)
	if strings.Contains(loop, "gpn_normal_slow") || !strings.Contains(loop, "or.pred") {
		t.Errorf("the element loop calls gpn_normal_slow or sets no predicate; it should queue the element")
	}
	opt.Defer = false
	inline, _, err := GeneratePTX(seedSpec(), fakeLib)
	opt.Defer = true
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(inline, "mul.hi.u32"); n != 20 || strings.Contains(inline, ".local") {
		t.Errorf("without deferral: %d mul.hi.u32 (want 20), local queue %v", n, strings.Contains(inline, ".local"))
	}
	// No FMA contraction is possible: every float op is .rn.
	if strings.Contains(ptx, "fma.") {
		t.Errorf("generated PTX uses fma")
	}
	ptx2, name2, _ := GeneratePTX(seedSpec(), fakeLib)
	if ptx2 != ptx || name2 != name {
		t.Errorf("generation is not deterministic")
	}
	s := seedSpec()
	s.Nodes[1].Value = 2
	if s.Key() == seedSpec().Key() {
		t.Errorf("different constants share a key")
	}
}

func TestGeneratePTXErrors(t *testing.T) {
	s := seedSpec()
	s.Nodes = append(s.Nodes, Node{Kind: NUnary, Op: expr.OpLog, Args: [3]int{2}})
	if _, _, err := GeneratePTX(s, fakeLib); err == nil || !strings.Contains(err.Error(), "gpn_log") {
		t.Errorf("missing library function: got %v", err)
	}
	bad := &Spec{Rank: 1, Nodes: []Node{{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 0}}}}
	if _, _, err := GeneratePTX(bad, fakeLib); err == nil || !strings.Contains(err.Error(), "earlier") {
		t.Errorf("forward reference: got %v", err)
	}
	if _, _, err := GeneratePTX(seedSpec(), ".target sm_90"); err == nil {
		t.Errorf("library without .version accepted")
	}
}

func TestGenerateWithRealLibrary(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Skipf("no device library PTX in this tree yet: %v", err)
	}
	for _, r := range []Reduce{RNone, RSum, RMin, RMax, RArgMin, RArgMax, RWelford} {
		s := seedSpec()
		s.Reduce = r
		s.Nodes = append(s.Nodes, Node{Kind: NUnary, Op: expr.OpExp, Args: [3]int{2}})
		if _, _, err := GeneratePTX(s, string(lib)); err != nil {
			t.Errorf("%v: %v", r, err)
		}
	}
}

func TestSlices(t *testing.T) {
	cases := []struct {
		m    int64
		want int
	}{{0, 0}, {1, 1}, {ElemsPerBlock, 1}, {ElemsPerBlock + 1, 2}, {5000 * 5000, 382}, {1 << 40, MaxSlices}}
	for _, c := range cases {
		if got := Slices(c.m); got != c.want {
			t.Errorf("Slices(%d) = %d, want %d", c.m, got, c.want)
		}
	}
	// Slices cover the task exactly, in order, none empty.
	for _, m := range []int64{1, 7, 65536, 25000000, 1<<40 + 3} {
		s := Slices(m)
		var next int64
		for b := 0; b < s; b++ {
			lo, hi := SliceRange(m, s, b)
			if lo != next || hi <= lo {
				t.Fatalf("m=%d slice %d: [%d, %d) after %d", m, b, lo, hi, next)
			}
			next = hi
		}
		if next != m {
			t.Fatalf("m=%d: slices end at %d", m, next)
		}
	}
}

func TestPlanLaunches(t *testing.T) {
	elems := make([]int64, 70000)
	for i := range elems {
		elems[i] = 100
	}
	ls, offs, err := PlanLaunches(elems, RSum, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Count != MaxTasksPerLaunch || ls[1].First != MaxTasksPerLaunch || ls[0].GridX != 1 {
		t.Fatalf("launches %+v", ls)
	}
	if offs[1] != 1 || offs[MaxTasksPerLaunch] != 0 {
		t.Fatalf("partial offsets %d %d", offs[1], offs[MaxTasksPerLaunch])
	}
	// Store kernels are split by the output budget.
	ls, offs, err = PlanLaunches([]int64{60, 60, 60}, RNone, 130)
	if err != nil || len(ls) != 2 || ls[1].First != 2 || offs[1] != 60 || offs[2] != 0 {
		t.Fatalf("budgeted launches %+v %v %v", ls, offs, err)
	}
	if _, _, err := PlanLaunches([]int64{200}, RNone, 130); err == nil || !strings.Contains(err.Error(), "smaller chunks") {
		t.Fatalf("oversized chunk: %v", err)
	}
	// Argmin partials take two words: offsets count partial slots.
	_, offs, _ = PlanLaunches([]int64{ElemsPerBlock * 3, 5}, RArgMin, 0)
	if offs[1] != 3 {
		t.Fatalf("arg offsets %v", offs)
	}
}

// TestLibraryForKernel: a kernel links with the library functions it declares and those they
// call, every variable, and nothing else (no BLAS kernels).
func TestLibraryForKernel(t *testing.T) {
	for _, fl := range []string{kernels.SM90, kernels.Generic} {
		lib, err := kernels.LibPTX(fl)
		if err != nil {
			t.Fatal(err)
		}
		parts := SplitLibrary(string(lib))
		var fns []string
		for _, it := range parts.items {
			if it.fn != "" {
				fns = append(fns, it.fn)
			}
		}
		for _, want := range []string{"gpn_philox", "gpn_normal", "gpn_normal_slow", "gpn_sin", "gpn_block_sum", "gpn_dgemm_nn", "__internal_trig_reduction_slowpathd"} {
			if !slices.Contains(fns, want) {
				t.Fatalf("%s: %s not among the library's items %v", fl, want, fns)
			}
		}
		// Everything but the header is in some item.
		total := len(parts.header)
		for _, it := range parts.items {
			total += len(it.text)
		}
		if total < len(lib)*99/100 {
			t.Errorf("%s: items and header hold %d of %d bytes", fl, total, len(lib))
		}
		spec := &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{
			{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1}},
			{Kind: NUnary, Op: expr.OpSin, Args: [3]int{0}},
		}}
		// Inlined (see Options.Inline), sin's body and the module-local items it uses are the
		// kernel's own, and its library part lacks gpn_sin.
		ptx, _, err := GeneratePTX(spec, string(lib))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"gpn_sin inlined", ".global .align 16 .b8 __cudart_sin_cos_coeffs[128] = {",
			".func  (.param .align 8 .b8 func_retval0[16]) __internal_trig_reduction_slowpathd(\n\t.param .b64 __internal_trig_reduction_slowpathd_param_0\n)\n{"} {
			if !strings.Contains(ptx, want) {
				t.Errorf("%s: the inlining kernel lacks %q", fl, want)
			}
		}
		if got := string(parts.ForKernel(ptx)); strings.Contains(got, "gpn_sin(") || strings.Contains(ptx, "call (retval0), gpn_sin") {
			t.Errorf("%s: gpn_sin is inlined, yet called or linked", fl)
		}
		opt.Inline = false
		ptx, _, err = GeneratePTX(spec, string(lib))
		opt.Inline = true
		if err != nil {
			t.Fatal(err)
		}
		got := string(parts.ForKernel(ptx))
		for _, want := range []string{".version", ".target", "gpn_zig_k", "gpn_red_v", "__cudart_sin_cos_coeffs",
			".func  (.param .b64 func_retval0) gpn_sin(", "gpn_normal_slow(", "gpn_block_sum(", "__internal_trig_reduction_slowpathd"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: the kernel's library lacks %q", fl, want)
			}
		}
		for _, not := range []string{"gpn_dgemm_nn", "gpn_transpose2d", "gpn_pow(", "gpn_block_welford(", "__internal_accurate_pow\n{"} {
			if strings.Contains(got, not) {
				t.Errorf("%s: the kernel's library has %q, which it does not call", fl, not)
			}
		}
		if len(got) > len(lib)/2 {
			t.Errorf("%s: the kernel's library is %d of %d bytes", fl, len(got), len(lib))
		}
		t.Logf("%s: %d of %d bytes of library PTX for a normal-sin-sum kernel", fl, len(got), len(lib))
	}
}

// kernelsLib returns the embedded device library's PTX for sm_90.
func kernelsLib() (string, error) {
	lib, err := kernels.LibPTX(kernels.SM90)
	return string(lib), err
}
