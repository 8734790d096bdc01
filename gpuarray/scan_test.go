package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// prodArray returns a chunked array of powers of two (and their negatives, zeros and some
// NaN), so that every product is exact whatever the order and equals NumPy's bit for bit.
func prodArray(rs *rand.Rand, name string, shape []int) (*Array, input) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	vals := []float64{-2, -1, -0.5, 0.5, 1, 2, 4, 0.25}
	v := make([]float64, n)
	for i := range v {
		switch rs.IntN(20) {
		case 0:
			v[i] = math.NaN()
		case 1:
			v[i] = 0
		default:
			v[i] = vals[rs.IntN(len(vals))]
		}
	}
	return FromSlice(v, Shape(shape...), ChunkSizes(npChunks(rs, shape)...)), input{name, shape, v}
}

// scanChecks builds Prod, CumulativeSum and CumulativeProd cases over random shapes,
// chunkings, axes and dtypes.
func scanChecks(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 11))
	var cs []check
	for i := 0; i < n; i++ {
		r := 1 + rs.IntN(3)
		shape := npShape(rs, r, 0, 5)
		if i%4 > 0 {
			shape = npShape(rs, r, 1, 5)
		}
		x, in := prodArray(rs, "x", shape)
		ax, py := randAxes(rs, r)
		add := func(what string, got *Array, code string) {
			cs = append(cs, check{what: fmt.Sprintf("%s %v axes %v", what, in.shape, ax), got: got, code: code, inputs: []input{in}})
		}
		add("Prod", x.Prod(ax...), fmt.Sprintf("np.prod(x, axis=%s)", py))
		add("Prod f32", x.AsType(Float32).Prod(ax...), fmt.Sprintf("np.prod(x.astype(np.float32), axis=%s)", py))
		xi := x.noNaN(3).Mul(2).AsType(Int32)
		add("Prod int32", xi.Prod(ax...), fmt.Sprintf("np.prod((np.where(np.isnan(x), 3, x)*2).astype(np.int32), axis=%s)", py))
		k := rs.IntN(r) - rs.IntN(2)*r
		init := rs.IntN(2) == 0
		pyInit := "False"
		if init {
			pyInit = "True"
		}
		s, sin := randArray(rs, "s", shape)
		cs = append(cs,
			check{what: fmt.Sprintf("CumulativeSum %v axis %d init %v", shape, k, init), got: CumulativeSum(s, k, init), code: fmt.Sprintf("np.cumulative_sum(s, axis=%d, include_initial=%s)", k, pyInit), inputs: []input{sin}},
			check{what: fmt.Sprintf("CumulativeSum f32 %v axis %d", shape, k), got: CumulativeSum(s.AsType(Float32), k, init), code: fmt.Sprintf("np.cumulative_sum(s.astype(np.float32), axis=%d, include_initial=%s)", k, pyInit), inputs: []input{sin}},
			check{what: fmt.Sprintf("CumulativeSum int16 %v axis %d", shape, k), got: CumulativeSum(s.Mul(64).AsType(Int16), k, init), code: fmt.Sprintf("np.cumsum((s*64).astype(np.int16), axis=%d)", k), inputs: []input{sin}},
			check{what: fmt.Sprintf("CumulativeProd %v axis %d init %v", shape, k, init), got: CumulativeProd(x, k, init), code: fmt.Sprintf("np.cumulative_prod(x, axis=%d, include_initial=%s)", k, pyInit), inputs: []input{in}},
		)
		if init { // the int16 case above has no initial value: its oracle is cumsum
			cs[len(cs)-2].got = CumulativeSum(s.Mul(64).AsType(Int16), k, false)
		}
	}
	return cs
}

func TestScansMatchNumPy(t *testing.T) {
	runChecks(t, scanChecks(1, 40), Inline())
	runChecks(t, scanChecks(2, 40)) // the threaded scheduler
}

func TestScanDTypesAndErrors(t *testing.T) {
	x := Arange(0, 6, 1).Reshape(2, 3)
	for _, c := range []struct {
		a    *Array
		want DType
	}{
		{x.AsType(Int8).Prod(), Int64}, {x.AsType(Uint16).Prod(0), Uint64}, {x.AsType(Bool).Prod(1), Int64},
		{x.AsType(Float32).Prod(), Float32}, {CumulativeSum(x.AsType(Int32), 1, false), Int64},
		{CumulativeProd(x.AsType(Complex64), 0, true), Complex64},
	} {
		if c.a.Err() != nil || c.a.DType() != c.want {
			t.Errorf("dtype %v (err %v), want %v", c.a.DType(), c.a.Err(), c.want)
		}
	}
	if err := CumulativeSum(x, 2, false).Err(); err == nil {
		t.Error("CumulativeSum along axis 2 of a 2-d array: no error")
	}
	if err := x.Prod(0, 0).Err(); err == nil {
		t.Error("Prod over a repeated axis: no error")
	}
}
