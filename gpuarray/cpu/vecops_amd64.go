package cpu

import "github.com/gpunotes/gpunotes/gpuarray/expr"

//go:noescape
func addVSAVX(dst, a []float64, s float64)

//go:noescape
func mulVSAVX(dst, a []float64, s float64)

//go:noescape
func subVSAVX(dst, a []float64, s float64)

//go:noescape
func rsubVSAVX(dst, a []float64, s float64)

//go:noescape
func divVSAVX(dst, a []float64, s float64)

//go:noescape
func addVVAVX(dst, a, b []float64)

//go:noescape
func subVVAVX(dst, a, b []float64)

//go:noescape
func mulVVAVX(dst, a, b []float64)

//go:noescape
func cmpEqAVX(dst []int64, a, b []float64)

//go:noescape
func cmpLtAVX(dst []int64, a, b []float64)

//go:noescape
func cmpLeAVX(dst []int64, a, b []float64)

//go:noescape
func cmpNeAVX(dst []int64, a, b []float64)

//go:noescape
func whereAVX(dst []float64, cond []int64, x, y []float64)

//go:noescape
func truncAVX(dst, a []float64)

//go:noescape
func floorAVX(dst, a []float64)

//go:noescape
func ceilAVX(dst, a []float64)

// vsAsm is the AVX loop of a op s (s op a when swap), nil where there is none. It takes
// lengths that are multiples of 4.
func vsAsm(op expr.Op, swap bool) func(dst, a []float64, s float64) {
	switch {
	case op == expr.OpAdd:
		return addVSAVX
	case op == expr.OpMul:
		return mulVSAVX
	case op == expr.OpSub && !swap:
		return subVSAVX
	case op == expr.OpSub:
		return rsubVSAVX
	case op == expr.OpDiv && !swap:
		return divVSAVX
	}
	return nil
}

// vvAsm is the AVX loop of a op b, nil where there is none (multiples of 4).
func vvAsm(op expr.Op) func(dst, a, b []float64) {
	switch op {
	case expr.OpAdd:
		return addVVAVX
	case expr.OpSub:
		return subVVAVX
	case expr.OpMul:
		return mulVVAVX
	}
	return nil
}

// cmpAsm is the AVX loop of a comparison to 0 or 1, nil where there is none (multiples of
// 4); swap says the loop takes its operands the other way round (a > b is b < a: both false
// on NaN).
func cmpAsm(op expr.Op) (f func(dst []int64, a, b []float64), swap bool) {
	switch op {
	case expr.OpEq:
		return cmpEqAVX, false
	case expr.OpNe:
		return cmpNeAVX, false
	case expr.OpLt:
		return cmpLtAVX, false
	case expr.OpLe:
		return cmpLeAVX, false
	case expr.OpGt:
		return cmpLtAVX, true
	case expr.OpGe:
		return cmpLeAVX, true
	}
	return nil, false
}

// whereAsm is the AVX select (multiples of 4).
func whereAsm() func(dst []float64, cond []int64, x, y []float64) { return whereAVX }

// roundAsm is the AVX loop of trunc, floor or ceil, nil for other ops (multiples of 4).
func roundAsm(op expr.Op) func(dst, a []float64) {
	switch op {
	case expr.OpTrunc:
		return truncAVX
	case expr.OpFloor:
		return floorAVX
	case expr.OpCeil:
		return ceilAVX
	}
	return nil
}
