package cpu

import (
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// unaryFunc returns the scalar function of a unary op (the table's Float).
func unaryFunc(op expr.Op) func(float64) float64 { return genFloat1(op) }

// binaryFunc returns the scalar function of a binary op (the table's Float).
func binaryFunc(op expr.Op) func(x, y float64) float64 { return genFloat2(op) }

// maximum is NumPy's maximum: NaN propagates.
func maximum(x, y float64) float64 {
	if x != x || y != y {
		return math.NaN()
	}
	return math.Max(x, y)
}

// minimum is NumPy's minimum: NaN propagates.
func minimum(x, y float64) float64 {
	if x != x || y != y {
		return math.NaN()
	}
	return math.Min(x, y)
}

// absInt is |x| in the integer lane (unsigned values unchanged).
func absInt(x int64, u bool) int64 {
	if x < 0 && !u {
		return -x
	}
	return x
}

// addInt is x + y before wrapping; bools (bits 1) add as logical or, as NumPy's do.
func addInt(x, y int64, bits int) int64 {
	if bits == 1 {
		return x | y
	}
	return x + y
}

// powInt is x**y before wrapping; for bools (bits 1) x | !y, as NumPy's bool power.
func powInt(x, y int64, u bool, bits int) int64 {
	if bits == 1 {
		return x | (1 - y)
	}
	return intPow(x, y, u)
}

// maxInt is the larger of x and y, compared as unsigned when u.
func maxInt(x, y int64, u bool) int64 {
	if u && uint64(x) < uint64(y) || !u && x < y {
		return y
	}
	return x
}

// minInt is the smaller of x and y, compared as unsigned when u.
func minInt(x, y int64, u bool) int64 {
	if u && uint64(y) < uint64(x) || !u && y < x {
		return y
	}
	return x
}

// Scalar evaluates an op on scalars in dtype dt (used for constant folding and by tests).
func Scalar(op expr.Op, dt expr.DType, x ...float64) float64 {
	var v float64
	if op.Unary() {
		v = unaryFunc(op)(x[0])
	} else {
		v = binaryFunc(op)(x[0], x[1])
	}
	if dt == expr.Float32 {
		v = float64(float32(v))
	}
	return v
}

// vvFunc returns a vector-vector loop for op; the arithmetic ops have dedicated loops.
func vvFunc(op expr.Op) func(dst, a, b []float64) {
	g := vvGo(op)
	if v := vvAsm(op); v != nil && useAVX {
		// Four lanes at a time (a third of the scalar loop's time), the rest in Go.
		return func(dst, a, b []float64) {
			n := len(dst) &^ 3
			v(dst[:n], a[:n], b[:n])
			g(dst[n:], a[n:], b[n:])
		}
	}
	return g
}

// vvGo is vvFunc's Go loop.
func vvGo(op expr.Op) func(dst, a, b []float64) {
	switch op {
	case expr.OpAdd:
		return func(dst, a, b []float64) {
			b = b[:len(dst)]
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = a[i] + b[i]
			}
		}
	case expr.OpSub:
		return func(dst, a, b []float64) {
			b = b[:len(dst)]
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = a[i] - b[i]
			}
		}
	case expr.OpMul:
		return func(dst, a, b []float64) {
			b = b[:len(dst)]
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = a[i] * b[i]
			}
		}
	case expr.OpDiv:
		return div
	}
	f := binaryFunc(op)
	return func(dst, a, b []float64) {
		b = b[:len(dst)]
		a = a[:len(dst)]
		for i := range dst {
			dst[i] = f(a[i], b[i])
		}
	}
}

// vsFunc returns a loop for op with a scalar operand: a op s, or s op a when swap.
func vsFunc(op expr.Op, swap bool) func(dst, a []float64, s float64) {
	g := vsGo(op, swap)
	if v := vsAsm(op, swap); v != nil && useAVX {
		return func(dst, a []float64, s float64) {
			n := len(dst) &^ 3
			v(dst[:n], a[:n], s)
			g(dst[n:], a[n:], s)
		}
	}
	return g
}

// vsGo is vsFunc's Go loop.
func vsGo(op expr.Op, swap bool) func(dst, a []float64, s float64) {
	switch {
	case op == expr.OpAdd:
		return func(dst, a []float64, s float64) {
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = a[i] + s
			}
		}
	case op == expr.OpMul:
		return func(dst, a []float64, s float64) {
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = a[i] * s
			}
		}
	case op == expr.OpSub && !swap:
		return func(dst, a []float64, s float64) {
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = a[i] - s
			}
		}
	case op == expr.OpSub && swap:
		return func(dst, a []float64, s float64) {
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = s - a[i]
			}
		}
	case op == expr.OpDiv && !swap:
		return func(dst, a []float64, s float64) {
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = a[i] / s
			}
		}
	}
	f := binaryFunc(op)
	if swap {
		return func(dst, a []float64, s float64) {
			a = a[:len(dst)]
			for i := range dst {
				dst[i] = f(s, a[i])
			}
		}
	}
	return func(dst, a []float64, s float64) {
		a = a[:len(dst)]
		for i := range dst {
			dst[i] = f(a[i], s)
		}
	}
}

func round32(v []float64) {
	for i, x := range v {
		v[i] = float64(float32(x))
	}
}
