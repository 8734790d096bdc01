package gpuarray

import (
	"context"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// laneReductionDTypes are the dtypes whose reductions accumulate in integer or complex lanes
// on the GPU (bools through their int64 counts).
var laneReductionDTypes = []DType{Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Complex64, Complex128}

// laneTestArray returns a shape (rows x cols) array of dtype dt in chunks (cr, cc), with values
// that wrap int64 and uint64 sums (the extremes of int64) and ties for the arg reductions.
func laneTestArray(r *rand.Rand, dt DType, rows, cols, cr, cc int) *Array {
	opts := []ArrayOption{Shape(rows, cols), Chunks(cr, cc), WithDType(dt)}
	n := rows * cols
	if dt.IsComplex() {
		v := make([]complex128, n)
		for i := range v {
			v[i] = complex(r.NormFloat64()*100, float64(r.IntN(9)-4)/8)
		}
		return FromSliceComplex128(v, opts...)
	}
	ints := []int64{math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32, math.MaxUint32, -1, 0, 1, 127, -128, 255}
	v := make([]int64, n)
	for i := range v {
		switch r.IntN(4) {
		case 0:
			v[i] = ints[r.IntN(len(ints))]
		case 1:
			v[i] = int64(r.Uint64())
		default:
			v[i] = int64(r.IntN(7)) - 3
		}
	}
	return FromSliceInt64(v, opts...) // wraps into dt (bools: nonzero)
}

// laneReductions are the reductions of an integer, bool or complex array the GPU runs in its
// integer or complex lanes, by name, over axes (none: all).
func laneReductions(x *Array, axes []int) map[string]*Array {
	m := map[string]*Array{"sum": x.Sum(axes...), "count_nonzero": x.CountNonzero(axes...), "any": x.Any(axes...), "all": x.All(axes...)}
	if x.DType().Size() < 8 || x.DType().IsComplex() {
		// A mean of integers is a float64 sum (NumPy's rule), exact in any order below 2^53:
		// not so for 64-bit integers, whose float means TestGPUAxisReductionsMatchCPU bounds.
		m["mean"] = x.Mean(axes...)
	}
	if !x.DType().IsComplex() {
		m["min"], m["max"] = x.Min(axes...), x.Max(axes...)
		if len(axes) <= 1 {
			m["argmin"], m["argmax"] = x.ArgMin(axes...), x.ArgMax(axes...)
		}
	}
	return m
}

// TestLaneReductionsLowerToTheGPU: sums, means, min/max, argmin/argmax, any, all and
// count_nonzero of every integer, bool and complex dtype, full and over each axis, lower to GPU
// kernels (with the real device library), so the GPU backend runs none of them on the host;
// the CPU's results are checked against NumPy's dtype rules on the way. It needs no GPU.
func TestLaneReductionsLowerToTheGPU(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	c := &lowerCheck{lib: string(lib), kernels: map[string]bool{}}
	r := rand.New(rand.NewPCG(20, 17))
	for _, dt := range laneReductionDTypes {
		x := laneTestArray(r, dt, 30, 50, 7, 20)
		for _, axes := range [][]int{nil, {0}, {1}} {
			for name, y := range laneReductions(x, axes) {
				if _, err := y.ToSlice(On(c)); err != nil {
					t.Errorf("%s over %v of %v: %v", name, axes, dt, err)
				}
			}
		}
	}
	t.Logf("%d kernels lowered", len(c.kernels))
}

// TestGPULaneReductionsMatchCPU: every integer, bool and complex reduction over every axis
// choice, on arrays in uneven chunks large enough that the GPU splits each result over
// several blocks or warps, runs on the GPU with no host step and gives the CPU's dtype and
// values: bit-equal for integers and bools (integer addition wraps the same in any order, and
// min/max/arg do not depend on it); complex sums and means within 2*n*eps*sum|x| of the CPU,
// per part (n elements per result), as the float sums are.
func TestGPULaneReductionsMatchCPU(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(20, 18))
	// A column walk with two slices per kept element, and a warp walk of rows with nine; the
	// full reductions split into several blocks in both.
	shapes := [][4]int{{3000, 700, 1100, 300}, {40, 70000, 40, 30000}}
	for _, dt := range laneReductionDTypes {
		for si, sh := range shapes {
			x := laneTestArray(r, dt, sh[0], sh[1], sh[2], sh[3])
			for _, axes := range [][]int{nil, {0}, {1}} {
				for name, y := range laneReductions(x, axes) {
					what := fmt.Sprintf("%s over %v of %v %dx%d", name, axes, dt, sh[0], sh[1])
					if !dt.IsComplex() {
						sameOnGPU(t, what, y, 0)
						continue
					}
					complexWithinBound(t, what, x, y, axes, name == "mean")
				}
			}
			if si == 0 && t.Failed() {
				return // one shape's failures say enough
			}
		}
	}
}

// complexWithinBound checks a complex sum or mean y of x over axes on the GPU against the CPU:
// each part within 2*n*eps*sum|part| (divided by n for means), and no host step.
func complexWithinBound(t *testing.T, what string, x, y *Array, axes []int, mean bool) {
	t.Helper()
	if !y.DType().IsComplex() { // count_nonzero, any, all of complex values: exact
		sameOnGPU(t, what, y, 0)
		return
	}
	a, b, ok := onGPUAndCPU(t, what, y)
	if !ok {
		return
	}
	absRe, err := Real(x).Abs().Sum(axes...).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	absIm, err := Imag(x).Abs().Sum(axes...).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	n := float64(x.Size() / max(y.Size(), 1))
	for i := range a {
		ca, cb := a[i], b[i]
		for part, d := range []float64{math.Abs(real(ca) - real(cb)), math.Abs(imag(ca) - imag(cb))} {
			abs := []float64{absRe[i], absIm[i]}[part]
			bound := 2 * n * 0x1p-52 * abs
			if mean {
				bound /= n
			}
			if y.DType() == Complex64 { // the result is rounded to complex64
				bound = max(bound, 0x1p-23*math.Abs([]float64{real(ca), imag(ca)}[part]))
			}
			if d > bound {
				t.Errorf("%s: element %d is %v on the CPU, %v on the GPU (bound %v)", what, i, ca, cb, bound)
				return
			}
		}
	}
}

// scanRunsCheck is a scheduler that fails on any call kernel the GPU backend would run on the
// host (cuda.Runs), then runs the tasks on the CPU.
type scanRunsCheck struct{ calls int }

func (c *scanRunsCheck) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	for _, t := range tasks {
		if t.Kernel.Call != nil {
			if err := cuda.Runs(t.Kernel); err != nil {
				return nil, fmt.Errorf("host fallback for %s: %w", describeKernel(t.Kernel), err)
			}
			c.calls++
		}
	}
	return engine.Inline{}.Run(ctx, tasks, done)
}

// scanCases are cumulative sums and products and products along an axis of x, by name.
func scanCases(x *Array, axis int) map[string]*Array {
	return map[string]*Array{
		"cumsum":  CumulativeSum(x, axis, false),
		"cumprod": CumulativeProd(x, axis, true),
		"prod":    x.Prod(axis),
	}
}

// TestScansRunOnTheGPU: cumulative sums and products and products along an axis, of every
// dtype, run on the GPU backend with no host step (their kernels are generated scans). It
// needs no GPU.
func TestScansRunOnTheGPU(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	c := &scanRunsCheck{}
	for _, dt := range append([]DType{Float32, Float64}, laneReductionDTypes...) {
		x := laneTestArray(r, Int64, 20, 30, 7, 11).AsType(dt)
		for axis := range 2 {
			for name, y := range scanCases(x, axis) {
				if _, err := y.ToSlice(On(c)); err != nil {
					t.Errorf("%s along %d of %v: %v", name, axis, dt, err)
				}
			}
		}
	}
	if c.calls == 0 {
		t.Fatal("no call kernels seen")
	}
}

// TestGPUScansMatchCPU: scans of every dtype along each axis, on shapes that take both of the
// GPU's walks (a thread per line; segments of few long lines), in several chunks: no host
// step, the CPU's dtype, and the CPU's bits for integers, bools and every dtype walked a thread
// per line; floats scanned by segments within 2*(n-1)*eps*sum|x| of the CPU (products within
// 2*(n-1)*eps relative; complex values per part), n the line's length.
func TestGPUScansMatchCPU(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(21, 2))
	shapes := []struct {
		rows, cols, cr, cc, axis int
		segments                 bool
	}{
		{300, 200, 70, 90, 0, false}, {300, 200, 70, 90, 1, false},
		{20000, 4, 9000, 3, 1, false}, {30, 17000, 20, 7000, 0, false},
		{1, 1 << 17, 1, 50000, 1, true}, {3, 70000, 2, 30000, 1, true}, {70000, 3, 30000, 2, 0, true},
	}
	for _, dt := range append([]DType{Float32, Float64}, laneReductionDTypes...) {
		for _, sh := range shapes {
			var x *Array
			if dt.IsFloat() || dt.IsComplex() {
				// Values near 1 keep products finite over long lines.
				x = laneTestArray(r, Complex128, sh.rows, sh.cols, sh.cr, sh.cc).Mul(1e-5).Add(1).AsType(dt)
				if dt.IsFloat() {
					x = Real(laneTestArray(r, Complex128, sh.rows, sh.cols, sh.cr, sh.cc)).Mul(1e-5).Add(1).AsType(dt)
				}
			} else {
				x = laneTestArray(r, dt, sh.rows, sh.cols, sh.cr, sh.cc)
			}
			for name, y := range scanCases(x, sh.axis) {
				what := fmt.Sprintf("%s along %d of %v %dx%d", name, sh.axis, dt, sh.rows, sh.cols)
				if !sh.segments || !(dt.IsFloat() || dt.IsComplex()) {
					sameOnGPU(t, what, y, 0)
					continue
				}
				scanWithinBound(t, what, x, y, sh.axis, name)
			}
		}
	}
}

// onGPUAndCPU computes y on the GPU and on the CPU and gives their values as complex128 (CPU
// first), failing where either computation fails, part of the GPU's ran on the host, or the two
// differ in dtype or length; ok is false where the values cannot be compared.
func onGPUAndCPU(t *testing.T, what string, y *Array) (a, b []complex128, ok bool) {
	t.Helper()
	gc, err := y.Compute(OnGPU())
	if err != nil {
		t.Errorf("%s on the GPU: %v", what, err)
		return nil, nil, false
	}
	if p := gc.Path(); strings.Contains(p, "host") {
		t.Errorf("%s: part of it ran on the host: %s", what, p)
	}
	cc, err := y.Compute()
	if err != nil {
		t.Errorf("%s on the CPU: %v", what, err)
		return nil, nil, false
	}
	a0, _ := cc.n.Values()
	b0, _ := gc.n.Values()
	if a0.DType() != b0.DType() || a0.Len() != b0.Len() {
		t.Errorf("%s: %v x %d on the CPU, %v x %d on the GPU", what, a0.DType(), a0.Len(), b0.DType(), b0.Len())
		return nil, nil, false
	}
	// Copies: the host copies are unmapped when cc and gc are collected (Convert gives
	// complex128 values back as they are).
	a = slices.Clone(dtype.Convert(a0, Complex128).Complex128s())
	b = slices.Clone(dtype.Convert(b0, Complex128).Complex128s())
	runtime.KeepAlive(cc)
	runtime.KeepAlive(gc)
	return a, b, true
}

// scanWithinBound checks a float or complex scan y of x along axis on the GPU against the CPU
// (see TestGPUScansMatchCPU for the bound).
func scanWithinBound(t *testing.T, what string, x, y *Array, axis int, name string) {
	t.Helper()
	a, b, ok := onGPUAndCPU(t, what, y)
	if !ok {
		return
	}
	// sum|x| along the axis so far, per part, for sums.
	var absRe, absIm []float64
	if name == "cumsum" {
		var err error
		re, im := Real(x).Abs(), Imag(x).Abs()
		if absRe, err = CumulativeSum(re, axis, false).ToSlice(); err != nil {
			t.Fatal(err)
		}
		if absIm, err = CumulativeSum(im, axis, false).ToSlice(); err != nil {
			t.Fatal(err)
		}
	}
	n := float64(x.Shape()[axis])
	eps := 0x1p-52
	if y.DType() == Float32 || y.DType() == Complex64 {
		eps = 0x1p-23
	}
	for i := range a {
		for part := range 2 {
			ca, cb := []float64{real(a[i]), imag(a[i])}[part], []float64{real(b[i]), imag(b[i])}[part]
			bound := 2 * (n - 1) * eps * math.Abs(ca) // products: relative
			if absRe != nil {
				bound = 2 * (n - 1) * eps * []float64{absRe[i], absIm[i]}[part]
			}
			if name != "cumsum" && y.DType().IsComplex() {
				bound = 2 * (n - 1) * eps * cmplx.Abs(a[i]) * 4
			}
			if math.Abs(ca-cb) > bound && !(ca != ca && cb != cb) {
				t.Errorf("%s: element %d is %v on the CPU, %v on the GPU (bound %v)", what, i, a[i], b[i], bound)
				return
			}
		}
	}
}

// TestScansOfComputedIntegersAreExact: a scan of computed int64 values (not a plain input)
// reads them as int64, not through float64 (which rounded 2^60+1).
func TestScansOfComputedIntegersAreExact(t *testing.T) {
	big := int64(1)<<60 + 1
	x := FromSliceInt64([]int64{big, 3, math.MaxInt64, -5}, Chunks(2)).Mul(1)
	for _, c := range []struct {
		y    *Array
		want []int64
	}{
		{CumulativeSum(x, 0, false), []int64{big, big + 3, big + 3 + math.MaxInt64, big + 3 + math.MaxInt64 - 5}},
		{CumulativeProd(x, 0, false), []int64{big, big * 3, big * 3 * math.MaxInt64, big * 3 * math.MaxInt64 * -5}},
		{x.Prod(), []int64{big * 3 * math.MaxInt64 * -5}},
	} {
		got, err := c.y.ToSliceInt64()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.y, got, c.want)
		}
	}
}
