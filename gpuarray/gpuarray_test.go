package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

func randChunks(r *rand.Rand, shape []int) ArrayOption {
	per := make([][]int, len(shape))
	for ax, n := range shape {
		for n > 0 {
			c := 1 + r.IntN(n)
			if r.IntN(2) == 0 {
				c = min(n, 1+r.IntN(4))
			}
			per[ax] = append(per[ax], c)
			n -= c
		}
	}
	return ChunkSizes(per...)
}

func randShape(r *rand.Rand) []int {
	s := make([]int, 1+r.IntN(3))
	for i := range s {
		s[i] = 1 + r.IntN(9)
	}
	return s
}

// randLeaf makes a random source array of shape.
func randLeaf(r *rand.Rand, rs *RandomState, shape []int, dt DType) *Array {
	opts := []ArrayOption{Shape(shape...), randChunks(r, shape), WithDType(dt)}
	switch r.IntN(6) {
	case 3: // a range along the last axis, broadcast over the others
		m := shape[len(shape)-1]
		var x *Array
		if r.IntN(2) == 0 {
			start, step := float64(r.IntN(7)-3), []float64{1, 0.5, -2}[r.IntN(3)]
			x = Arange(start, start+float64(m)*step, step, WithDType(dt), Chunks(1+r.IntN(m)))
		} else {
			x = Linspace(-1, float64(r.IntN(5)), m, WithDType(dt), Chunks(1+r.IntN(m)))
		}
		return x.Add(Zeros(opts...))
	case 0:
		return rs.Uniform(-2, 3, opts...)
	case 1:
		data := make([]float64, expr.Size(shape))
		for i := range data {
			data[i] = math.Round(r.NormFloat64()*100) / 10
		}
		return FromSlice(data, opts...)
	case 2:
		return rs.Integers(-3, 4, opts...)
	default:
		return rs.Normal(1, 2, opts...)
	}
}

// randSlice picks a random Index for an axis of length n.
func randSlice(r *rand.Rand, n int) Index {
	step := []int{1, 2, 3, -1, -2}[r.IntN(5)]
	switch r.IntN(5) {
	case 0:
		return At(r.IntN(2*n) - n)
	case 1:
		return Every(step)
	case 2:
		return SpanStep(r.IntN(2*n+2)-n-1, r.IntN(2*n+2)-n-1, step)
	case 3:
		return From(r.IntN(n))
	}
	return All()
}

// randExpr grows an expression by a few random steps.
func randExpr(r *rand.Rand, rs *RandomState) *Array {
	dt := Float64
	if r.IntN(4) == 0 {
		dt = Float32
	}
	x := randLeaf(r, rs, randShape(r), dt)
	for step := 0; step < 1+r.IntN(5); step++ {
		shape := x.Shape()
		switch r.IntN(9) {
		case 0:
			x = x.Add(r.IntN(5))
		case 1:
			x = x.Mul(randLeaf(r, rs, shape, dt))
		case 2: // broadcast a smaller array: trailing axes, some of length 1
			sub := append([]int(nil), shape[r.IntN(len(shape)):]...)
			for i := range sub {
				if r.IntN(2) == 0 {
					sub[i] = 1
				}
			}
			x = x.Sub(randLeaf(r, rs, sub, Float64))
		case 3:
			idx := make([]Index, r.IntN(len(shape)+1))
			for i := range idx {
				idx[i] = randSlice(r, shape[i])
			}
			y := x.Slice(idx...)
			if y.Err() == nil && y.Size() > 0 && y.NDim() > 0 {
				x = y
			}
		case 4:
			x = x.T()
		case 5:
			sizes := make([]int, len(shape))
			for i := range sizes {
				sizes[i] = 1 + r.IntN(shape[i])
			}
			x = x.Rechunk(sizes...)
		case 6:
			x = Where(x.Gt(0.5), x, x.Abs().Sqrt().Neg())
		case 7:
			switch r.IntN(4) {
			case 0:
				x = x.Tanh()
			case 1:
				x = x.Sin().Add(x.Cos())
			case 2:
				x = x.Abs().Add(1).Log()
			default:
				x = x.Div(4).Exp()
			}
		case 8:
			x = x.Sub(x.Mean())
		}
	}
	return x
}

func randReduce(r *rand.Rand, x *Array) *Array {
	nd := x.NDim()
	var axes []int
	if r.IntN(2) == 0 && nd > 0 {
		axes = []int{r.IntN(nd)}
		if nd > 1 && r.IntN(2) == 0 {
			axes = append(axes, (axes[0]+1)%nd)
		}
	}
	switch r.IntN(8) {
	case 0:
		return x.Sum(axes...)
	case 1:
		return x.Mean(axes...)
	case 2:
		return x.Var(axes...)
	case 3:
		return x.Std(axes...)
	case 4:
		return x.Min(axes...)
	case 5:
		return x.Max(axes...)
	case 6:
		return x.ArgMin(axes[:min(len(axes), 1)]...)
	}
	return x.ArgMax(axes[:min(len(axes), 1)]...)
}

func near(a, b float64, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*(1+math.Abs(a)+math.Abs(b))
}

func TestPropertyAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	scheds := []ComputeOption{Inline(), Threads(3)}
	for trial := 0; trial < 400; trial++ {
		rs := NewRandomState(int64(trial))
		x := randExpr(r, rs)
		if r.IntN(2) == 0 {
			x = randReduce(r, x)
		}
		if err := x.Err(); err != nil {
			t.Fatalf("trial %d: building: %v", trial, err)
		}
		got, err := x.ToSlice(scheds[trial%2])
		if err != nil {
			t.Fatalf("trial %d: %v: %v", trial, x, err)
		}
		matchReference(t, trial, x, got, true)
	}
}

// matchReference compares computed values of x with the naive reference evaluator. With
// exactArg, float64 ArgMin/ArgMax must pick the same index (ties included); a backend whose
// values may differ by an ulp (the GPU's normals) skips that check.
func matchReference(t *testing.T, trial int, x *Array, got []float64, exactArg bool) {
	t.Helper()
	want := refEval(x.n)
	tol := 1e-12
	if x.DType() == Float32 {
		tol = 1e-5
	}
	if x.n.Kind == expr.KReduce {
		tol = max(tol, 1e-10)
	}
	for i := range want {
		if x.n.Kind == expr.KReduce && (x.n.Red == expr.ArgMin || x.n.Red == expr.ArgMax) {
			// Ties broken the same way; but values computed in float32 may tie differently.
			if exactArg && got[i] != want[i] && x.DType() == Float64 && x.n.Args[0].DType == expr.Float64 {
				t.Fatalf("trial %d: %v element %d: got %v want %v", trial, x, i, got[i], want[i])
			}
			continue
		}
		if !near(got[i], want[i], tol) {
			t.Fatalf("trial %d: %v element %d: got %v want %v (all: %v vs %v)", trial, x, i, got[i], want[i], got, want)
		}
	}
}

func TestRandomIndependentOfChunking(t *testing.T) {
	var first []float64
	for _, c := range [][]int{{7, 5}, {1, 13}, {13, 13}, {3, 2}} {
		x := NewRandomState(5).Normal(10, 1, Shape(13, 13), Chunks(c...))
		v, err := x.Slice(Every(-2), SpanStep(1, 12, 3)).ToSlice(Threads(2))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = v
			continue
		}
		for i := range v {
			if v[i] != first[i] {
				t.Fatalf("chunks %v: element %d = %v, with other chunks %v", c, i, v[i], first[i])
			}
		}
	}
}

func TestSeedExpressionDeterministicAcrossSchedulers(t *testing.T) {
	n := 2000
	var sums []float64
	for _, o := range []ComputeOption{Inline(), Threads(2), Threads(7)} {
		for _, c := range []int{300, 1000} {
			x := NewRandomState(42).Normal(10, 1, Shape(n, n), Chunks(c, c))
			s, err := x.Add(1).Slice(Every(2), Every(2)).Sum().Float64(o)
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, s)
			kept := float64(n / 2 * n / 2)
			if z := (s - 11*kept) / math.Sqrt(kept); math.Abs(z) > 5 {
				t.Fatalf("z = %v: the sum %v is not 11*kept within 5 sigma", z, s)
			}
		}
	}
	// The same chunking gives the same bits on every scheduler.
	if sums[0] != sums[2] || sums[0] != sums[4] || sums[1] != sums[3] || sums[1] != sums[5] {
		t.Fatalf("sums differ between schedulers: %v", sums)
	}
	if !near(sums[0], sums[1], 1e-12) {
		t.Fatalf("sums differ between chunkings beyond rounding: %v", sums)
	}
}

func TestMeanVarFloat32(t *testing.T) {
	x := NewRandomState(1).Normal(3, 2, Shape(500, 400), Chunks(128, 100), WithDType(Float32))
	m, err := x.Mean().Float64()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := x.Std().Float64()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m-3) > 5*2/math.Sqrt(2e5) || math.Abs(sd-2) > 0.02 {
		t.Fatalf("mean %v std %v of Normal(3, 2)", m, sd)
	}
	if m != float64(float32(m)) {
		t.Fatalf("float32 mean %v is not a float32 value", m)
	}
}

func TestCreationAndRoundTrip(t *testing.T) {
	v, err := Arange(0, 10, 3).ToSlice()
	if err != nil || fmt.Sprint(v) != "[0 3 6 9]" {
		t.Fatalf("Arange: %v %v", v, err)
	}
	v, err = Linspace(0, 1, 4, Chunks(3)).ToSlice()
	if err != nil || v[3] != 1 || v[1] != 1.0/3 {
		t.Fatalf("Linspace: %v %v", v, err)
	}
	v, err = Ones(Shape(2, 2)).Add(Zeros(Shape(2))).Mul(Full(3, Shape(2, 1))).ToSlice()
	if err != nil || fmt.Sprint(v) != "[3 3 3 3]" {
		t.Fatalf("Ones+Zeros*Full: %v %v", v, err)
	}
	data := []float64{1, 2, 3, 4, 5, 6}
	a := FromSlice(data, Shape(2, 3), Chunks(1, 2))
	v, err = a.T().ToSlice(Inline())
	if err != nil || fmt.Sprint(v) != "[1 4 2 5 3 6]" {
		t.Fatalf("transpose: %v %v", v, err)
	}
	s, err := a.Slice(At(-1), Every(-1)).ArgMax().Float64()
	if err != nil || s != 0 {
		t.Fatalf("argmax of [6 5 4]: %v %v", s, err)
	}
	c, err := a.Sum(0).Compute()
	if err != nil || fmt.Sprint(c.Shape()) != "[3]" || !strings.Contains(c.String(), "[5. 7. 9.]") {
		t.Fatalf("sum axis 0: %v %v", c, err)
	}
}

func TestBadInput(t *testing.T) {
	rs := NewRandomState(1)
	cases := []struct {
		a    *Array
		want []string
	}{
		{rs.Normal(0, 1, Shape(10, 10), Chunks(0, 5)), []string{"chunk size 0", "axis 0"}},
		{rs.Normal(0, 1, Shape(10, 10), Chunks(-3, 5)), []string{"-3"}},
		{rs.Normal(0, 1, Shape(10), ChunkSizes([]int{4, 4})), []string{"[4 4]", "8", "10"}},
		{rs.Normal(0, 1, Shape(10, 10)).Slice(Every(0)), []string{"step 0", "axis 0"}},
		{rs.Normal(0, 1, Shape(10, 10)).Slice(All(), At(10)), []string{"index 10", "axis 1", "length 10"}},
		{rs.Normal(0, 1, Shape(10, 10)).Sum(2), []string{"axis 2", "(10, 10)"}},
		{rs.Normal(0, 1, Shape(3, 4)).Add(Ones(Shape(3))), []string{"(3, 4)", "(3,)"}},
		{rs.Normal(0, 1, Shape(3, 4)).Transpose(0, 0), []string{"[0 0]"}},
		{rs.Normal(0, 1, Shape(3, 4)).Rechunk(2, 2, 2), []string{"[2 2 2]", "(3, 4)"}},
		{FromSlice([]float64{1, 2, 3}, Shape(2, 2)), []string{"3 elements", "(2, 2)"}},
		{Zeros(), []string{"no Shape"}},
		{rs.Integers(5, 5, Shape(3)), []string{"high 5", "low 5"}},
		{rs.Normal(0, 1, Shape(3)).Add("x"), []string{"string"}},
	}
	for i, c := range cases {
		err := c.a.Err()
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d: error %q lacks %q", i, err, w)
			}
		}
		// The error sticks to derived arrays and comes back from Compute.
		if _, err2 := c.a.Add(1).Sum().Compute(); err2 == nil || !strings.Contains(err2.Error(), err.Error()) {
			t.Errorf("case %d: Compute of a derived array: %v", i, err2)
		}
	}
	// A task bigger than the memory limit, and a result bigger than it.
	x := rs.Normal(0, 1, Shape(1000, 1000), Chunks(1000, 1000))
	_, err := x.Add(1).Compute(MemoryLimit(1 << 20))
	if err == nil || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("memory limit: %v", err)
	}
	if _, err := x.Sum().Compute(MemoryLimit(1 << 20)); err != nil {
		t.Fatalf("a reduction needs little memory per task: %v", err)
	}
	_, err = x.Slice(Span(0, 600)).Add(1).Compute(MemoryLimit(4<<20), Inline())
	if err == nil || !strings.Contains(err.Error(), "(600, 1000)") || !strings.Contains(err.Error(), "4194304") {
		t.Fatalf("task over the limit: %v", err)
	}
}

func TestCancelAndProgress(t *testing.T) {
	x := NewRandomState(3).Normal(0, 1, Shape(20000, 20000), Chunks(2000, 2000))
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	// Cancelled once the first task is done: the rest must not run (a count, not a time, so
	// that a busy machine cannot fail it).
	var tasks atomic.Int32
	_, err := x.Sum().Compute(WithContext(ctx), Threads(2), WithProgress(func(done, total int) {
		tasks.Store(int32(total))
		if calls.Add(1) == 1 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled compute: %v", err)
	}
	if n := calls.Load(); n >= tasks.Load() {
		t.Fatalf("all %d tasks ran after the cancel", n)
	}
	var last, tot int
	_, err = x.Slice(Span(0, 4000), Span(0, 4000)).Mean().Compute(WithProgress(func(done, total int) { last, tot = done, total }), Inline())
	if err != nil || last != 4 || tot != 4 {
		t.Fatalf("progress %d/%d, err %v", last, tot, err)
	}
}

func TestRepr(t *testing.T) {
	x := NewRandomState(3).Normal(0, 1, Shape(500000, 500000), Chunks(10000, 10000))
	h := x.HTML()
	for _, w := range []string{"<svg", "2.00 TB", "800.00 MB", "2500 chunks", "float64", "(500000, 500000)", "(10000, 10000)"} {
		if !strings.Contains(h, w) {
			t.Errorf("HTML lacks %q", w)
		}
	}
	if s := x.String(); !strings.Contains(s, "(500000, 500000)") || !strings.Contains(s, "lazy") {
		t.Errorf("String: %s", s)
	}
}
