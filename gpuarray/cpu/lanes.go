package cpu

import (
	"fmt"
	"math/cmplx"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// lane is the representation an instruction computes in: float64 for float32 and float64
// (float32 rounded after each op), int64 for the integers and bool (unsigned values as their
// bits, every value wrapped to its dtype's width after each op, bools 0 or 1), complex128 for
// complex64 and complex128 (complex64 rounded after each op).
type lane uint8

const (
	laneF lane = iota
	laneI
	laneC
)

func laneOf(dt dtype.DType) lane {
	switch {
	case dt.IsFloat():
		return laneF
	case dt.IsComplex():
		return laneC
	}
	return laneI
}

func filled(c float64) []float64 {
	v := make([]float64, BlockLen)
	for i := range v {
		v[i] = c
	}
	return v
}

// wrapInt returns the function that brings an int64 lane value to dt's range: NumPy's
// wrap-around for integers, 0 or 1 for bools; nil where nothing is needed.
func wrapInt(dt dtype.DType) func(int64) int64 {
	switch dt {
	case dtype.Bool:
		return func(x int64) int64 { return b2i(x != 0) }
	case dtype.Int8:
		return func(x int64) int64 { return int64(int8(x)) }
	case dtype.Int16:
		return func(x int64) int64 { return int64(int16(x)) }
	case dtype.Int32:
		return func(x int64) int64 { return int64(int32(x)) }
	case dtype.Uint8:
		return func(x int64) int64 { return int64(uint8(x)) }
	case dtype.Uint16:
		return func(x int64) int64 { return int64(uint16(x)) }
	case dtype.Uint32:
		return func(x int64) int64 { return int64(uint32(x)) }
	}
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// laneValue converts a float64 to dt's lane by NumPy's cast rules.
func intFromFloat(x float64, dt dtype.DType) int64 {
	switch dt {
	case dtype.Bool:
		return b2i(x != 0 || x != x)
	case dtype.Int64:
		return dtype.FloatToInt64(x)
	case dtype.Uint64:
		return int64(dtype.FloatToUint64(x))
	case dtype.Uint32:
		return int64(dtype.FloatToUint32(x))
	}
	return wrapInt(dt)(int64(dtype.FloatToInt32(x)))
}

func floatFromInt(x int64, from dtype.DType) float64 {
	if from.Kind() == dtype.KindUint {
		return float64(uint64(x))
	}
	return float64(x)
}

func round64(c complex128) complex128 { return complex128(complex64(c)) }

// constant makes an integer or complex constant operand: its vector filled once, no step.
func (p *program) constant(o *operand, v float64) *operand {
	switch o.lane {
	case laneI:
		o.ivec = make([]int64, BlockLen)
		c := intFromFloat(v, o.dt)
		for i := range o.ivec {
			o.ivec[i] = c
		}
	case laneC:
		o.cvec = make([]complex128, BlockLen)
		c := complex(v, 0)
		if o.dt == dtype.Complex64 {
			c = round64(c)
		}
		for i := range o.cvec {
			o.cvec[i] = c
		}
	}
	return o
}

// alloc gives o its vector.
func (o *operand) alloc() {
	switch o.lane {
	case laneF:
		o.vec = make([]float64, BlockLen)
	case laneI:
		o.ivec = make([]int64, BlockLen)
	case laneC:
		o.cvec = make([]complex128, BlockLen)
	}
}

// compileLanes compiles what the float path does not: instructions in the integer and complex
// lanes, comparisons (a bool result), and casts, wheres and unary ops that read another lane.
func (p *program) compileLanes(t *plan.Task, in *plan.Instr, o *operand, args []*operand) (*operand, error) {
	o.alloc()
	switch in.Code {
	case plan.Random, plan.Range:
		// Generate float64 values, then cast them (Integers gives int64 arrays).
		fin := *in
		fin.DType = dtype.Float64
		f, err := p.compileInstr(t, &fin)
		if err != nil {
			return nil, err
		}
		conv := castFunc(o, f)
		gen := f.apply
		o.leaf = f.leaf
		o.apply = func(n int) { gen(n); conv(n) }
	case plan.Input:
		if in.Slot < 0 || in.Slot >= len(t.Inputs) {
			return nil, fmt.Errorf("input slot %d of %d", in.Slot, len(t.Inputs))
		}
		b := &t.Inputs[in.Slot]
		if len(b.Shape) != len(in.Map) || int64(b.Data.Len()) != expr.Size(b.Shape) {
			return nil, fmt.Errorf("input block of shape %s with %d values for a map of %d axes", expr.ShapeString(b.Shape), b.Data.Len(), len(in.Map))
		}
		base, coef := in.LinearIn(b, len(t.Kernel.Shape))
		l := p.newLeaf(base, coef)
		o.leaf = l
		stride := l.coef[p.rank-1]
		src := operandOfSlice(b.Data)
		read := castFunc(o, src)
		data := b.Data
		o.apply = func(n int) {
			idx := l.rowBase + l.j0*stride
			gather(src, data, idx, stride, n)
			read(n)
		}
	case plan.Cast:
		o.apply = castFunc(o, args[0])
	case plan.Search:
		f, err := searchFunc(t, in, o, args[0])
		if err != nil {
			return nil, err
		}
		o.apply = f
	case plan.Where:
		c, x, y := args[0], args[1], args[2]
		truth := truthFunc(c)
		switch {
		case o.lane == laneF && c.lane == laneI && whereAsm() != nil && useAVX: // the common case
			w := whereAsm()
			o.apply = func(n int) {
				cv, xv, yv, d := c.ivec[:n], x.vec[:n], y.vec[:n], o.vec[:n]
				m := n &^ 3
				w(d[:m], cv[:m], xv[:m], yv[:m])
				for i := m; i < n; i++ {
					if cv[i] != 0 {
						d[i] = xv[i]
					} else {
						d[i] = yv[i]
					}
				}
			}
		case o.lane == laneF && c.lane == laneI: // a comparison's bools: the common case
			o.apply = func(n int) {
				cv, xv, yv, d := c.ivec[:n], x.vec[:n], y.vec[:n], o.vec[:n]
				for i := range d {
					if cv[i] != 0 {
						d[i] = xv[i]
					} else {
						d[i] = yv[i]
					}
				}
			}
		case o.lane == laneF:
			o.apply = func(n int) {
				for i := range n {
					if truth(i) {
						o.vec[i] = x.vec[i]
					} else {
						o.vec[i] = y.vec[i]
					}
				}
			}
		case o.lane == laneI:
			o.apply = func(n int) {
				for i := range n {
					if truth(i) {
						o.ivec[i] = x.ivec[i]
					} else {
						o.ivec[i] = y.ivec[i]
					}
				}
			}
		case o.lane == laneC:
			o.apply = func(n int) {
				for i := range n {
					if truth(i) {
						o.cvec[i] = x.cvec[i]
					} else {
						o.cvec[i] = y.cvec[i]
					}
				}
			}
		}
		return o, nil // x and y are in o's dtype already
	case plan.Unary:
		f, err := unaryLane(in.Op, o, args[0])
		if err != nil {
			return nil, err
		}
		o.apply = f
	case plan.Binary:
		f, err := binaryLane(in.Op, o, args[0], args[1])
		if err != nil {
			return nil, err
		}
		o.apply = f
	default:
		return nil, fmt.Errorf("unknown instruction code %d", in.Code)
	}
	if in.Code == plan.Binary && o.dt == dtype.Bool && (in.Op.Comparison() || logicalOp(in.Op)) {
		return o, nil // 0 or 1 already: a wrap per element was a third of a histogram's time
	}
	finish(o)
	return o, nil
}

func logicalOp(op expr.Op) bool {
	return op == expr.OpLogicalAnd || op == expr.OpLogicalOr || op == expr.OpLogicalXor
}

// finish rounds or wraps o's values to its dtype after each step.
func finish(o *operand) {
	inner := o.apply
	switch {
	case o.dt == dtype.Float32:
		o.apply = func(n int) { inner(n); round32(o.vec[:n]) }
	case o.dt == dtype.Complex64:
		o.apply = func(n int) {
			inner(n)
			for i, c := range o.cvec[:n] {
				o.cvec[i] = round64(c)
			}
		}
	case o.lane == laneI:
		if w := wrapLoop(o.dt); w != nil {
			o.apply = func(n int) { inner(n); w(o.ivec[:n]) }
		}
	}
}

// wrapLoop returns the loop that brings int64 lane values to dt's range in place (wrapInt's,
// without a call per value); nil where nothing is needed.
func wrapLoop(dt dtype.DType) func(v []int64) {
	switch dt {
	case dtype.Bool:
		return func(v []int64) {
			for i, x := range v {
				v[i] = b2i(x != 0)
			}
		}
	case dtype.Int8:
		return wrapAs[int8]
	case dtype.Int16:
		return wrapAs[int16]
	case dtype.Int32:
		return wrapAs[int32]
	case dtype.Uint8:
		return wrapAs[uint8]
	case dtype.Uint16:
		return wrapAs[uint16]
	case dtype.Uint32:
		return wrapAs[uint32]
	}
	return nil
}

func wrapAs[T int8 | int16 | int32 | uint8 | uint16 | uint32](v []int64) {
	for i, x := range v {
		v[i] = int64(T(x))
	}
}

// operandOfSlice is a scratch operand in the lane of s's dtype, for gather.
func operandOfSlice(s dtype.Slice) *operand {
	o := &operand{dt: s.DType(), lane: laneOf(s.DType())}
	o.alloc()
	return o
}

func gatherInts[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](dst []int64, src []T, idx, stride int64) {
	for i := range dst {
		dst[i] = int64(src[idx])
		idx += stride
	}
}

// gather reads n values of data, starting at idx with stride, into o's vector.
func gather(o *operand, data dtype.Slice, idx, stride int64, n int) {
	switch data.DType() {
	case dtype.Float64:
		src, dst := data.Float64s(), o.vec[:n]
		for i := range dst {
			dst[i] = src[idx]
			idx += stride
		}
	case dtype.Float32:
		src, dst := data.Float32s(), o.vec[:n]
		for i := range dst {
			dst[i] = float64(src[idx])
			idx += stride
		}
	case dtype.Bool:
		src, dst := data.Bools(), o.ivec[:n]
		for i := range dst {
			dst[i] = b2i(src[idx])
			idx += stride
		}
	case dtype.Int8:
		gatherInts(o.ivec[:n], data.Int8s(), idx, stride)
	case dtype.Int16:
		gatherInts(o.ivec[:n], data.Int16s(), idx, stride)
	case dtype.Int32:
		gatherInts(o.ivec[:n], data.Int32s(), idx, stride)
	case dtype.Int64:
		gatherInts(o.ivec[:n], data.Int64s(), idx, stride)
	case dtype.Uint8:
		gatherInts(o.ivec[:n], data.Uint8s(), idx, stride)
	case dtype.Uint16:
		gatherInts(o.ivec[:n], data.Uint16s(), idx, stride)
	case dtype.Uint32:
		gatherInts(o.ivec[:n], data.Uint32s(), idx, stride)
	case dtype.Uint64:
		gatherInts(o.ivec[:n], data.Uint64s(), idx, stride)
	case dtype.Complex64:
		src, dst := data.Complex64s(), o.cvec[:n]
		for i := range dst {
			dst[i] = complex128(src[idx])
			idx += stride
		}
	case dtype.Complex128:
		src, dst := data.Complex128s(), o.cvec[:n]
		for i := range dst {
			dst[i] = src[idx]
			idx += stride
		}
	}
}

// castFunc returns a step that converts a's current values into o's lane and dtype, by
// NumPy's cast rules (dtype.Convert's).
func castFunc(o, a *operand) func(n int) {
	from, to := a.dt, o.dt
	switch {
	case o.lane == laneF && a.lane == laneF:
		return func(n int) { copy(o.vec[:n], a.vec[:n]) } // float32 rounding follows in finish
	case o.lane == laneF && a.lane == laneI:
		return func(n int) {
			for i, x := range a.ivec[:n] {
				o.vec[i] = floatFromInt(x, from)
			}
			if to == dtype.Float32 && from.Size() == 8 { // one rounding from a 64-bit integer
				for i, x := range a.ivec[:n] {
					if from.Kind() == dtype.KindUint {
						o.vec[i] = float64(float32(uint64(x)))
					} else {
						o.vec[i] = float64(float32(x))
					}
				}
			}
		}
	case o.lane == laneF && a.lane == laneC:
		return func(n int) {
			for i, c := range a.cvec[:n] {
				o.vec[i] = real(c)
			}
		}
	case o.lane == laneI && a.lane == laneF:
		return func(n int) {
			for i, x := range a.vec[:n] {
				o.ivec[i] = intFromFloat(x, to)
			}
		}
	case o.lane == laneI && a.lane == laneI:
		w := wrapInt(to)
		return func(n int) {
			for i, x := range a.ivec[:n] {
				if to == dtype.Bool {
					x = b2i(x != 0)
				} else if w != nil {
					x = w(x)
				}
				o.ivec[i] = x
			}
		}
	case o.lane == laneI && a.lane == laneC:
		return func(n int) {
			for i, c := range a.cvec[:n] {
				if to == dtype.Bool {
					o.ivec[i] = b2i(c != 0 || cmplx.IsNaN(c))
				} else {
					o.ivec[i] = intFromFloat(real(c), to)
				}
			}
		}
	case o.lane == laneC && a.lane == laneF:
		return func(n int) {
			for i, x := range a.vec[:n] {
				o.cvec[i] = complex(x, 0)
			}
		}
	case o.lane == laneC && a.lane == laneI:
		return func(n int) {
			for i, x := range a.ivec[:n] {
				if to == dtype.Complex64 && from.Size() == 8 {
					if from.Kind() == dtype.KindUint {
						o.cvec[i] = complex(float64(float32(uint64(x))), 0)
					} else {
						o.cvec[i] = complex(float64(float32(x)), 0)
					}
				} else {
					o.cvec[i] = complex(floatFromInt(x, from), 0)
				}
			}
		}
	}
	return func(n int) { copy(o.cvec[:n], a.cvec[:n]) }
}

// truthFunc reports whether value i of c is true (nonzero; NaN is true).
func truthFunc(c *operand) func(i int) bool {
	switch c.lane {
	case laneI:
		return func(i int) bool { return c.ivec[i] != 0 }
	case laneC:
		return func(i int) bool { return c.cvec[i] != 0 || cmplx.IsNaN(c.cvec[i]) }
	}
	return func(i int) bool { return c.vec[i] != 0 || c.vec[i] != c.vec[i] }
}

// unaryLane compiles a unary op whose operand or result is not in the float lane (the
// table's integer and complex lanes).
func unaryLane(op expr.Op, o, a *operand) (func(int), error) {
	if f := genUnaryLane(op, o, a); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("%v of %v values is not supported", op, a.dt)
}

// binaryLane compiles a binary op in the integer or complex lane, or a comparison.
func binaryLane(op expr.Op, o, a, b *operand) (func(int), error) {
	if op.Comparison() {
		return compare(op, o, a, b)
	}
	if logicalOp(op) && a.dt == dtype.Bool && b.dt == dtype.Bool {
		return boolLogic(op, o, a, b), nil
	}
	if _, ok := op.Generated(); ok && a.lane == laneI {
		f := genInt2(op)
		if f == nil {
			return nil, fmt.Errorf("%v of %v values is not supported", op, a.dt)
		}
		u, bits := a.dt.Kind() == dtype.KindUint, laneBits(a.dt)
		return func(n int) {
			x, y := a.ivec[:n], b.ivec[:n]
			for i := range x {
				o.ivec[i] = f(x[i], y[i], u, bits)
			}
		}, nil
	}
	switch o.lane {
	case laneI: // the first ops (the table's Core): bools add as or, as NumPy's bool arithmetic
		f := genInt2(op)
		if f == nil {
			return nil, fmt.Errorf("%v of %v values is not supported", op, o.dt)
		}
		u, bits := o.dt.Kind() == dtype.KindUint, laneBits(o.dt)
		return func(n int) {
			x, y := a.ivec[:n], b.ivec[:n]
			for i := range x {
				o.ivec[i] = f(x[i], y[i], u, bits)
			}
		}, nil
	case laneC:
		f := genComplex2(op)
		if f == nil {
			return nil, fmt.Errorf("%v of %v values is not supported", op, o.dt)
		}
		return func(n int) {
			x, y := a.cvec[:n], b.cvec[:n]
			for i := range x {
				o.cvec[i] = f(x[i], y[i])
			}
		}, nil
	}
	return nil, fmt.Errorf("%v of %v values is not supported", op, o.dt)
}

// intPow is x**y with wrap-around; a negative exponent (NumPy raises) gives 1/x truncated
// toward zero (1 for 1, ±1 for -1, 0 otherwise).
func intPow(x, y int64, unsigned bool) int64 {
	if y < 0 && !unsigned {
		switch x {
		case 1:
			return 1
		case -1:
			if y%2 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	e := uint64(y)
	for e > 0 {
		if e&1 == 1 {
			r *= x
		}
		x *= x
		e >>= 1
	}
	return r
}

// compare compiles a comparison: a bool result from operands of one dtype (complex numbers
// order lexicographically, as NumPy orders them).
func compare(op expr.Op, o, a, b *operand) (func(int), error) {
	var cmp func(i int) int // -1, 0, 1; 2 when unordered (NaN)
	switch a.lane {
	case laneF:
		cmp = func(i int) int {
			x, y := a.vec[i], b.vec[i]
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			case x == y:
				return 0
			}
			return 2
		}
	case laneI:
		unsigned := a.dt.Kind() == dtype.KindUint
		cmp = func(i int) int {
			x, y := a.ivec[i], b.ivec[i]
			if x == y {
				return 0
			}
			if unsigned && uint64(x) < uint64(y) || !unsigned && x < y {
				return -1
			}
			return 1
		}
	case laneC:
		cmp = func(i int) int {
			x, y := a.cvec[i], b.cvec[i]
			if cmplx.IsNaN(x) || cmplx.IsNaN(y) {
				return 2
			}
			switch {
			case real(x) < real(y) || real(x) == real(y) && imag(x) < imag(y):
				return -1
			case x == y:
				return 0
			}
			return 1
		}
	}
	var pick func(c int) bool
	switch op {
	case expr.OpEq:
		pick = func(c int) bool { return c == 0 }
	case expr.OpNe:
		pick = func(c int) bool { return c != 0 }
	case expr.OpLt:
		pick = func(c int) bool { return c == -1 }
	case expr.OpLe:
		pick = func(c int) bool { return c == -1 || c == 0 }
	case expr.OpGt:
		pick = func(c int) bool { return c == 1 }
	case expr.OpGe:
		pick = func(c int) bool { return c == 1 || c == 0 }
	}
	if o.lane != laneI {
		return nil, fmt.Errorf("%v gives bool, not %v", op, o.dt)
	}
	if a.lane == laneF {
		// The float comparisons directly: the common case, kept fast.
		return floatCompare(op, o, a, b), nil
	}
	return func(n int) {
		for i := range n {
			o.ivec[i] = b2i(pick(cmp(i)))
		}
	}, nil
}

// storeLane writes n values of o (its current block) into dst at off, in dst's dtype.
func storeLane(dst dtype.Slice, off int, o *operand, n int) {
	switch o.lane {
	case laneF:
		store(dst, off, o.vec[:n])
		return
	case laneC:
		if dst.DType() == dtype.Complex128 {
			copy(dst.Complex128s()[off:], o.cvec[:n])
			return
		}
		d := dst.Complex64s()[off : off+n]
		for i, c := range o.cvec[:n] {
			d[i] = complex64(c)
		}
		return
	}
	v := o.ivec[:n]
	switch dst.DType() {
	case dtype.Bool:
		d := dst.Bools()[off : off+n]
		for i, x := range v {
			d[i] = x != 0
		}
	case dtype.Int8:
		putInts(dst.Int8s()[off:off+n], v)
	case dtype.Int16:
		putInts(dst.Int16s()[off:off+n], v)
	case dtype.Int32:
		putInts(dst.Int32s()[off:off+n], v)
	case dtype.Int64:
		copy(dst.Int64s()[off:off+n], v)
	case dtype.Uint8:
		putInts(dst.Uint8s()[off:off+n], v)
	case dtype.Uint16:
		putInts(dst.Uint16s()[off:off+n], v)
	case dtype.Uint32:
		putInts(dst.Uint32s()[off:off+n], v)
	case dtype.Uint64:
		putInts(dst.Uint64s()[off:off+n], v)
	}
}

func putInts[T int8 | int16 | int32 | uint8 | uint16 | uint32 | uint64](dst []T, v []int64) {
	for i, x := range v {
		dst[i] = T(x)
	}
}

// intAcc reduces integer-lane values: Sum (wrapping), Min, Max, ArgMin, ArgMax. Its partials
// are int64 values (uint64 for unsigned dtypes) and, for the Arg reductions, float64 indexes.
type intAcc struct {
	red      expr.Red
	unsigned bool
	v        []int64
	idx      []float64
	set      []bool
}

func newIntAcc(rd expr.Red, dt dtype.DType, n int64) (*intAcc, error) {
	switch rd {
	case expr.Sum, expr.Min, expr.Max, expr.ArgMin, expr.ArgMax:
	default:
		return nil, fmt.Errorf("%v of %v values runs in float64 (internal: the planner casts first)", rd, dt)
	}
	a := &intAcc{red: rd, unsigned: dt.Kind() == dtype.KindUint, v: make([]int64, n), set: make([]bool, n)}
	if rd == expr.ArgMin || rd == expr.ArgMax {
		a.idx = make([]float64, n)
	}
	return a, nil
}

func (a *intAcc) better(y, x int64) bool {
	if a.red == expr.Min || a.red == expr.ArgMin {
		x, y = y, x
	}
	if a.unsigned {
		return uint64(y) > uint64(x)
	}
	return y > x
}

func (a *intAcc) put(p int64, x int64, r int64) {
	switch {
	case a.red == expr.Sum:
		a.v[p] += x
	case !a.set[p] || a.better(x, a.v[p]):
		a.v[p], a.set[p] = x, true
		if a.idx != nil {
			a.idx[p] = float64(r)
		}
	}
}

func (a *intAcc) fold(p int64, v []int64, r0, rs int64) {
	for i, x := range v {
		a.put(p, x, r0+int64(i)*rs)
	}
}

func (a *intAcc) each(p int64, v []int64, r int64) {
	for i, x := range v {
		a.put(p+int64(i), x, r)
	}
}

func (a *intAcc) result() (dtype.Slice, [][]float64) {
	d := dtype.OfInt64(a.v)
	if a.unsigned {
		d = dtype.Convert(d, dtype.Uint64) // same bits
	}
	if a.idx != nil {
		return d, [][]float64{a.idx}
	}
	return d, nil
}

// genUnaryLane compiles a table op across lanes: integer to integer (bool results too),
// float or complex to bool, complex to complex or to its real type.
func genUnaryLane(op expr.Op, o, a *operand) func(int) {
	switch {
	case a.lane == laneI && o.lane == laneI:
		f := genInt1(op)
		if f == nil {
			return nil
		}
		u, bits := a.dt.Kind() == dtype.KindUint, laneBits(a.dt)
		return func(n int) {
			for i, x := range a.ivec[:n] {
				o.ivec[i] = f(x, u, bits)
			}
		}
	case a.lane == laneF && o.lane == laneI:
		f := genFloatTest(op)
		if f == nil {
			return nil
		}
		return func(n int) {
			for i, x := range a.vec[:n] {
				o.ivec[i] = b2i(f(x))
			}
		}
	case a.lane == laneC && o.lane == laneC:
		f := genComplex1(op)
		if f == nil {
			return nil
		}
		return func(n int) {
			for i, x := range a.cvec[:n] {
				o.cvec[i] = f(x)
			}
		}
	case a.lane == laneC && o.lane == laneF:
		f := genComplexReal(op)
		if f == nil {
			return nil
		}
		return func(n int) {
			for i, x := range a.cvec[:n] {
				o.vec[i] = f(x)
			}
		}
	case a.lane == laneC && o.lane == laneI:
		f := genComplexTest(op)
		if f == nil {
			return nil
		}
		return func(n int) {
			for i, x := range a.cvec[:n] {
				o.ivec[i] = b2i(f(x))
			}
		}
	}
	return nil
}

// laneBits is the width the table's integer expressions see: 1 for bool.
func laneBits(dt dtype.DType) int {
	if dt == dtype.Bool {
		return 1
	}
	return 8 * dt.Size()
}

// floatCompare is a comparison of float64 lanes, one loop per op (no call per element).
func floatCompare(op expr.Op, o, a, b *operand) func(int) {
	g := floatCompareGo(op, o, a, b)
	v, swap := cmpAsm(op)
	if v == nil || !useAVX {
		return g
	}
	x, y := a, b
	if swap {
		x, y = b, a
	}
	return func(n int) {
		m := n &^ 3
		v(o.ivec[:m], x.vec[:m], y.vec[:m])
		for i := m; i < n; i++ {
			o.ivec[i] = b2i(compareFloat(op, a.vec[i], b.vec[i]))
		}
	}
}

// compareFloat is a float comparison of one pair.
func compareFloat(op expr.Op, x, y float64) bool {
	switch op {
	case expr.OpEq:
		return x == y
	case expr.OpNe:
		return x != y
	case expr.OpLt:
		return x < y
	case expr.OpLe:
		return x <= y
	case expr.OpGt:
		return x > y
	}
	return x >= y
}

// floatCompareGo is floatCompare's Go loops.
func floatCompareGo(op expr.Op, o, a, b *operand) func(int) {
	loop := func(f func(x, y []float64, d []int64)) func(int) {
		return func(n int) { f(a.vec[:n], b.vec[:n], o.ivec[:n]) }
	}
	switch op {
	case expr.OpEq:
		return loop(func(x, y []float64, d []int64) {
			for i := range d {
				d[i] = b2i(x[i] == y[i])
			}
		})
	case expr.OpNe:
		return loop(func(x, y []float64, d []int64) {
			for i := range d {
				d[i] = b2i(x[i] != y[i])
			}
		})
	case expr.OpLt:
		return loop(func(x, y []float64, d []int64) {
			for i := range d {
				d[i] = b2i(x[i] < y[i])
			}
		})
	case expr.OpLe:
		return loop(func(x, y []float64, d []int64) {
			for i := range d {
				d[i] = b2i(x[i] <= y[i])
			}
		})
	case expr.OpGt:
		return loop(func(x, y []float64, d []int64) {
			for i := range d {
				d[i] = b2i(x[i] > y[i])
			}
		})
	}
	return loop(func(x, y []float64, d []int64) {
		for i := range d {
			d[i] = b2i(x[i] >= y[i])
		}
	})
}

// complexAcc sums complex128-lane values (Sum and Mean); its partials are complex128.
type complexAcc struct{ s []complex128 }

func newComplexAcc(rd expr.Red, dt dtype.DType, n int64) (*complexAcc, error) {
	if rd != expr.Sum && rd != expr.Mean {
		return nil, fmt.Errorf("%v of %v values is not supported yet", rd, dt)
	}
	return &complexAcc{s: make([]complex128, n)}, nil
}

func (a *complexAcc) fold(p int64, v []complex128) {
	var s complex128
	for _, x := range v {
		s += x
	}
	a.s[p] += s
}

func (a *complexAcc) each(p int64, v []complex128) {
	for i, x := range v {
		a.s[p+int64(i)] += x
	}
}

// boolLogic is a logical op of two bool operands (their lanes hold 0 or 1) without a call
// per value.
func boolLogic(op expr.Op, o, a, b *operand) func(int) {
	return func(n int) {
		x, y, d := a.ivec[:n], b.ivec[:n], o.ivec[:n]
		switch op {
		case expr.OpLogicalAnd:
			for i := range d {
				d[i] = x[i] & y[i]
			}
		case expr.OpLogicalOr:
			for i := range d {
				d[i] = x[i] | y[i]
			}
		default:
			for i := range d {
				d[i] = x[i] ^ y[i]
			}
		}
	}
}
