package gpuarray_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestFromSliceNested: nested Go slices of any numeric kind give their shape and dtype, and
// ragged or non-numeric input is an error that says where.
func TestFromSliceNested(t *testing.T) {
	type celsius float64
	cases := []struct {
		data  any
		shape []int
		dt    gpuarray.DType
		vals  []float64
	}{
		{[]int{1, 2, 3}, []int{3}, gpuarray.Int64, []float64{1, 2, 3}},
		{[][]float64{{1, 2}, {3, 4}, {5, 6}}, []int{3, 2}, gpuarray.Float64, []float64{1, 2, 3, 4, 5, 6}},
		{[][][]float32{{{1}, {2}}, {{3}, {4}}}, []int{2, 2, 1}, gpuarray.Float32, []float64{1, 2, 3, 4}},
		{[][]uint8{{7, 8}}, []int{1, 2}, gpuarray.Uint8, []float64{7, 8}},
		{[]celsius{-1.5, 20}, []int{2}, gpuarray.Float64, []float64{-1.5, 20}},
		{[2][2]int32{{1, 2}, {3, 4}}, []int{2, 2}, gpuarray.Int32, []float64{1, 2, 3, 4}},
		{[][]bool{{true, false}}, []int{1, 2}, gpuarray.Bool, []float64{1, 0}},
	}
	for _, c := range cases {
		x := gpuarray.FromSlice(c.data)
		if err := x.Err(); err != nil {
			t.Errorf("FromSlice(%T): %v", c.data, err)
			continue
		}
		if !slices.Equal(x.Shape(), c.shape) || x.DType() != c.dt {
			t.Errorf("FromSlice(%T): shape %v dtype %v, want %v %v", c.data, x.Shape(), x.DType(), c.shape, c.dt)
		}
		got, err := x.AsType(gpuarray.Float64).ToSlice()
		if err != nil || !slices.Equal(got, c.vals) {
			t.Errorf("FromSlice(%T) = %v, %v; want %v", c.data, got, err, c.vals)
		}
	}
	for _, c := range []struct {
		data any
		want string
	}{
		{[][]float64{{1, 2, 3}, {4, 5}}, "ragged input: data[1] has 2 elements, data[0] has 3"},
		{[][][]int{{{1, 2}, {3, 4}}, {{5, 6}, {7}}}, "ragged input: data[1][1] has 1 elements, data[0][0] has 2"},
		{[]string{"a"}, "not numbers"},
		{nil, "nil"},
		{3.5, "want a slice"},
	} {
		err := gpuarray.FromSlice(c.data).Err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FromSlice(%#v): error %v, want one containing %q", c.data, err, c.want)
		}
	}
}

// TestLongFormsStillCompile: the calls of the earlier required-argument signatures give what
// the short ones give with the same values.
func TestLongFormsStillCompile(t *testing.T) {
	same := func(what string, a, b *gpuarray.Array) {
		t.Helper()
		av, err1 := a.AsType(gpuarray.Float64).ToSlice()
		bv, err2 := b.AsType(gpuarray.Float64).ToSlice()
		if err1 != nil || err2 != nil || !slices.Equal(av, bv) || !slices.Equal(a.Shape(), b.Shape()) {
			t.Errorf("%s: %v %v (%v, %v)", what, av, bv, err1, err2)
		}
	}
	x := gpuarray.FromSlice([]int64{0, 1, 1, 3})
	same("Eye", gpuarray.Eye(3), gpuarray.Eye(3, 3, 0))
	if dt := gpuarray.Eye(2, 3, 1, gpuarray.WithDType(gpuarray.Float32)).DType(); dt != gpuarray.Float32 {
		t.Errorf("Eye with WithDType: %v", dt)
	}
	same("Bincount", gpuarray.Bincount(x), gpuarray.Bincount(x, nil, 0))
	h1, e1 := gpuarray.Histogram(x, 3, 0.0, 3.0, nil)
	h2, e2 := gpuarray.Histogram(x, 3, 0, 3)
	same("Histogram counts", h1, h2)
	same("Histogram edges", e1, e2)
	same("Arange", gpuarray.Arange(4), gpuarray.Arange(0, 4, 1))
	same("Diff", gpuarray.Diff(x), gpuarray.Diff(x, 1, 0))
	rs := gpuarray.NewRandomState(1)
	same("Choice", rs.Choice(x, 3), gpuarray.NewRandomState(1).Choice(x, 3, true, nil))
	if err := gpuarray.Eye(3, "x").Err(); err == nil {
		t.Error("Eye(3, \"x\") gave no error")
	}
}
