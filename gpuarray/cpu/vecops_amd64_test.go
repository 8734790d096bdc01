package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestVecOpsMatchGoLoops checks the four-lane loops of the fused kernels bit for bit against
// the Go loops, on special values (NaN, infinities, signed zeros, subnormals) and lengths
// that are multiples of 4.
func TestVecOpsMatchGoLoops(t *testing.T) {
	if !cpu.X86.HasAVX || !cpu.X86.HasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	rs := rand.New(rand.NewPCG(9, 3))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, math.MaxFloat64, 1, -3, 2.5, -2.5, 0.5, -0.5}
	val := func() float64 {
		if rs.IntN(3) == 0 {
			return special[rs.IntN(len(special))]
		}
		return rs.NormFloat64() * math.Pow(10, float64(rs.IntN(8)-4))
	}
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) || x != x && y != y }
	for _, l := range []int{0, 4, 8, 12, 512} {
		a, b := make([]float64, l), make([]float64, l)
		cond := make([]int64, l)
		for i := range a {
			a[i], b[i] = val(), val()
			cond[i] = int64(rs.IntN(2))
		}
		d1, d2 := make([]float64, l), make([]float64, l)
		for _, s := range special {
			for _, op := range []expr.Op{expr.OpAdd, expr.OpSub, expr.OpMul, expr.OpDiv} {
				for _, swap := range []bool{false, true} {
					v := vsAsm(op, swap)
					if v == nil {
						continue
					}
					v(d1, a, s)
					vsGo(op, swap)(d2, a, s)
					for i := range d1 {
						if !same(d1[i], d2[i]) {
							t.Fatalf("%v swap %v with %v, element %d (%v): AVX %v, Go %v", op, swap, s, i, a[i], d1[i], d2[i])
						}
					}
				}
			}
		}
		for _, op := range []expr.Op{expr.OpAdd, expr.OpSub, expr.OpMul} {
			vvAsm(op)(d1, a, b)
			vvGo(op)(d2, a, b)
			for i := range d1 {
				if !same(d1[i], d2[i]) {
					t.Fatalf("%v element %d (%v, %v): AVX %v, Go %v", op, i, a[i], b[i], d1[i], d2[i])
				}
			}
		}
		for _, op := range []expr.Op{expr.OpEq, expr.OpNe, expr.OpLt, expr.OpLe, expr.OpGt, expr.OpGe} {
			c1 := make([]int64, l)
			v, swap := cmpAsm(op)
			if swap {
				v(c1, b, a)
			} else {
				v(c1, a, b)
			}
			for i := range c1 {
				if want := b2i(compareFloat(op, a[i], b[i])); c1[i] != want {
					t.Fatalf("%v element %d (%v, %v): AVX %v, Go %v", op, i, a[i], b[i], c1[i], want)
				}
			}
			// A constant operand, as the histogram's comparisons have.
			cst := make([]float64, l)
			for i := range cst {
				cst[i] = 2.5
			}
			if swap {
				v(c1, cst, a)
			} else {
				v(c1, a, cst)
			}
			for i := range c1 {
				if want := b2i(compareFloat(op, a[i], 2.5)); c1[i] != want {
					t.Fatalf("%v 2.5, element %d (%v): AVX %v, Go %v", op, i, a[i], c1[i], want)
				}
			}
		}
		whereAsm()(d1, cond, a, b)
		for i := range d1 {
			want := b[i]
			if cond[i] != 0 {
				want = a[i]
			}
			if math.Float64bits(d1[i]) != math.Float64bits(want) {
				t.Fatalf("where element %d: %v, want %v", i, d1[i], want)
			}
		}
		for _, op := range []expr.Op{expr.OpTrunc, expr.OpFloor, expr.OpCeil} {
			roundAsm(op)(d1, a)
			f := unaryFunc(op)
			for i := range d1 {
				if want := f(a[i]); !same(d1[i], want) {
					t.Fatalf("%v element %d (%v): AVX %v, Go %v", op, i, a[i], d1[i], want)
				}
			}
		}
	}
}
