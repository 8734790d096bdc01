package gpuarray

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestGPUResultsChoice checks, without a GPU, which results of a GPU compute stay on the
// device: array results do (complex and 64-bit integers too: the kernel's words hold them
// exactly), scalars and data do not; all of them only when they fit in half the free memory; and elementwise roots leave the host stages (reductions stay, to be combined
// there first).
func TestGPUResultsChoice(t *testing.T) {
	x := NewRandomState(1).StandardNormal(Shape(40, 30), Chunks(10, 10))
	cases := []struct {
		name string
		a    *Array
		want bool
	}{
		{"x.Sum()", x.Sum(), false},
		{"x.Sum(0)", x.Sum(0), true},
		{"x.Std(1)", x.Std(1), true},
		{"x.ArgMax(1)", x.ArgMax(1), true},
		{"x + 1", x.Add(1), true},
		{"data", FromSlice([]float64{1, 2, 3}, Shape(3)), false},
		{"complex", x.AsType(Complex128), true},
		{"int64", x.Mul(1e17).AsType(Int64), true},
		{"empty", x.Slice(Span(0, 0)), false},
	}
	for _, c := range cases {
		if err := c.a.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := staysOnDevice(c.a.n); got != c.want {
			t.Errorf("%s: staysOnDevice %v, want %v", c.name, got, c.want)
		}
	}
	if !fitsOnDevice(500, 1000) || fitsOnDevice(501, 1000) || fitsOnDevice(1, 0) {
		t.Error("fitsOnDevice: results may take half the free memory")
	}

	// Stages: the elementwise root leaves the host stages; the reduction root and the
	// reduction another root reads stay there.
	m := x.Mean(0)
	y := x.Sub(m)
	roots := []*expr.Node{y.n, x.Std(1).n, x.Sum().n}
	r := &gpuResults{stay: map[*expr.Node]bool{}, host: map[*expr.Node]string{}}
	for _, n := range roots {
		if staysOnDevice(n) {
			r.stay[n] = true
		}
	}
	order := r.stages(stageOrder(roots))
	if len(r.direct) != 1 || r.direct[0] != y.n {
		t.Fatalf("direct roots: %v, want only x - mean(x, 0)", r.direct)
	}
	has := func(n *expr.Node) bool {
		for _, o := range order {
			if o == n {
				return true
			}
		}
		return false
	}
	if has(y.n) || !has(m.n) || !has(roots[1]) || !has(roots[2]) {
		t.Fatalf("host stages %v: want the column mean, the row std and the sum, not the difference", order)
	}
	// On one GPU, a float sum, mean or std over some axes that no other stage reads is combined
	// on the device (keepSum); the column mean that x - mean reads and the full sum are not.
	rowSum, m32 := x.Sum(1), x.AsType(Float32).Mean(0)
	roots = []*expr.Node{y.n, x.Std(1).n, x.Sum().n, rowSum.n, m32.n}
	r = &gpuResults{g: &gpuSched{devs: make([]*cuda.Device, 1)}, stay: map[*expr.Node]bool{}, host: map[*expr.Node]string{}}
	for _, n := range roots {
		if staysOnDevice(n) {
			r.stay[n] = true
		}
	}
	order = r.stages(stageOrder(roots))
	if len(r.direct) != 4 || r.direct[0] != y.n || !slices.Contains(r.direct, roots[1]) || !slices.Contains(r.direct, rowSum.n) || !slices.Contains(r.direct, m32.n) {
		t.Fatalf("direct roots on one GPU: %v, want x - mean(x, 0), std(x, 1), sum(x, 1), mean(float32(x), 0)", r.direct)
	}
	if !has(m.n) || has(roots[1]) || !has(roots[2]) || has(rowSum.n) {
		t.Fatalf("host stages on one GPU %v: want the column mean and the sum", order)
	}
	// GPUNOTES_GPU_WELFORD_KEEP=0: the std is combined on the host.
	welfordKeep = false
	r.direct = nil
	order = r.stages(stageOrder(roots))
	welfordKeep = true
	if len(r.direct) != 3 || slices.Contains(r.direct, roots[1]) || !has(roots[1]) {
		t.Fatalf("without welfordKeep: direct roots %v, host stages %v; want the std on the host", r.direct, order)
	}
	r.g.devs = make([]*cuda.Device, 2)
	r.direct = nil
	if r.stages(stageOrder(roots)); len(r.direct) != 1 {
		t.Fatalf("direct roots on two GPUs: %v, want x - mean(x, 0) only", r.direct)
	}
	// The chunks upload copies out of a result, placed back, give the result.
	whole := make([]float64, 7*5*3)
	for i := range whole {
		whole[i] = float64(i)
	}
	g := newChunkGrid([]int{7, 5, 3}, [][]int{{3, 4}, {2, 2, 1}, {3}})
	back := make([]float64, len(whole))
	for _, off := range [][]int{{0, 0, 0}, {0, 2, 0}, {0, 4, 0}, {3, 0, 0}, {3, 2, 0}, {3, 4, 0}} {
		shape := []int{map[int]int{0: 3, 3: 4}[off[0]], map[int]int{0: 2, 2: 2, 4: 1}[off[1]], 3}
		buf := make([]float64, expr.Size(shape))
		g.runs(off, shape, func(at, o, k int) { copy(buf[o:o+k], whole[at:at+k]) })
		g.place(dtype.OfFloat64(back), off, shape, dtype.OfFloat64(buf))
	}
	for i := range whole {
		if back[i] != whole[i] {
			t.Fatalf("chunks copied out and placed back: element %d is %v, want %v", i, back[i], whole[i])
		}
	}
	if (*gpuResults)(nil).onHost(y.n) != "" {
		t.Error("a nil gpuResults has no host results")
	}
}

// TestComputeOnCPUUnchanged checks that the CPU schedulers still return host arrays with no
// Path, and that ToSlice and ToSliceInt64 read them.
func TestComputeOnCPUUnchanged(t *testing.T) {
	x := NewRandomState(2).StandardNormal(Shape(20, 12), Chunks(5, 5))
	c, err := x.ArgMax(1).Compute(Threads(2))
	if err != nil {
		t.Fatal(err)
	}
	if c.Where() != "host" || c.Path() != "" {
		t.Fatalf("CPU compute: where %q, path %q", c.Where(), c.Path())
	}
	idx, err := c.ToSliceInt64()
	if err != nil || len(idx) != 20 {
		t.Fatalf("ToSliceInt64: %v, %d values", err, len(idx))
	}
	row, err := x.Slice(Span(3, 4)).ToSlice(Inline())
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for j, v := range row {
		if v > row[best] {
			best = j
		}
	}
	if idx[3] != int64(best) {
		t.Fatalf("argmax of row 3: %d, the row's largest is at %d", idx[3], best)
	}
}

// TestGPUArrayResultsStayOnDevice computes array results with OnGPU: they stay in device
// memory (an elementwise one written there by its kernel, reductions put there once their
// partials are combined), hold the same bits as the host path of the same kernels, are read
// in place by later GPU computations (never copied to the host), and come to the host when
// asked.
func TestGPUArrayResultsStayOnDevice(t *testing.T) {
	needGPU(t)
	x := NewRandomState(21).StandardNormal(Shape(700, 500), Chunks(200, 128))
	cases := map[string]*Array{
		"mean(x, 0)":    x.Mean(0),
		"std(x, 1)":     x.Std(1),
		"argmax(x, 1)":  x.ArgMax(1),
		"x * 2 + 1":     x.Mul(2).Add(1),
		"sum(x, 0) f32": x.AsType(Float32).Sum(0),
	}
	for name, a := range cases {
		c, err := a.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Where() != "gpu 0" || !strings.Contains(c.Path(), "result kept on gpu 0") || strings.Contains(c.Path(), "host") {
			t.Fatalf("%s: where %q, path %q", name, c.Where(), c.Path())
		}
		if !strings.Contains(c.HTML(), "computed, on gpu 0 (") || c.n.Buf.(offHost).copied() {
			t.Fatalf("%s: HTML repr %s", name, c.HTML())
		}
		if c.DType() != a.DType() {
			t.Fatalf("%s: dtype %v, want %v", name, c.DType(), a.DType())
		}
		viaHost, err := a.ToSlice(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		held, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := a.ToSlice(Threads(0))
		if err != nil {
			t.Fatal(err)
		}
		for i := range viaHost {
			if math.Float64bits(held[i]) != math.Float64bits(viaHost[i]) {
				t.Fatalf("%s[%d]: held on the GPU %v, brought to the host %v", name, i, held[i], viaHost[i])
			}
			if math.Abs(held[i]-cpu[i]) > 1e-10*math.Max(1, math.Abs(cpu[i])) {
				t.Fatalf("%s[%d]: GPU %v, CPU %v", name, i, held[i], cpu[i])
			}
		}
	}

	// A later computation reads a held column mean in place: it is never copied to the host.
	m, err := x.Mean(0).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	d, err := x.Sub(m).Std(0).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if m.n.Buf.(offHost).copied() {
		t.Fatal("the held mean was copied to the host to be read on the GPU")
	}
	want, err := x.Sub(x.Mean(0)).Std(0).ToSlice(Threads(0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-10 {
			t.Fatalf("std(x - mean(x, 0), 0)[%d]: GPU %v, CPU %v", i, got[i], want[i])
		}
	}

	// ComputeAll of one array twice gives one held array (releasing one cannot pull the
	// memory from under the other).
	r := x.Std(0)
	two, err := ComputeAll(r, r, OnGPU())
	if err != nil || two[0] != two[1] || two[0].Where() != "gpu 0" {
		t.Fatalf("ComputeAll(r, r): %v, %d arrays", err, len(two))
	}

	// Printing a small held result copies it and prints its values.
	if p := m.String(); strings.Contains(p, "gpu") || !m.n.Buf.(offHost).copied() {
		t.Fatalf("printing the held mean: %s", p)
	}

	// Scalars are host values.
	s, err := x.Sum().Compute(OnGPU())
	if err != nil || s.Where() != "host" {
		t.Fatalf("a scalar: %v, where %q", err, s.Where())
	}
	e, err := x.Add(1).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	e.Release()
	if _, err := e.ToSlice(); err == nil {
		t.Fatal("reading a released result must fail")
	}
}

// TestGPUArrayResultsOnSeveralGPUs computes array results with OnGPUs: their chunks stay on
// the GPUs that computed them (row chunks dealt round-robin, as Persist deals them), and they
// equal one GPU's bits.
func TestGPUArrayResultsOnSeveralGPUs(t *testing.T) {
	needGPU(t)
	if len(GPUs()) < 2 {
		t.Skip("one GPU")
	}
	x := NewRandomState(22).StandardNormal(Shape(1200, 900), Chunks(300, 300))
	for name, a := range map[string]*Array{"x + 1": x.Add(1), "std(x, 1)": x.Std(1), "argmin(x, 1)": x.ArgMin(1)} {
		c, err := a.Compute(OnGPUs())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.HasPrefix(c.Where(), "gpus ") || strings.Contains(c.Path(), "host") {
			t.Fatalf("%s: where %q, path %q", name, c.Where(), c.Path())
		}
		got, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		want, err := a.ToSlice(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%s[%d]: on several GPUs %v, on one %v", name, i, got[i], want[i])
			}
		}
	}
}

// TestGPUResultsFreedByCollector computes, in a loop, array results of about 30% of the GPU
// pool each and drops them: each one stays on the GPU, because the one before it, unreachable,
// gives its memory back when collected (its cleanup must not wait for the device, whose
// goroutine is the one collecting).
func TestGPUResultsFreedByCollector(t *testing.T) {
	needGPU(t)
	s, err := gpuScheduler([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	dev := s.(*gpuSched).devs[0]
	var limit uint64
	if err := dev.Do(t.Context(), func() error { limit = dev.Pool().Limit(); return nil }); err != nil {
		t.Fatal(err)
	}
	side := int(math.Sqrt(0.3 * float64(limit) / 8))
	side -= side % 8
	x := NewRandomState(23).StandardNormal(Shape(side, side), Chunks(side/4, side/4))
	for i := range 5 {
		c, err := x.Add(float64(i)).Compute(OnGPU())
		if err != nil {
			t.Fatalf("result %d of %d x %d: %v", i, side, side, err)
		}
		if c.Where() != "gpu 0" {
			t.Fatalf("result %d of %d x %d (%.3g GB) is not on the GPU: %s", i, side, side, float64(side)*float64(side)*8/1e9, c.Path())
		}
	}
}

// TestPartialsStayChoice checks, without a GPU, which reductions leave their values on the
// device as their tasks' partials (no host combine): float64 sums, mins and maxes over axes
// that lie in one chunk, with one slice per kept element and one task per result chunk; not
// means, other dtypes, reductions over several chunks, long rows (several warps per row), or
// a reduction another root reads.
func TestPartialsStayChoice(t *testing.T) {
	x := NewRandomState(3).StandardNormal(Shape(40, 30), Chunks(10, 10))
	rows := NewRandomState(3).StandardNormal(Shape(40, 30), Chunks(10, 30))
	long := NewRandomState(3).StandardNormal(Shape(4, 100000), Chunks(4, 100000))
	cases := []struct {
		name        string
		a           *Array
		stay, keeps bool
	}{
		{"sum(x.reshape(20, 2, 30), 1)", x.Reshape(20, 2, 30).Sum(1), true, true},
		{"max(x.reshape(20, 2, 30), 1)", x.Reshape(20, 2, 30).Max(1), true, true},
		{"min(rows, 1)", rows.Min(1), true, true},
		{"sum(rows, 1)", rows.Sum(1), true, true},
		{"sum(x, 0): four chunks", x.Sum(0), false, false},
		{"mean(rows, 1)", rows.Mean(1), false, false},
		{"argmax(rows, 1)", rows.ArgMax(1), false, false},
		{"sum(float32 rows, 1)", rows.AsType(Float32).Sum(1), false, false},
		{"sum(long, 1): warps per row", long.Sum(1), true, false},
	}
	// A mean's partials are sums, not its values, even where every other condition holds.
	if st, err := plan.Lower(0, rows.Mean(1).n, map[*expr.Node]dtype.Slice{}, plan.Options{MemoryLimit: 1 << 30}); err != nil || keepsOnDevice(st) {
		t.Errorf("mean(rows, 1): keepsOnDevice %v (%v), want false", err == nil, err)
	}
	for _, c := range cases {
		if err := c.a.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := partialsStay(c.a.n); got != c.stay {
			t.Errorf("%s: partialsStay %v, want %v", c.name, got, c.stay)
		}
		if !c.stay {
			continue
		}
		st, err := plan.Lower(0, c.a.n, map[*expr.Node]dtype.Slice{}, plan.Options{MemoryLimit: 1 << 30})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := keepsOnDevice(st); got != c.keeps {
			t.Errorf("%s: keepsOnDevice %v, want %v (KeepsPartials: %v)", c.name, got, c.keeps, cuda.KeepsPartials(st.Tasks))
		}
	}

	// The stages: a kept reduction leaves them, unless another root reads it.
	s := rows.Sum(1)
	alone := &gpuResults{stay: map[*expr.Node]bool{s.n: true}}
	if order := alone.stages(stageOrder([]*expr.Node{s.n})); len(order) != 0 || len(alone.direct) != 1 {
		t.Fatalf("sum(rows, 1) alone: host stages %v, direct %v", order, alone.direct)
	}
	y := s.Add(1)
	both := &gpuResults{stay: map[*expr.Node]bool{s.n: true, y.n: true}}
	order := both.stages(stageOrder([]*expr.Node{s.n, y.n}))
	if len(order) != 1 || order[0] != s.n || len(both.direct) != 1 || both.direct[0] != y.n {
		t.Fatalf("sum(rows, 1) read by sum + 1: host stages %v, direct %v", order, both.direct)
	}

	// A task box is a chunk of the result only when it is one exactly.
	g := newChunkGrid([]int{20, 30}, [][]int{{5, 5, 5, 5}, {10, 10, 10}})
	st, err := plan.Lower(0, x.Reshape(20, 2, 30).Sum(1).n, map[*expr.Node]dtype.Slice{}, plan.Options{MemoryLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	for i, task := range st.Tasks {
		off, ok := keptChunkOf(g, task)
		if !ok || g.index(off) != i {
			t.Fatalf("task %d at %v (shape %v): chunk %v, %v", i, task.Offset, task.Shape, off, ok)
		}
	}
	if _, ok := keptChunkOf(newChunkGrid([]int{20, 30}, [][]int{{10, 10}, {30}}), st.Tasks[0]); ok {
		t.Fatal("a task box inside a larger chunk is not that chunk")
	}
}

// TestGPUPartialsKeptOnDevice computes reductions whose partials are their values with OnGPU:
// they stay on the device with no host step, with the bits of the same kernels brought to the
// host (and the CPU's values to rounding); a reduction whose partials need the host combine
// (long rows) still gives those bits, and so does a kept one read by a later computation.
func TestGPUPartialsKeptOnDevice(t *testing.T) {
	needGPU(t)
	x := NewRandomState(23).StandardNormal(Shape(600, 500), Chunks(150, 125))
	rows := NewRandomState(24).StandardNormal(Shape(640, 300), Chunks(160, 300))
	long := NewRandomState(25).StandardNormal(Shape(8, 200000), Chunks(4, 200000))
	cases := []struct {
		name string
		a    *Array
		kept bool
	}{
		{"sum(x.reshape(300, 2, 500), 1)", x.Reshape(300, 2, 500).Sum(1), true},
		{"max(x.reshape(300, 2, 500), 1)", x.Reshape(300, 2, 500).Max(1), true},
		{"min(x.reshape(100, 6, 500) * 2, 1)", x.Reshape(100, 6, 500).Mul(2).Min(1), true},
		{"std(x.reshape(300, 2, 500), 1)", x.Reshape(300, 2, 500).Std(1), false},
		{"min(exp(rows), 1)", rows.Exp().Min(1), true},
		{"sum(rows * 2, 1)", rows.Mul(2).Sum(1), true},
		{"sum(long, 1)", long.Sum(1), false},
	}
	for _, c := range cases {
		got, err := c.a.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Where() != "gpu 0" || strings.Contains(got.Path(), "host") {
			t.Fatalf("%s: where %q, path %q", c.name, got.Where(), got.Path())
		}
		st, err := plan.Lower(0, c.a.n, map[*expr.Node]dtype.Slice{}, plan.Options{MemoryLimit: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got.n.Buf.(*gpuChunks); !ok || keepsOnDevice(st) != c.kept || partialsStay(c.a.n) != c.kept && c.kept {
			t.Fatalf("%s: held as %T, kept as partials %v, want %v", c.name, got.n.Buf, keepsOnDevice(st), c.kept)
		}
		held, err := got.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		viaHost, err := c.a.ToSlice(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := c.a.ToSlice(Threads(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(held) != len(cpu) || len(viaHost) != len(cpu) {
			t.Fatalf("%s: %d, %d and %d values", c.name, len(held), len(viaHost), len(cpu))
		}
		for i := range cpu {
			if math.Float64bits(held[i]) != math.Float64bits(viaHost[i]) {
				t.Fatalf("%s[%d]: kept on the GPU %v, combined on the host %v", c.name, i, held[i], viaHost[i])
			}
			if math.Abs(held[i]-cpu[i]) > 1e-12*math.Max(1, math.Abs(cpu[i])) {
				t.Fatalf("%s[%d]: GPU %v, CPU %v", c.name, i, held[i], cpu[i])
			}
		}
	}
	// A kept reduction read by a later GPU computation, in place.
	s, err := rows.Sum(1).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Mul(3).Add(1).ToSlice(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if s.n.Buf.(offHost).copied() {
		t.Fatal("the kept row sums were copied to the host to be read on the GPU")
	}
	sv, err := s.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range sv {
		if d[i] != sv[i]*3+1 {
			t.Fatalf("3 * sum(rows, 1) + 1 [%d]: %v, want %v", i, d[i], sv[i]*3+1)
		}
	}
}

// TestScatterRunsPlacesPieces checks the host side of gpuChunks.download without a GPU: a
// chunk's values arriving in pieces of any size (a run split between pieces, several runs in
// one, pieces large enough for several goroutines) land where placing the chunk would put them.
func TestScatterRunsPlacesPieces(t *testing.T) {
	for _, c := range []struct {
		shape  []int
		chunks [][]int
		pieces []int
	}{
		{[]int{7, 5, 3}, [][]int{{3, 4}, {2, 2, 1}, {3}}, []int{1, 4, 7, 1000}},
		{[]int{1000, 1000}, [][]int{{500, 500}, {300, 700}}, []int{150000, 1 << 17, 333333}},
	} {
		g := newChunkGrid(c.shape, c.chunks)
		size := int(expr.Size(c.shape))
		for _, p := range c.pieces {
			got := make([]float64, size)
			want := make([]float64, size)
			for i := range expr.NumChunks(c.chunks) {
				off := make([]int, len(c.shape))
				rest := i
				for ax := len(c.shape) - 1; ax >= 0; ax-- {
					k := len(c.chunks[ax])
					off[ax] = g.bounds[ax][rest%k]
					rest /= k
				}
				shape := make([]int, len(c.shape))
				for ax := range shape {
					shape[ax] = c.chunks[ax][sortSearch(g.bounds[ax], off[ax])]
				}
				n := int(expr.Size(shape))
				vals := make([]float64, n)
				for j := range vals {
					vals[j] = float64(i*1e7 + j + 1)
				}
				g.place(dtype.OfFloat64(want), off, shape, dtype.OfFloat64(vals))
				var runs []run
				g.runs(off, shape, func(at, o, k int) { runs = append(runs, run{at, o, k}) })
				for lo := 0; lo < n; lo += p {
					scatterRuns(got, vals[lo:min(lo+p, n)], lo, runs)
				}
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("shape %v, pieces of %d: element %d is %v, want %v", c.shape, p, i, got[i], want[i])
				}
			}
		}
	}
}

// sortSearch returns the index of the chunk starting at o in bounds.
func sortSearch(bounds []int, o int) int {
	for i, b := range bounds {
		if b == o {
			return i
		}
	}
	return -1
}

// TestLazyProductRecognized checks, without a GPU, which roots a GPU compute runs as MatMul
// with OnGPU does (lazyProduct): a lazy product of float64 matrices, rechunked to b's column
// chunks or not; not a product with work after it, a matrix-vector product (squeezed), or
// float32 operands.
func TestLazyProductRecognized(t *testing.T) {
	rs := NewRandomState(7)
	x := rs.StandardNormal(Shape(300, 200), Chunks(64, 50))
	y := rs.StandardNormal(Shape(200, 150), Chunks(50, 40))
	y1 := rs.StandardNormal(Shape(200, 150), Chunks(50, 150))
	v := rs.StandardNormal(Shape(200))
	cases := []struct {
		name string
		p    *Array
		b    *Array
		want bool
	}{
		{"MatMul(x, y)", MatMul(x, y), y, true},
		{"MatMul(x, y1)", MatMul(x, y1), y1, true},
		{"MatMul(x, y) + 1", MatMul(x, y).Add(1), y, false},
		{"x.Dot(v)", x.Dot(v), nil, false},
		{"MatMul(float32 x, y)", MatMul(x.AsType(Float32), y), y, false},
	}
	for _, c := range cases {
		if err := c.p.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, b, ok := lazyProduct(c.p.n, false)
		if ok != c.want {
			t.Fatalf("%s: lazyProduct %v, want %v", c.name, ok, c.want)
		}
		if ok && (a != x.n || b != c.b.n) {
			t.Fatalf("%s: operands %p and %p, want x (%p) and y (%p)", c.name, a, b, x.n, c.b.n)
		}
	}
	// A transposed a: the rechunk to one column chunk folds into the transpose's view, and
	// lazyProduct gives back a view with a's own column chunks (those of y's rows).
	if a, b, ok := lazyProduct(MatMul(y.T(), y).n, false); !ok || b != y.n || fmt.Sprint(a.Shape, a.Chunks) != "[150 200] [[40 40 40 30] [50 50 50 50]]" {
		t.Fatalf("MatMul(y.T(), y): %v, a %v", ok, a)
	}
	// Each panel product of the join reads one column chunk of y: a later stage reads its
	// values row-major (anyChunks), with that panel of y as its b.
	join := rechunkOf(MatMul(x, y).n)
	if join.Kind != expr.KConcat || len(join.Args) != 4 {
		t.Fatalf("rechunkOf(MatMul(x, y)) is a %v of %d, want a join of y's four panels", join.Kind, len(join.Args))
	}
	call := join.Args[1]
	if call.Kind != expr.KCall || call.Call.Off != 40 || call.Call.N != 40 || call.Args[1] != y.n {
		t.Fatalf("the second panel product: %v, columns %d+%d of %p", call.Kind, call.Call.Off, call.Call.N, call.Args[1])
	}
	if a, b, ok := lazyProduct(call, true); !ok || a != x.n || fmt.Sprint(b.Shape) != "[200 40]" || b.Args[0] != y.n || b.Map[1].Off != 40 {
		t.Fatalf("the panel product read row-major: %v", ok)
	}
	// On the CPU a lazy product is a call stage as before.
	if p, err := productOnGPU(computeConfig{sched: &engine.Threads{}}, MatMul(x, y).n, true); p != nil || err != nil {
		t.Fatalf("productOnGPU with CPU threads: %v, %v", p, err)
	}
	if _, ok, err := productValues(computeConfig{sched: &engine.Threads{}}, call); ok || err != nil {
		t.Fatalf("productValues with CPU threads: %v, %v", ok, err)
	}
}

// TestGPULazyProductOnDevice computes lazy products with OnGPU: they run as MatMul with OnGPU
// does (the same bits), stay on the device, say cuBLAS and no host step in Path, and match the
// CPU's blocked product; ComputeAll of one product twice computes it once.
func TestGPULazyProductOnDevice(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(8)
	x := rs.StandardNormal(Shape(600, 400), Chunks(150, 100))
	y := rs.StandardNormal(Shape(400, 500), Chunks(100, 125))
	y2 := rs.StandardNormal(Shape(400, 300), Chunks(100, 300))
	for name, p := range map[string]struct{ a, b *Array }{"x y": {x, y}, "(2x + 1) y2": {x.Mul(2).Add(1), y2}} {
		lazy := MatMul(p.a, p.b)
		c, err := lazy.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Where() != "gpu 0" || !strings.Contains(c.Path(), "matmul on cuBLAS") || strings.Contains(c.Path(), "host") {
			t.Fatalf("%s: where %q, path %q", name, c.Where(), c.Path())
		}
		got, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := lazy.ToSlice(Threads(0))
		if err != nil {
			t.Fatal(err)
		}
		for i := range cpu {
			if math.Abs(got[i]-cpu[i]) > 1e-10*math.Max(1, math.Abs(cpu[i])) {
				t.Fatalf("%s[%d]: GPU %v, CPU %v", name, i, got[i], cpu[i])
			}
		}
	}
	p := MatMul(x, y)
	two, err := ComputeAll(p, p, OnGPU())
	if err != nil || two[0] != two[1] {
		t.Fatalf("ComputeAll(p, p): %v", err)
	}

	// A product that a later stage reads: computed as the root product is, held on the device
	// and read there by the fused kernel after it.
	lazy := p.Mul(2).Sub(3)
	c, err := lazy.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Path(), "matmul on cuBLAS") || strings.Contains(c.Path(), "host") || c.Where() != "gpu 0" {
		t.Fatalf("2 x y - 3: path %q, where %q", c.Path(), c.Where())
	}
	got, err := c.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	held, err := p.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	want, err := held.Mul(2).Sub(3).ToSlice(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	// The product is computed whole on the device first (productsOnGPU) and the kernel after
	// it reads it there: the bits of the same kernel on the held product.
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("2 x y - 3 [%d]: lazy %v, on the held product %v", i, got[i], want[i])
		}
	}
}

// TestProductOperandsSkipped checks, without a GPU, which stages a one-GPU compute leaves out
// because only a lazy product reads them as its b (productValues generates b on the device):
// not one that another stage or a root reads, or that is a root; none on the CPU.
func TestProductOperandsSkipped(t *testing.T) {
	rs := NewRandomState(9)
	x := rs.StandardNormal(Shape(300, 200), Chunks(100, 50))
	y := rs.StandardNormal(Shape(200, 150), Chunks(50, 40))
	gpu := computeConfig{sched: &gpuSched{devs: make([]*cuda.Device, 1)}}
	skipped := func(cfg computeConfig, roots ...*Array) map[*expr.Node]bool {
		ns := make([]*expr.Node, len(roots))
		for i, r := range roots {
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			ns[i] = r.n
		}
		return productOperands(cfg, stageOrder(ns), ns)
	}
	if s := skipped(gpu, MatMul(x, y).Mul(2)); len(s) != 1 || !s[y.n] {
		t.Fatalf("2 x y: skipped %v, want y's stage", s)
	}
	if s := skipped(gpu, MatMul(x, y).Add(y.Sum(0))); len(s) != 0 {
		t.Fatalf("x y + sum(y, 0): skipped %v, want none (the sum reads y)", s)
	}
	if s := skipped(gpu, y.Mul(3), MatMul(x, y).Mul(2)); len(s) != 0 {
		t.Fatalf("3 y and 2 x y: skipped %v, want none (a root reads y)", s)
	}
	if s := skipped(gpu, y, MatMul(x, y).Mul(2)); len(s) != 0 {
		t.Fatalf("y and 2 x y: skipped %v, want none (y is a root)", s)
	}
	if s := skipped(computeConfig{sched: &engine.Threads{}}, MatMul(x, y).Mul(2)); len(s) != 0 {
		t.Fatalf("on the CPU: skipped %v", s)
	}
}
