package gpuarray

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
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
	// On one GPU, a float sum or mean over some axes that no other stage reads is combined on
	// the device (keepSum); the column mean that x - mean reads, the std and the full sum are not.
	rowSum, m32 := x.Sum(1), x.AsType(Float32).Mean(0)
	roots = []*expr.Node{y.n, x.Std(1).n, x.Sum().n, rowSum.n, m32.n}
	r = &gpuResults{g: &gpuSched{devs: make([]*cuda.Device, 1)}, stay: map[*expr.Node]bool{}, host: map[*expr.Node]string{}}
	for _, n := range roots {
		if staysOnDevice(n) {
			r.stay[n] = true
		}
	}
	order = r.stages(stageOrder(roots))
	if len(r.direct) != 3 || r.direct[0] != y.n || !slices.Contains(r.direct, rowSum.n) || !slices.Contains(r.direct, m32.n) {
		t.Fatalf("direct roots on one GPU: %v, want x - mean(x, 0), sum(x, 1), mean(float32(x), 0)", r.direct)
	}
	if !has(m.n) || !has(roots[1]) || !has(roots[2]) || has(rowSum.n) {
		t.Fatalf("host stages on one GPU %v: want the column mean, the row std and the sum", order)
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
