package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// seedKernel is the planner's kernel for (x + 1)[::2, ::2].sum() with x normal(10, 1) of n x n.
func seedKernel(n int) *plan.Kernel {
	half := (n + 1) / 2
	return &plan.Kernel{
		Shape: []int{half, half},
		Instrs: []plan.Instr{
			{Code: plan.Random, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{42, 0}},
				Src: []int{n, n}, Map: []expr.AxisMap{{Axis: 0, Step: 2}, {Axis: 1, Step: 2}}},
			{Code: plan.Const, DType: expr.Float64, Value: 1},
			{Code: plan.Binary, DType: expr.Float64, Op: expr.OpAdd, Args: []int{0, 1}},
		},
		Result: 2,
		Reduce: &plan.Reduction{Red: expr.Sum, Axes: []int{0, 1}},
	}
}

func TestLowerSeedMatchesHandWrittenTasks(t *testing.T) {
	const n, c = 2000, 300
	k := seedKernel(n)
	s, leaves, err := Lower(k)
	if err != nil {
		t.Fatal(err)
	}
	if s.Reduce != RSum || s.Rank != 2 || s.Nodes[0].Kind != NRandom || leaves[0] != 0 || leaves[1] != -1 {
		t.Fatalf("spec %+v leaves %v", s, leaves)
	}
	want := seedTasks(n, c, 2)
	// The planner's chunks of the kept (half-size) space: c/2 kept rows per source chunk.
	var got []Task
	half := (n + 1) / 2
	for r := 0; r < half; r += c / 2 {
		for q := 0; q < half; q += c / 2 {
			pt := &plan.Task{Kernel: k, Offset: []int{r, q}, Shape: []int{min(c/2, half-r), min(c/2, half-q)}}
			gt, err := lowerTask(pt, leaves, s.Leaves(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, gt)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d tasks, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i].Dims, want[i].Dims) || !reflect.DeepEqual(got[i].Maps, want[i].Maps) {
			t.Fatalf("task %d: got %+v want %+v", i, got[i], want[i])
		}
	}
}

// TestLowerPartialAndRange: a reduction over some axes lowers to a partial reduction whose
// tasks walk the kept axes first; a range leaf lowers to NRange with its last index; a 0-d
// space runs as one element.
func TestLowerPartialAndRange(t *testing.T) {
	k := &plan.Kernel{Shape: []int{6, 8, 10}, Reduce: &plan.Reduction{Red: expr.ArgMax, Axes: []int{0, 2}}, Instrs: []plan.Instr{
		{Code: plan.Range, DType: expr.Float32, Start: 2, Step: 0.5, Stop: 9, Exact: true, Src: []int{10}, Map: []expr.AxisMap{{Axis: 2, Step: 1}}},
		{Code: plan.Random, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1}, Src: []int{6, 8, 10}, Map: []expr.AxisMap{{Axis: 0, Step: 1}, {Axis: 1, Step: 1}, {Axis: 2, Step: 1}}},
		{Code: plan.Binary, DType: expr.Float64, Op: expr.OpAdd, Args: []int{0, 1}},
	}, Result: 2}
	s, leaves, err := Lower(k)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kept != 1 || s.Reduce != RArgMax || s.Rank != 3 || s.Rows {
		t.Fatalf("spec kept %d reduce %v rank %d", s.Kept, s.Reduce, s.Rank)
	}
	if nd := s.Nodes[0]; nd.Kind != NRange || nd.Value != 2 || nd.Step != 0.5 || nd.Stop != 9 || !nd.Exact || nd.Last != 9 || leaves[0] != 0 {
		t.Fatalf("range node %+v", nd)
	}
	task := &plan.Task{Kernel: k, Offset: []int{2, 4, 5}, Shape: []int{3, 4, 5}}
	gt, err := lowerTask(task, leaves, s.Leaves(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kept axis 1 first, then reduced axes 0 and 2.
	if !slices.Equal(gt.Dims, []int64{4, 3, 5}) {
		t.Fatalf("dims %v", gt.Dims)
	}
	if m := gt.Maps[1]; !slices.Equal(m.Strides, []int64{10, 80, 1}) || m.Off != 2*80+4*10+5 {
		t.Fatalf("random leaf map %+v", m)
	}
	if m := gt.Maps[0]; !slices.Equal(m.Strides, []int64{0, 0, 1}) || m.Off != 5 {
		t.Fatalf("range leaf map %+v", m)
	}
	if err := gt.validate(s); err != nil {
		t.Fatal(err)
	}
	// Innermost axis reduced over at least axesMinRow elements: a warp per run.
	k.Shape = []int{6, 8, 50}
	if s, _, err := Lower(k); err != nil || !s.Rows {
		t.Fatalf("row reduction: rows %v, %v", s.Rows, err)
	}
	k.Reduce.Axes = []int{0, 1}
	if s, _, err := Lower(k); err != nil || s.Rows || s.Short {
		t.Fatalf("column reduction: rows %v, short %v, %v", s.Rows, s.Short, err)
	}
	// Runs of at most axesMaxShort elements (rows or columns): a thread per kept element.
	for _, c := range []struct {
		shape, axes []int
		short       bool
	}{
		{[]int{20, 2, 30}, []int{1}, true}, // x.reshape(20, 2, 30).sum(1)
		{[]int{6, 8, 4}, []int{0, 2}, true},
		{[]int{32, 8, 50}, []int{0}, true},
		{[]int{33, 8, 50}, []int{0}, false},
		{[]int{6, 8, 50}, []int{0, 1}, false},
	} {
		k.Shape, k.Reduce.Axes = c.shape, c.axes
		s, _, err := Lower(k)
		if err != nil || s.Short != c.short || s.Rows {
			t.Fatalf("%v over %v: short %v, rows %v, %v", c.shape, c.axes, s.Short, s.Rows, err)
		}
	}
	z := &plan.Kernel{Shape: nil, Instrs: []plan.Instr{{Code: plan.Const, DType: expr.Float64, Value: 3}}}
	zs, zl, err := Lower(z)
	if err != nil || zs.Rank != 1 {
		t.Fatalf("0-d kernel: %v rank %v", err, zs)
	}
	zt, err := lowerTask(&plan.Task{Kernel: z}, zl, zs.Leaves(), nil)
	if err != nil || !slices.Equal(zt.Dims, []int64{1}) {
		t.Fatalf("0-d task %v %v", zt.Dims, err)
	}
}

// TestPartialCollect: slices combine in order per kept element; arg indices go back to the
// whole space's reduced axes.
func TestPartialCollect(t *testing.T) {
	f := math.Float64bits
	// k = 2 kept elements, 3 slices each: slot b*2+q.
	words := []uint64{f(1), f(10), f(2), f(20), f(3), f(30)}
	p := collectAxes(reduceOf(RSum, expr.Float64), words, 0, 2, 3)
	if !slices.Equal(p.Values, []float64{6, 60}) {
		t.Fatalf("sums %v", p.Values)
	}
	p = collectAxes(reduceOf(RMax, expr.Float64), words, 0, 2, 3)
	if !slices.Equal(p.Values, []float64{3, 30}) {
		t.Fatalf("max %v", p.Values)
	}
	// ArgMin over (value, index) pairs: a tie goes to the smaller index, an empty slice is skipped.
	arg := []uint64{f(5), 7, f(1), 4, f(5), 2, f(math.Inf(1)), ^uint64(0), f(6), 9, f(1), 3}
	p = collectAxes(reduceOf(RArgMin, expr.Float64), arg, 0, 2, 3)
	if !slices.Equal(p.Index, []int64{2, 3}) || !slices.Equal(p.Values, []float64{5, 1}) {
		t.Fatalf("argmin %v %v", p.Values, p.Index)
	}
	w := []uint64{f(2), f(1), f(0.5), f(2), f(3), f(0.5)}
	p = collectAxes(reduceOf(RWelford, expr.Float64), w, 0, 1, 2)
	if p.Count[0] != 4 || p.Mean[0] != 2 || p.M2[0] != 5 {
		t.Fatalf("welford %v %v %v", p.Count, p.Mean, p.M2)
	}
	k := &plan.Kernel{Shape: []int{10, 20, 30}, Reduce: &plan.Reduction{Red: expr.ArgMin, Axes: []int{0, 2}}}
	task := &plan.Task{Kernel: k, Offset: []int{4, 0, 10}, Shape: []int{3, 20, 5}}
	// local reduced (1, 2) -> global (5, 12) -> 5*30 + 12.
	if g := reducedIndex(task, k.Reduced(), 1*5+2); g != 162 {
		t.Fatalf("reduced index %d", g)
	}
	for _, c := range []struct{ k, n, want int64 }{{10000, 10000, 2}, {1, 1 << 30, 512}, {1 << 20, 5, 1}, {100, 1000, 1}, {40, 1 << 20, 256}, {0, 5, 1}} {
		if got := AxesSlices(c.k, c.n); got != c.want {
			t.Errorf("AxesSlices(%d, %d) = %d, want %d", c.k, c.n, got, c.want)
		}
	}
	for _, c := range []struct{ k, n, want int64 }{{10000, 10000, 1}, {1, 1 << 30, 512}, {1, 10000, 2}, {40, 1 << 20, 13}} {
		if got := AxesWarpSlices(c.k, c.n); got != c.want {
			t.Errorf("AxesWarpSlices(%d, %d) = %d, want %d", c.k, c.n, got, c.want)
		}
	}
}

// TestGenerateAxesPTX: partial reductions of every kind, in each walk (eight warps per block,
// a warp per run, a thread per short run), generate a kernel that stores its partials per
// (slice, kept element), with the real device library; a warp's partials merge by shuffles,
// a block's through shared memory, a short walk's not at all.
func TestGenerateAxesPTX(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	reds := []Reduce{RSum, RMin, RMax, RArgMin, RArgMax, RWelford}
	for i, r := range slices.Concat(reds, reds, reds) {
		s := seedSpec()
		s.Rank, s.Kept, s.Reduce, s.Rows, s.Short = 3, 1, r, i >= 6 && i < 12, i >= 12
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		s.Nodes = append(s.Nodes, Node{Kind: NRange, Leaf: 1, Value: 1, Step: 2, Stop: 5, Exact: true, Last: 2, DType: expr.Float32},
			Node{Kind: NBinary, Op: expr.OpMul, Args: [3]int{2, 3}})
		text, name, err := GeneratePTX(s, string(lib))
		if err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		if !strings.HasPrefix(name, "gpn_axes_") || !strings.Contains(text, ".visible .entry "+name+"(") {
			t.Fatalf("%v: entry %s", r, name)
		}
		stores := map[Reduce]int{RSum: 1, RMin: 1, RMax: 1, RArgMin: 2, RArgMax: 2, RWelford: 3}[r]
		if n := strings.Count(text, "st.global."); n != stores {
			t.Errorf("%v: %d stores, want %d", r, n, stores)
		}
		for _, want := range []string{"div.u32", "cvt.rn.f64.s64", "cvt.rn.f32.f64", "setp.eq.s64"} {
			// (A short walk of one kept axis divides nothing: its runs start at element 0.)
			if !strings.Contains(text, want) && !(s.Short && want == "div.u32") {
				t.Errorf("%v: PTX lacks %q", r, want)
			}
		}
		shfl := map[Reduce]int{RSum: 10, RMin: 10, RMax: 10, RArgMin: 20, RArgMax: 20, RWelford: 30}[r] // 5 steps, 2 words per value
		if !s.Rows {
			shfl = 0
		}
		if n := strings.Count(text, "shfl.sync.down.b32"); n != shfl {
			t.Errorf("%v rows %v: %d shuffles, want %d", r, s.Rows, n, shfl)
		}
		if block := !s.Rows && !s.Short; block != strings.Contains(text, "bar.sync 0") || block != strings.Contains(text, "gpn_axes_part") {
			t.Errorf("%v rows %v short %v: a merge through shared memory in a warp's or a thread's kernel, or none in a block's", r, s.Rows, s.Short)
		}
		// (The library's slow normal path, copied in, has its own fma: its log and exp.)
		if own := ptx.CollapseInlinedSlow(text); strings.Contains(own, "fma.") || strings.Contains(own, "gpn_block_") {
			t.Errorf("%v: PTX uses fma or a block reduction", r)
		}
	}
}

func TestGlobalArgIndex(t *testing.T) {
	k := &plan.Kernel{Shape: []int{10, 20}}
	pt := &plan.Task{Kernel: k, Offset: []int{4, 10}, Shape: []int{3, 5}}
	// local (1, 2) -> global (5, 12) -> 5*20 + 12.
	if g := globalIndex(pt, 1*5+2); g != 112 {
		t.Fatalf("global index %d", g)
	}
	if globalIndex(pt, -1) != -1 {
		t.Fatal("empty stays -1")
	}
}

// TestSpecKeyIgnoresRandomKey: specs that differ only in a random leaf's Philox key share a
// kernel (the key is read from the task descriptor), and the generated PTX has no key in it.
func TestSpecKeyIgnoresRandomKey(t *testing.T) {
	spec := func(k0, k1 uint32) *Spec {
		return &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{k0, k1}}}}}
	}
	a, b := spec(0x1234567, 0x7654321), spec(99, 98)
	if a.Key() != b.Key() {
		t.Fatalf("keys differ: %s %s", a.Key(), b.Key())
	}
	c := spec(99, 98)
	c.Nodes[0].Rand.P1 = 2
	if c.Key() == b.Key() {
		t.Fatal("a different distribution parameter must change the spec key")
	}
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := GeneratePTX(a, string(lib))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"19088743", "124076833"} { // 0x1234567, 0x7654321
		if strings.Contains(text, k) {
			t.Errorf("the key %s is compiled into the PTX", k)
		}
	}
}

// TestLowerReshapedRange: a range read through a reshape has an N-d source; Linspace's exact
// stop belongs to its last element in row-major order.
func TestLowerReshapedRange(t *testing.T) {
	k := &plan.Kernel{Shape: []int{3, 4}, Instrs: []plan.Instr{
		{Code: plan.Range, DType: expr.Float64, Start: 0, Step: 1.0 / 11, Stop: 1, Exact: true, Src: []int{3, 4}, Map: []expr.AxisMap{{Axis: 0, Step: 1}, {Axis: 1, Step: 1}}},
	}, Result: 0}
	s, _, err := Lower(k)
	if err != nil {
		t.Fatal(err)
	}
	if nd := s.Nodes[0]; nd.Kind != NRange || nd.Last != 11 {
		t.Fatalf("range node %+v, want Last 11", nd)
	}
}

// TestLowerSharesPhiloxKeys lowers x + x.T (one random array read twice) and x + y (two
// random arrays): the second read of x derives no round keys of its own (the Philox key
// schedule is nine additions per word, held in registers through the element loop), and its
// spec key differs from x + y's, whose keys differ, so the two never share a linked kernel.
func TestLowerSharesPhiloxKeys(t *testing.T) {
	rnd := func(key uint32, m []expr.AxisMap) plan.Instr {
		return plan.Instr{Code: plan.Random, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P0: 0, P1: 1, Key: [2]uint32{key, 7}},
			Src: []int{100, 100}, Map: m}
	}
	straight := []expr.AxisMap{{Axis: 0, Step: 1}, {Axis: 1, Step: 1}}
	swapped := []expr.AxisMap{{Axis: 1, Step: 1}, {Axis: 0, Step: 1}}
	kernel := func(k2 uint32, m2 []expr.AxisMap) *plan.Kernel {
		return &plan.Kernel{Shape: []int{100, 100}, Instrs: []plan.Instr{rnd(42, straight), rnd(k2, m2),
			{Code: plan.Binary, DType: expr.Float64, Op: expr.OpAdd, Args: []int{0, 1}}},
			Result: 2, Reduce: &plan.Reduction{Red: expr.Sum, Axes: []int{0, 1}}}
	}
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	schedules := func(s *Spec) int {
		text, _, err := GeneratePTX(s, string(lib))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(text, "-1640531527") / 9
	}
	xt, _, err := Lower(kernel(42, swapped))
	if err != nil {
		t.Fatal(err)
	}
	xy, _, err := Lower(kernel(43, swapped))
	if err != nil {
		t.Fatal(err)
	}
	if xt.Nodes[1].SameKey != 1 || xy.Nodes[1].SameKey != 0 || xt.Nodes[0].SameKey != 0 {
		t.Fatalf("SameKey: x + x.T %d, x + y %d", xt.Nodes[1].SameKey, xy.Nodes[1].SameKey)
	}
	if xt.Key() == xy.Key() {
		t.Fatal("x + x.T and x + y have one spec key: a linked kernel would be shared")
	}
	if n, m := schedules(xt), schedules(xy); n != 1 || m != 2 {
		t.Fatalf("key schedules in the PTX: x + x.T %d (want 1), x + y %d (want 2)", n, m)
	}
}
