package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// nanArray returns a chunked array like randArray's with about a fifth of the elements NaN
// and a fifth zero, and (when allNaN) the first line along the last axis all NaN.
func nanArray(rs *rand.Rand, name string, shape []int, allNaN bool) (*Array, input) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		switch rs.IntN(5) {
		case 0:
			v[i] = math.NaN()
		case 1:
			v[i] = 0
		default:
			v[i] = math.Round(rs.NormFloat64()*1000) / 64
			if v[i] == 0 {
				v[i] = 0 // no -0: which zero a min gives depends on the order
			}
		}
	}
	if allNaN && len(shape) > 0 {
		for i := 0; i < shape[len(shape)-1]; i++ {
			v[i] = math.NaN()
		}
	}
	return FromSlice(v, Shape(shape...), ChunkSizes(npChunks(rs, shape)...)), input{name, shape, v}
}

// randAxes returns a random set of distinct axes of a rank-r array (nil: all) and NumPy's
// spelling of it.
func randAxes(rs *rand.Rand, r int) ([]int, string) {
	if rs.IntN(4) == 0 {
		return nil, "None"
	}
	var ax []int
	for k := 0; k < r; k++ {
		if rs.IntN(2) == 0 {
			if rs.IntN(2) == 0 {
				ax = append(ax, k-r) // negative axes count from the end
			} else {
				ax = append(ax, k)
			}
		}
	}
	if len(ax) == 0 {
		ax = []int{rs.IntN(r)}
	}
	return ax, tuple(ax)
}

// statChecks builds the exact statistics (bit-equal to NumPy) over random shapes,
// chunkings, axes and NaN patterns, and one dtype check per function.
func statChecks(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 7))
	var cs []check
	for i := 0; i < n; i++ {
		r := 1 + rs.IntN(3)
		x, in := nanArray(rs, "x", npShape(rs, r, 1, 6), rs.IntN(2) == 0)
		ax, py := randAxes(rs, r)
		f32 := rs.IntN(3) == 0
		xs, npx := x, "x"
		if f32 {
			xs, npx = x.AsType(Float32), "x.astype(np.float32)"
		}
		add := func(what string, got *Array, code string) {
			cs = append(cs, check{what: fmt.Sprintf("%s %v axes %v f32 %v", what, in.shape, ax, f32), got: got, code: code, inputs: []input{in}})
		}
		add("Any", xs.Any(ax...), fmt.Sprintf("np.any(%s, axis=%s)", npx, py))
		add("All", xs.All(ax...), fmt.Sprintf("np.all(%s, axis=%s)", npx, py))
		add("CountNonzero", xs.CountNonzero(ax...), fmt.Sprintf("np.count_nonzero(%s, axis=%s)", npx, py))
		add("NanSum", xs.NanSum(ax...), fmt.Sprintf("np.nansum(%s, axis=%s)", npx, py))
		add("NanMean", xs.NanMean(ax...), fmt.Sprintf("np.nanmean(%s, axis=%s)", npx, py))
		add("NanMin", xs.NanMin(ax...), fmt.Sprintf("np.nanmin(%s, axis=%s)", npx, py))
		add("NanMax", xs.NanMax(ax...), fmt.Sprintf("np.nanmax(%s, axis=%s)", npx, py))
		// Integers: the Nan functions are the plain ones.
		xi := x.noNaN(7).AsType(Int32)
		npi := "np.where(np.isnan(x), 7, x).astype(np.int32)"
		add("NanSum int32", xi.NanSum(ax...), fmt.Sprintf("np.nansum(%s, axis=%s)", npi, py))
		add("NanMean int32", xi.NanMean(ax...), fmt.Sprintf("np.nanmean(%s, axis=%s)", npi, py))
		add("NanMax int32", xi.NanMax(ax...), fmt.Sprintf("np.nanmax(%s, axis=%s)", npi, py))
		add("Any int32", xi.Any(ax...), fmt.Sprintf("np.any(%s, axis=%s)", npi, py))
		// NanArgMin/Max along one axis or all: -1 where the slice is all NaN (NumPy raises).
		var one []int
		pa := "None"
		if rs.IntN(3) > 0 {
			one = []int{rs.IntN(r)}
			pa = fmt.Sprint(one[0])
		}
		for _, f := range []string{"min", "max"} {
			got := xs.NanArgMin(one...)
			if f == "max" {
				got = xs.NanArgMax(one...)
			}
			code := fmt.Sprintf("np.where(np.isnan(%[1]s).all(axis=%[2]s), -1, np.nanarg%[3]s(np.where(np.isnan(%[1]s).all(axis=%[2]s, keepdims=True), 0, %[1]s), axis=%[2]s))", npx, pa, f)
			cs = append(cs, check{what: fmt.Sprintf("NanArg%s %v axis %v", f, in.shape, one), got: got, code: code, inputs: []input{in}})
		}
	}
	return cs
}

func TestStatsMatchNumPy(t *testing.T) {
	runChecks(t, statChecks(1, 40), Inline())
	runChecks(t, statChecks(2, 40)) // the threaded scheduler
}

func TestStatsEmptyAndDTypes(t *testing.T) {
	e := FromSlice([]float64{}, Shape(0, 3))
	x := FromSlice([]float64{1, math.NaN(), 0, math.NaN(), math.NaN(), math.NaN()}, Shape(2, 3), Chunks(1, 2))
	in := input{"x", []int{2, 3}, []float64{1, math.NaN(), 0, math.NaN(), math.NaN(), math.NaN()}}
	ein := input{"e", []int{0, 3}, nil}
	runChecks(t, []check{
		{what: "Any of empty", got: e.Any(0), code: "np.any(e, axis=0)", inputs: []input{ein}},
		{what: "All of empty", got: e.All(), code: "np.all(e)", inputs: []input{ein}},
		{what: "NanSum of empty", got: e.NanSum(0), code: "np.nansum(e, axis=0)", inputs: []input{ein}},
		{what: "NanMean all-NaN row", got: x.NanMean(1), code: "np.nanmean(x, axis=1)", inputs: []input{in}},
		{what: "NanVar all-NaN row", got: x.NanVar(1), code: "np.nanvar(x, axis=1)", inputs: []input{in}},
		{what: "NanMin all-NaN row", got: x.NanMin(1), code: "np.nanmin(x, axis=1)", inputs: []input{in}},
		{what: "NanArgMax all-NaN row", got: x.NanArgMax(1), code: "np.array([np.nanargmax(x[0]), -1])", inputs: []input{in}},
	}, Inline())
	// dtypes as NumPy's
	var cases []npCase
	var got []string
	for _, dt := range []struct {
		g  DType
		np string
	}{{Float64, "float64"}, {Float32, "float32"}, {Int32, "int32"}, {Uint8, "uint8"}, {Bool, "bool"}} {
		a := x.AsType(dt.g)
		ax := fmt.Sprintf("np.asarray(x).astype(np.%s)", dt.np)
		for _, c := range []struct {
			a    *Array
			code string
		}{
			{a.Any(0), "np.any(a, axis=0)"}, {a.All(0), "np.all(a, axis=0)"},
			{a.CountNonzero(0), "np.count_nonzero(a, axis=0)"},
			{a.NanSum(0), "np.nansum(a, axis=0)"}, {a.NanMean(0), "np.nanmean(a, axis=0)"},
			{a.NanMin(0), "np.nanmin(a, axis=0)"}, {a.NanArgMin(0), "np.nanargmin(np.where(np.isnan(a), 0, a) if a.dtype.kind == 'f' else a, axis=0)"},
		} {
			got = append(got, c.a.DType().String())
			cases = append(cases, npCase{Code: fmt.Sprintf("str((lambda a: %s)(%s).dtype)", c.code, ax), Inputs: map[string]npArray{"x": in.np()}})
		}
	}
	for i, r := range numpy(t, cases) {
		if r.Err != "" || r.Str == nil {
			t.Errorf("%s: numpy %+v", cases[i].Code, r)
			continue
		}
		if got[i] != *r.Str {
			t.Errorf("%s: dtype %s, numpy %s", cases[i].Code, got[i], *r.Str)
		}
	}
}

// TestNanVarMatchesNumPy compares NanVar, NanStd and the ddof variants, whose sums of squares round by
// summation order, within a relative tolerance; all-NaN slices are NaN as in NumPy.
func TestNanVarMatchesNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(3, 9))
	var cases []npCase
	var got []*Array
	for i := 0; i < 30; i++ {
		r := 1 + rs.IntN(3)
		x, in := nanArray(rs, "x", npShape(rs, r, 1, 7), rs.IntN(2) == 0)
		ax, py := randAxes(rs, r)
		ddof := float64(rs.IntN(3))
		got = append(got, x.NanVar(ax...), x.NanStd(ax...), x.NanVarDdof(ddof, ax...), x.NanStdDdof(ddof, ax...))
		for _, f := range []string{"nanvar", "nanstd"} {
			cases = append(cases, npCase{Code: fmt.Sprintf("np.%s(x, axis=%s)", f, py), Inputs: map[string]npArray{"x": in.np()}})
		}
		for _, f := range []string{"nanvar", "nanstd"} {
			cases = append(cases, npCase{Code: fmt.Sprintf("np.%s(x, axis=%s, ddof=%v)", f, py, ddof), Inputs: map[string]npArray{"x": in.np()}})
		}
		// VarDdof on NaN-free data (float64, float32, int32), ddof up to beyond N
		y, yin := randArray(rs, "y", in.shape)
		dd := []float64{0, 1, 0.5, 3, 50}[rs.IntN(5)]
		got = append(got, y.VarDdof(dd, ax...), y.StdDdof(dd, ax...), y.AsType(Float32).VarDdof(dd, ax...), y.Mul(64).AsType(Int32).StdDdof(dd, ax...))
		for _, c := range []string{"np.var(y, axis=%s, ddof=%v)", "np.std(y, axis=%s, ddof=%v)", "np.var(y.astype(np.float32), axis=%s, ddof=%v)", "np.std((y*64).astype(np.int32), axis=%s, ddof=%v)"} {
			cases = append(cases, npCase{Code: fmt.Sprintf(c, py, dd), Inputs: map[string]npArray{"y": yin.np()}})
		}
	}
	for i, r := range numpy(t, cases) {
		if r.Err != "" {
			t.Errorf("%s: numpy: %s", cases[i].Code, r.Err)
			continue
		}
		c, err := got[i].Compute()
		if err != nil {
			t.Errorf("%s: %v", cases[i].Code, err)
			continue
		}
		if fmt.Sprint(c.Shape()) != fmt.Sprint(r.Shape) {
			t.Errorf("%s: shape %v, numpy %v", cases[i].Code, c.Shape(), r.Shape)
			continue
		}
		v, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		for j, w := range r.values(t) {
			tol := 1e-12
			if got[i].DType() == Float32 {
				tol = 1e-5
			}
			if !(v[j] == w || math.IsNaN(w) && math.IsNaN(v[j]) || math.Abs(v[j]-w) <= tol*math.Abs(w)) {
				t.Errorf("%s: element %d is %v, numpy %v", cases[i].Code, j, v[j], w)
				break
			}
		}
	}
}

func TestDiffMatchesNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(5, 3))
	var cs []check
	for i := 0; i < 40; i++ {
		r := 1 + rs.IntN(3)
		x, in := randArray(rs, "x", npShape(rs, r, 0, 6))
		n, k := rs.IntN(4), rs.IntN(r)-rs.IntN(2)*r
		what := fmt.Sprintf("Diff %v n %d axis %d", in.shape, n, k)
		cs = append(cs,
			check{what: what, got: Diff(x, n, k), code: fmt.Sprintf("np.diff(x, n=%d, axis=%d)", n, k), inputs: []input{in}},
			check{what: what + " uint8", got: Diff(x.Abs().Mul(4).AsType(Uint8), n, k), code: fmt.Sprintf("np.diff((np.abs(x)*4).astype(np.uint8), n=%d, axis=%d)", n, k), inputs: []input{in}},
			check{what: what + " bool", got: Diff(x.Gt(0), n, k), code: fmt.Sprintf("np.diff(x > 0, n=%d, axis=%d)", n, k), inputs: []input{in}},
		)
	}
	runChecks(t, cs, Inline())
	if Diff(Arange(0, 3, 1), -1, 0).Err() == nil || Diff(Arange(0, 3, 1), 1, 1).Err() == nil {
		t.Error("Diff with n < 0 or a bad axis: no error")
	}
}
