package cpu

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestSwappedInnerMatchesRowWalk: tasks whose innermost axis is short run with their last two
// axes swapped; every value equals the plain row walk's, bit for bit, for random, range and
// data leaves (strided and offset), every lane (float, integer, bool, complex) and 2-d and
// 3-d spaces cut into chunks.
func TestSwappedInnerMatchesRowWalk(t *testing.T) {
	must := func(n *expr.Node, err error) *expr.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	chunked := func(shape, c []int) [][]int {
		ch, err := expr.RegularChunks(shape, c)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	cst := func(v float64, dt expr.DType) *expr.Node { return must(expr.NewConst(v, dt, nil, nil)) }
	rnd := func(shape, c []int) *expr.Node {
		return must(expr.NewRandom(expr.RandSpec{Dist: expr.Normal, P0: 0, P1: 3, Key: [2]uint32{7, 1}}, expr.Float64, shape, chunked(shape, c)))
	}
	vals := make([]float64, 900*4)
	for i := range vals {
		vals[i] = math.Sin(float64(i)) * 100
	}
	data := must(expr.NewData(dtype.OfFloat64(vals), []int{900, 4}, chunked([]int{900, 4}, []int{900, 4})))
	x2 := rnd([]int{700, 3}, []int{256, 3})
	x3 := rnd([]int{3, 500, 2}, []int{2, 200, 2})
	y := must(expr.NewBinary(expr.OpAdd, must(expr.NewBinary(expr.OpMul, x2, cst(2, expr.Float64))), cst(1, expr.Float64)))
	sliced := must(expr.NewSlice(data, []expr.Index{{Start: 5, Stop: 890, Step: 3}, {Step: 1}}))
	empty := rnd([]int{300, 0}, []int{128, 1})
	cases := []*expr.Node{
		must(expr.NewBinary(expr.OpAdd, empty, cst(1, expr.Float64))),
		y,
		expr.NewCast(y, expr.Int16),
		expr.NewCast(y, expr.Float32),
		must(expr.NewBinary(expr.OpGt, y, cst(1, expr.Float64))),
		expr.NewCast(y, expr.Complex128),
		must(expr.NewUnary(expr.OpExp, x3)),
		must(expr.NewBinary(expr.OpSub, sliced, cst(3, expr.Float64))),
		expr.NewCast(sliced, expr.Uint8),
	}
	for ci, n := range cases {
		st, err := plan.Lower(0, n, nil, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		swapped := 0
		for _, task := range st.Tasks {
			task, err := plan.LoadInputs(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			if swapsInner(task) {
				swapped++
			}
			got, err := Execute(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			want, err := execute(context.Background(), task, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) || got.Data.DType() != want.Data.DType() || got.Data.Len() != want.Data.Len() {
				t.Fatalf("case %d: %v %v[%d], row walk %v %v[%d]", ci, got.Shape, got.Data.DType(), got.Data.Len(), want.Shape, want.Data.DType(), want.Data.Len())
			}
			if !bytes.Equal(got.Data.Bytes(), want.Data.Bytes()) {
				for i := 0; i < got.Data.Len(); i++ {
					if g, w := got.Data.Elem(i), want.Data.Elem(i); fmt.Sprint(g) != fmt.Sprint(w) {
						t.Fatalf("case %d, task %v+%v, element %d: %v, row walk %v", ci, task.Offset, task.Shape, i, g, w)
					}
				}
				t.Fatalf("case %d, task %v+%v: the bytes differ", ci, task.Offset, task.Shape)
			}
		}
		if swapped == 0 && ci > 0 { // case 0 is empty: nothing to walk
			t.Errorf("case %d: no task of shape %v took the swapped walk", ci, st.Tasks[0].Shape)
		}
	}
}
