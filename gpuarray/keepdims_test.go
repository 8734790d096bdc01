package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestKeepDimsMatchesNumPy checks the reductions under KeepDims against NumPy's
// keepdims=True, on random shapes, chunkings and axes.
func TestKeepDimsMatchesNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(17, 3))
	type red struct {
		np string
		f  func(x *Array, axes []int) *Array
	}
	reds := []red{
		{"np.sum(x, axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.Sum(a...) }},
		{"np.mean(x, axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.Mean(a...) }},
		{"np.min(x, axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.Min(a...) }},
		{"np.max(x, axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.Max(a...) }},
		{"np.any(x > 0.5, axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.Gt(0.5).KeepDims().Any(a...) }},
		{"np.count_nonzero(x > 0, axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.Gt(0).KeepDims().CountNonzero(a...) }},
		{"np.linalg.vector_norm(x, axis=%s, ord=1, keepdims=True)", func(x *Array, a []int) *Array { return VectorNorm(x, 1, a...) }},
		{"np.linalg.vector_norm(x, axis=%s, ord=np.inf, keepdims=True)", func(x *Array, a []int) *Array { return VectorNorm(x, math.Inf(1), a...) }},
		{"np.nansum(x, axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.NanSum(a...) }},
		{"np.nanmax(np.where(np.isnan(x), 0, x), axis=%s, keepdims=True)", func(x *Array, a []int) *Array { return x.noNaN(0).KeepDims().NanMax(a...) }},
	}
	var cs []check
	for i := 0; i < 36; i++ {
		r := 1 + rs.IntN(3)
		shape := npShape(rs, r, 1, 6)
		x, in := nanArray(rs, "x", shape, i%5 == 0) // exact sums: any order gives NumPy's bits
		axes, pa := randAxes(rs, r)
		rd := reds[i%len(reds)]
		cs = append(cs, check{
			what:   fmt.Sprintf("%s %v axes %v", rd.np, shape, axes),
			got:    rd.f(x.KeepDims(), axes),
			code:   fmt.Sprintf(rd.np, pa),
			inputs: []input{in},
		})
		// Arg reductions take one axis or none (then every axis is kept, as NumPy's).
		if i%3 == 0 {
			k := rs.IntN(r)
			cs = append(cs,
				check{what: fmt.Sprintf("argmax %v axis %d", shape, k), got: x.noNaN(0).KeepDims().ArgMax(k), code: fmt.Sprintf("np.argmax(np.where(np.isnan(x), 0, x), axis=%d, keepdims=True)", k), inputs: []input{in}},
				check{what: fmt.Sprintf("matrix norm %v", shape), got: MatrixNorm(Stack(x, x).KeepDims(), "inf"), code: "np.linalg.matrix_norm(np.stack([x, x]), ord=np.inf, keepdims=True)", inputs: []input{in}},
				check{what: fmt.Sprintf("prod %v axis %d", shape, k), got: x.KeepDims().Prod(k), code: fmt.Sprintf("np.prod(x, axis=%d, keepdims=True)", k), inputs: []input{in}},
				check{what: fmt.Sprintf("argmin %v", shape), got: x.noNaN(0).KeepDims().ArgMin(), code: "np.argmin(np.where(np.isnan(x), 0, x), keepdims=True)", inputs: []input{in}},
			)
		}
	}
	runChecks(t, cs, Inline())
	// The two-pass variance: its result does not hang on the mark, only its shape does.
	x, _ := randArray(rs, "x", []int{3, 4, 5})
	for _, axes := range [][]int{nil, {1}, {0, 2}} {
		want := x.VarDdof(1, axes...)
		got := x.KeepDims().VarDdof(1, axes...)
		w, _ := want.ToSlice()
		g, err := got.ToSlice()
		if err != nil || !slices.Equal(w, g) {
			t.Errorf("KeepDims().VarDdof over %v: %v, want %v (%v)", axes, g, w, err)
		}
		want3 := []int{3, 4, 5}
		for k := range want3 {
			if len(axes) == 0 || slices.Contains(axes, k) {
				want3[k] = 1
			}
		}
		if gs := got.Shape(); !slices.Equal(gs, want3) {
			t.Errorf("KeepDims().VarDdof over %v: shape %v, want %v", axes, gs, want3)
		}
	}
	// The mark is for the next reduction only: results of other ops carry none.
	x = Arange(0, 6, 1).Reshape(2, 3)
	if got := x.KeepDims().Add(1).Sum(1).Shape(); len(got) != 1 {
		t.Errorf("an op's result kept the mark: shape %v", got)
	}
	if got := x.KeepDims().Sum(1).Sum(0).Shape(); len(got) != 1 || got[0] != 1 {
		t.Errorf("the mark outlived its reduction: shape %v", got)
	}
	if err := x.KeepDims().Sum(2).Err(); err == nil {
		t.Error("KeepDims().Sum(2) of a 2-d array: no error")
	}
}

// TestQuantilesSeveralMatchNumPy compares Quantiles, Percentiles and MedianAxes (several q,
// several axes, KeepDims) with NumPy bit for bit.
func TestQuantilesSeveralMatchNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(23, 5))
	var cs []check
	for i := 0; i < 30; i++ {
		r := 1 + rs.IntN(3)
		shape := npShape(rs, r, 1, 6)
		x, in := randArray(rs, "x", shape)
		if i%3 == 0 {
			x, in = nanArray(rs, "x", shape, false)
		}
		axes, pa := randAxes(rs, r)
		qs := []float64{rs.Float64(), 0.5, 1, 0, rs.Float64()}[:1+rs.IntN(5)]
		q := strings.Trim(strings.ReplaceAll(fmt.Sprint(qs), " ", ", "), "[]")
		ps := make([]float64, len(qs))
		for k := range qs {
			ps[k] = qs[k] * 100
		}
		p := strings.Trim(strings.ReplaceAll(fmt.Sprint(ps), " ", ", "), "[]")
		what := fmt.Sprintf("%v axes %v q %v", shape, axes, qs)
		xs := x
		keep := "False"
		if i%2 == 1 {
			xs, keep = x.KeepDims(), "True"
		}
		cs = append(cs,
			check{what: "Quantiles " + what, got: Quantiles(xs, qs, axes...), code: fmt.Sprintf("np.quantile(x, [%s], axis=%s, keepdims=%s)", q, pa, keep), inputs: []input{in}},
			check{what: "Percentiles " + what, got: Percentiles(xs, ps, axes...), code: fmt.Sprintf("np.percentile(x, [%s], axis=%s, keepdims=%s)", p, pa, keep), inputs: []input{in}},
			check{what: "MedianAxes " + what, got: MedianAxes(xs, axes...), code: fmt.Sprintf("np.median(x, axis=%s, keepdims=%s)", pa, keep), inputs: []input{in}},
		)
	}
	// Chunked along the reduced axes, and integers.
	x, in := randArray(rs, "x", []int{4, 5, 6})
	cs = append(cs, check{what: "Quantiles chunked int", got: Quantiles(x.Rechunk(3, 2, 4).Mul(16).AsType(Int32), []float64{0.1, 0.5, 0.9}, 0, 2), code: "np.quantile((x*16).astype(np.int32), [0.1, 0.5, 0.9], axis=(0, 2))", inputs: []input{in}})
	runChecks(t, cs, Inline())
	for _, c := range []struct {
		x    *Array
		want string
	}{
		{Quantiles(Arange(0, 3, 1), []float64{0.5, 1.5}), "quantile 1.5 out of [0, 1]"},
		{Quantiles(Arange(0, 3, 1), nil), "no quantiles"},
		{Quantiles(Arange(0, 6, 1).Reshape(2, 3), []float64{0.5}, 0, 0), "repeated"},
		{MedianAxes(Arange(0, 6, 1).Reshape(2, 3), 2), "out of range"},
	} {
		if err := c.x.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
