package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// workload is what the persist tests compute on an array: full, column and row statistics, a
// transpose, and column standardization, as an iterative workload reads it.
func workload(x *Array) map[string]*Array {
	return map[string]*Array{
		"sum":         x.Sum(),
		"mean":        x.Mean(),
		"std":         x.Std(),
		"col means":   x.Mean(0),
		"row std":     x.Std(1),
		"x + x.T":     x.Add(x.T()).Sum(),
		"standardize": x.Sub(x.Mean(0)).Div(x.Std(0)).Sum(0),
	}
}

func TestPersistOnHostThenSeveralComputations(t *testing.T) {
	x := NewRandomState(3).Normal(5, 2, Shape(300, 300), Chunks(70, 90)).Mul(3).Add(1)
	y := x.Persist(Threads(2))
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if y.Where() != "host" {
		t.Fatalf("persisted on the CPU: Where %q, want host", y.Where())
	}
	if !slices.Equal(y.Shape(), x.Shape()) || !slices.EqualFunc(y.Chunks(), x.Chunks(), slices.Equal) {
		t.Fatalf("persisted shape %v chunks %v, want %v %v", y.Shape(), y.Chunks(), x.Shape(), x.Chunks())
	}
	for pass := 0; pass < 2; pass++ {
		for name, got := range workload(y) {
			want, err := workload(x)[name].ToSlice(Threads(2))
			if err != nil {
				t.Fatal(err)
			}
			g, err := got.ToSlice(Threads(2))
			if err != nil {
				t.Fatal(err)
			}
			if !bitEqual(g, want) {
				t.Fatalf("pass %d, %s on the persisted array differs from the lazy one", pass, name)
			}
		}
	}
}

func bitEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

func TestComputeAllComputesSharedWorkOnce(t *testing.T) {
	x := NewRandomState(5).Uniform(-1, 1, Shape(200, 120), Chunks(50, 40))
	m := x.Mean(0)
	centered := x.Sub(m)
	sq := centered.Mul(centered)
	total := 0
	outs, err := ComputeAll(m, centered.Sum(), sq.Sum(1), centered, Inline(), WithProgress(func(_, tot int) { total = tot }))
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range []*Array{m, centered.Sum(), sq.Sum(1), centered} {
		want, err := a.ToSlice(Inline())
		if err != nil {
			t.Fatal(err)
		}
		got, err := outs[i].ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		if !bitEqual(got, want) {
			t.Fatalf("ComputeAll result %d differs from its own Compute", i)
		}
	}
	// One pass: the column means (12 chunks of x), centered (12 chunks, which the sums then
	// read from memory: 12 each), not the means again for every result.
	if want := 12 * 4; total != want {
		t.Fatalf("ComputeAll ran %d chunk tasks, want %d", total, want)
	}
	if _, err := ComputeAll(x, 3); err == nil || !strings.Contains(err.Error(), "argument 1 is a int") {
		t.Fatalf("ComputeAll with a bad argument: %v", err)
	}
	if _, err := ComputeAll(x, errArray(errReleased)); err == nil {
		t.Fatal("ComputeAll of an array with an error must fail")
	}
}

func TestChunkGridLocatesAndPlaces(t *testing.T) {
	g := newChunkGrid([]int{7, 5}, [][]int{{3, 3, 1}, {2, 3}})
	if i, o, s := g.within([]int{3, 2}, []int{5, 4}); i != 3 || !slices.Equal(o, []int{3, 2}) || !slices.Equal(s, []int{3, 3}) {
		t.Fatalf("within: %d %v %v", i, o, s)
	}
	if i, _, _ := g.within([]int{2, 0}, []int{3, 1}); i != -1 {
		t.Fatalf("a box across two row chunks: chunk %d", i)
	}
	if i := g.index([]int{6, 2}); i != 5 {
		t.Fatalf("index of the chunk at (6, 2): %d", i)
	}
	dst := make([]float64, 35)
	g.place(dtype.OfFloat64(dst), []int{3, 2}, []int{3, 3}, dtype.OfFloat64([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}))
	if dst[3*5+2] != 1 || dst[5*5+4] != 9 || dst[4*5+3] != 5 || dst[0] != 0 {
		t.Fatalf("place: %v", dst)
	}
}

// TestGPUPersistReadInPlace persists an array on one GPU, then runs several computations on
// it: their fused kernels read the chunks in place, and the results match the CPU's.
func TestGPUPersistReadInPlace(t *testing.T) {
	needGPU(t)
	x := NewRandomState(11).Normal(0, 1, Shape(2000, 2000), Chunks(500, 500))
	y := x.Persist(OnGPU())
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if y.Where() != "gpu 0" {
		t.Fatalf("Where %q", y.Where())
	}
	if h := y.HTML(); !strings.Contains(h, "Held on gpu 0") {
		t.Fatalf("HTML does not show the bytes on gpu 0: %s", h)
	}
	s, err := gpuScheduler([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	st, err := plan.Lower(0, y.Add(1).n, map[*expr.Node]dtype.Slice{}, planOptions(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range st.Tasks {
		if len(task.Inputs) != 1 || task.Inputs[0].Held == nil {
			t.Fatalf("task %d does not read the persisted chunk in place: %+v", task.Index, task.Inputs)
		}
	}
	for pass := 0; pass < 2; pass++ {
		for name, got := range workload(y) {
			want, err := workload(x)[name].ToSlice(Threads(0))
			if err != nil {
				t.Fatal(err)
			}
			g, err := got.ToSlice(OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i := range want {
				if math.Abs(g[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i]))*2000 {
					t.Fatalf("pass %d, %s[%d] on the GPU %v, CPU %v", pass, name, i, g[i], want[i])
				}
			}
		}
	}
	y.Release()
	if _, err := y.Sum().Float64(OnGPU()); err == nil {
		t.Fatal("reading a released persisted array must fail")
	}
}

// TestGPUPersistOnSeveralGPUs spreads a persisted array over every visible GPU and checks
// computations that read chunks held on two GPUs in one task (x + x.T).
func TestGPUPersistOnSeveralGPUs(t *testing.T) {
	needGPU(t)
	if len(GPUs()) < 2 {
		t.Skip("one GPU")
	}
	defer func(v bool) { peerCopy = v }(peerCopy)
	peerCopy = true
	x := NewRandomState(12).Normal(0, 1, Shape(1200, 1200), Chunks(300, 300))
	y := x.Persist(OnGPUs())
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(y.Where(), "gpus ") {
		t.Fatalf("Where %q", y.Where())
	}
	for name, got := range workload(y) {
		want, err := workload(x)[name].ToSlice(Threads(0))
		if err != nil {
			t.Fatal(err)
		}
		c, err := got.Compute(OnGPUs())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g, err := c.ToSlice()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Chunks (i, j) and (j, i) sit on different GPUs: one is copied to the other, never
		// through host memory.
		if p := c.Path(); name == "x + x.T" && (!strings.Contains(p, "copied between GPUs") || strings.Contains(p, "host")) {
			t.Errorf("%s: Path %q, want chunks copied between GPUs and no host step", name, p)
		}
		for i := range want {
			if math.Abs(g[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i]))*1200 {
				t.Fatalf("%s[%d] on the GPUs %v, CPU %v", name, i, g[i], want[i])
			}
		}
	}
	y.Release()
}

// TestColumnStatisticsInPlace checks the column statistics of the iterative workload against
// NumPy where the CPU executor reads contiguous input runs in place and folds a row at a time
// (rows longer than its 512-value blocks, chunks that cut them, data far from zero), and where
// it reads them strided (the transpose), persisted or not.
func TestColumnStatisticsInPlace(t *testing.T) {
	rs := rand.New(rand.NewPCG(16, 1))
	const r, c = 301, 1100
	v := make([]float64, r*c)
	for i := range v {
		v[i] = 1e4 + rs.NormFloat64()*3
	}
	in := input{"x", []int{r, c}, v}
	x := FromSlice(v, Shape(r, c), ChunkSizes([]int{120, 181}, []int{700, 400}))
	p := x.Mul(2).Add(1).Persist(Threads(2))
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	type tc struct {
		what string
		got  *Array
		code string
	}
	var cs []tc
	for name, a := range map[string]*Array{"x": x, "persisted 2x+1": p} {
		code := "x"
		if name != "x" {
			code = "(x*2+1)"
		}
		cs = append(cs,
			tc{name + " Mean(0)", a.Mean(0), fmt.Sprintf("%s.mean(axis=0)", code)},
			tc{name + " Var(0)", a.Var(0), fmt.Sprintf("%s.var(axis=0)", code)},
			tc{name + " Std(0)", a.Std(0), fmt.Sprintf("%s.std(axis=0)", code)},
			tc{name + " T Std(1)", a.T().Std(1), fmt.Sprintf("%s.T.std(axis=1)", code)},
			tc{name + " standardized", a.Sub(a.Mean(0)).Div(a.Std(0)).Abs().Sum(0), fmt.Sprintf("np.abs((%[1]s - %[1]s.mean(axis=0)) / %[1]s.std(axis=0)).sum(axis=0)", code)},
		)
	}
	cases := make([]npCase, len(cs))
	for i, c := range cs {
		cases[i] = npCase{Code: c.code, Inputs: map[string]npArray{"x": in.np()}}
	}
	for i, res := range numpy(t, cases) {
		if res.Err != "" {
			t.Fatalf("%s: numpy: %s", cs[i].code, res.Err)
		}
		got, err := cs[i].got.ToSlice(Threads(2))
		if err != nil {
			t.Fatalf("%s: %v", cs[i].what, err)
		}
		want := res.values(t)
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, numpy %d", cs[i].what, len(got), len(want))
		}
		for j, w := range want { // sums of squares round by summation order
			if math.Abs(got[j]-w) > 1e-11*math.Abs(w) {
				t.Fatalf("%s: element %d is %v, numpy %v", cs[i].what, j, got[j], w)
			}
		}
	}
}

// BenchmarkIteratePass is one pass of the iterative workload (bench iterate) on an array
// persisted in host memory: standardize the columns, sum the absolute values.
func BenchmarkIteratePass(b *testing.B) {
	x := NewRandomState(42).StandardNormal(Shape(3000, 3000), Chunks(750, 750)).Mul(2).Add(1).Persist(Threads(0))
	if err := x.Err(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(3 * 3000 * 3000 * 8) // x is read three times
	for b.Loop() {
		if _, err := x.Sub(x.Mean(0)).Div(x.Std(0)).Abs().Sum().Float64(Threads(0)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReductionsOfOneOperandRunTogether: the column statistics of one array are planned as
// one batch on the CPU threads (their tasks side by side, so the second reads the chunk from
// the cache) and give what each gives alone, bit for bit.
func TestReductionsOfOneOperandRunTogether(t *testing.T) {
	x := NewRandomState(9).Normal(3, 2, Shape(400, 300), Chunks(90, 70)).Persist(Threads(2))
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	y := x.Sub(x.Mean(0)).Div(x.Std(0)).Add(x.Max(0))
	cfg, err := configure([]ComputeOption{Threads(2)})
	if err != nil {
		t.Fatal(err)
	}
	order := stageOrder([]*expr.Node{y.n})
	if k := sameOperandReductions(cfg, order); k != 3 {
		t.Fatalf("%d of the %d stages run together, want the 3 reductions of x", k, len(order))
	}
	if k := sameOperandReductions(computeConfig{sched: engine.Inline{}}, order); k != 0 {
		t.Fatalf("inline: %d stages run together", k)
	}
	got, err := y.ToSlice(Threads(2))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := x.Mean(0).Compute(Threads(2))
	s, _ := x.Std(0).Compute(Threads(2))
	mx, _ := x.Max(0).Compute(Threads(2))
	want, err := x.Sub(m).Div(s).Add(mx).ToSlice(Threads(2))
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, want) {
		t.Fatal("the reductions run together differ from each run alone")
	}
}
