package ptx

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// lane is how the fused kernel holds a node's value, as the CPU executor's lanes do: laneF one
// f64 register (float64, float32 rounded after each op, and bools as 0 or 1), laneI one b64
// register (the integers, wrapped to their dtype's width after each op, unsigned ones
// zero-extended), laneC two f64 registers (complex128, complex64 rounded after each op).
type lane uint8

const (
	LaneF lane = iota
	LaneI
	LaneC
)

func LaneOf(dt dtype.DType) lane {
	switch {
	case dt.IsComplex():
		return LaneC
	case dt.IsInteger():
		return LaneI
	}
	return LaneF
}

// val is a node's value: r the f64 or b64 register, im the imaginary part's (laneC).
type val struct {
	l     lane
	r, im string
}

// Words returns how many 64-bit words one element of dt takes in the fused kernel's buffers:
// 2 for complex values, 1 for the others.
func Words(dt dtype.DType) int {
	if dt.IsComplex() {
		return 2
	}
	return 1
}

// EncodeWords returns s's values as the fused kernel reads and writes them: float64 words for
// floats and bools, the int64 value's bits for integers (unsigned ones as their bits), and
// (real, imaginary) float64 pairs for complex values.
func EncodeWords(s dtype.Slice) []float64 {
	dt := s.DType()
	if ownWords(dt) {
		// int64 and uint64 values are their words' bits, complex128 ones their two words:
		// one copy (a 1e8-element index went word by word through a conversion before).
		w := make([]float64, Words(dt)*s.Len())
		if len(w) > 0 {
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w)), s.Bytes())
		}
		return w
	}
	switch LaneOf(dt) {
	case LaneI:
		v := dtype.Convert(s, dtype.Int64).Int64s()
		w := make([]float64, len(v))
		for i, x := range v {
			w[i] = math.Float64frombits(uint64(x))
		}
		return w
	case LaneC:
		v := dtype.Convert(s, dtype.Complex128).Complex128s()
		w := make([]float64, 2*len(v))
		for i, c := range v {
			w[2*i], w[2*i+1] = real(c), imag(c)
		}
		return w
	}
	return s.ToFloat64()
}

// EncodeNarrow returns s's elements in their own size (dt.Size() bytes, for a dtype where
// Narrow holds), packed into words, the last word's unused bytes zero: how a GPU keeps an
// array of a Narrow dtype, ready for CopyToDevice. Bools are bytes 0 and 1.
func EncodeNarrow(s dtype.Slice) []float64 {
	b := s.Bytes()
	w := make([]float64, (len(b)+7)/8)
	if len(b) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w)), b)
	}
	return w
}

// DecodeNarrow is the inverse of EncodeNarrow: the n values of dtype dt that the words w hold.
func DecodeNarrow(w []float64, n int, dt dtype.DType) dtype.Slice {
	v := dtype.Make(dt, n)
	if n > 0 {
		copy(v.Bytes(), unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w)))
	}
	return v
}

// ownWords reports whether dt's values in memory are the kernel's words themselves (int64,
// uint64 and complex128; float64 too, which EncodeWords shares rather than copies).
func ownWords(dt dtype.DType) bool {
	return dt == dtype.Int64 || dt == dtype.Uint64 || dt == dtype.Complex128
}

// DecodeWords is the inverse of EncodeWords: the values of dtype dt that the words w hold.
func DecodeWords(w []float64, dt dtype.DType) dtype.Slice {
	if ownWords(dt) {
		v := dtype.Make(dt, len(w)/Words(dt))
		if len(w) > 0 {
			copy(v.Bytes(), unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w)))
		}
		return v
	}
	switch LaneOf(dt) {
	case LaneI:
		v := make([]int64, len(w))
		for i, x := range w {
			v[i] = int64(math.Float64bits(x))
		}
		return dtype.Convert(dtype.OfInt64(v), dt)
	case LaneC:
		v := make([]complex128, len(w)/2)
		for i := range v {
			v[i] = complex(w[2*i], w[2*i+1])
		}
		return dtype.Convert(dtype.OfComplex128(v), dt)
	}
	return dtype.FromFloat64(w, dt)
}

// intConst is v as a value of integer dtype dt (NumPy's cast, as the CPU executor's constants).
func intConst(v float64, dt dtype.DType) int64 {
	switch dt {
	case dtype.Int64:
		return dtype.FloatToInt64(v)
	case dtype.Uint64:
		return int64(dtype.FloatToUint64(v))
	case dtype.Uint32:
		return int64(dtype.FloatToUint32(v))
	}
	return wrapConst(int64(dtype.FloatToInt32(v)), dt)
}

func wrapConst(x int64, dt dtype.DType) int64 {
	switch dt {
	case dtype.Int8:
		return int64(int8(x))
	case dtype.Int16:
		return int64(int16(x))
	case dtype.Int32:
		return int64(int32(x))
	case dtype.Uint8:
		return int64(uint8(x))
	case dtype.Uint16:
		return int64(uint16(x))
	case dtype.Uint32:
		return int64(uint32(x))
	}
	return x
}

// signed is "u" for unsigned dtypes, "s" for the others (a PTX type's letter).
func signed(dt dtype.DType) string {
	if dt.Kind() == dtype.KindUint {
		return "u"
	}
	return "s"
}

// finish rounds or wraps v to dt after an operation: float32 and complex64 rounding, integer
// wrap-around.
func (g *gen) finish(dt dtype.DType, v val) val {
	switch v.l {
	case LaneF:
		if dt == dtype.Float32 {
			v.r = g.round32(v.r)
		}
	case LaneC:
		if dt == dtype.Complex64 {
			v.r, v.im = g.round32(v.r), g.round32(v.im)
		}
	case LaneI:
		v.r = g.wrap(dt, v.r)
	}
	return v
}

func (g *gen) round32(r string) string {
	f, o := g.f(), g.fd()
	g.ins("cvt.rn.f32.f64 %s, %s", f, r)
	g.ins("cvt.f64.f32 %s, %s", o, f)
	return o
}

// wrap brings the b64 value r to dt's width: sign extension for signed types, zero extension
// for unsigned ones.
func (g *gen) wrap(dt dtype.DType, r string) string {
	bits := 8 * dt.Size()
	if bits >= 64 {
		return r
	}
	o := g.rd()
	if dt.Kind() == dtype.KindUint {
		g.ins("and.b64 %s, %s, %d", o, r, uint64(1)<<bits-1)
		return o
	}
	g.ins("shl.b64 %s, %s, %d", o, r, 64-bits)
	g.ins("shr.s64 %s, %s, %d", o, o, 64-bits)
	return o
}

// truth returns a predicate that is true where v is nonzero (NaN included).
func (g *gen) truth(v val) string {
	p := g.p()
	switch v.l {
	case LaneI:
		g.ins("setp.ne.b64 %s, %s, 0", p, v.r)
	case LaneC:
		g.ins("setp.neu.f64 %s, %s, %s", p, v.r, f64imm(0))
		g.ins("setp.neu.or.f64 %s, %s, %s, %s", p, v.im, f64imm(0), p)
	default:
		g.ins("setp.neu.f64 %s, %s, %s", p, v.r, f64imm(0))
	}
	return p
}

// boolOf returns the bool value (0 or 1 in an f64 register) of predicate p.
func (g *gen) boolOf(p string) val {
	o := g.fd()
	g.ins("selp.f64 %s, %s, %s, %s", o, f64imm(1), f64imm(0), p)
	return val{l: LaneF, r: o}
}

// intToFloat converts the integer r of dtype from to float64, or with f32 to float32 in one
// rounding (as NumPy converts 64-bit integers to float32), held in an f64 register.
func (g *gen) intToFloat(r string, from dtype.DType, f32 bool) string {
	o := g.fd()
	if f32 {
		f := g.f()
		g.ins("cvt.rn.f32.%s64 %s, %s", signed(from), f, r)
		g.ins("cvt.f64.f32 %s, %s", o, f)
		return o
	}
	g.ins("cvt.rn.f64.%s64 %s, %s", signed(from), o, r)
	return o
}

// f2i64 is dtype.FloatToInt64 (x86-64's cvttsd2si): toward zero, NaN and values out of range
// give the minimum int64.
func (g *gen) f2i64(x string) string {
	o, p := g.rd(), g.p()
	g.ins("cvt.rzi.s64.f64 %s, %s", o, x)
	g.ins("setp.gt.f64 %s, %s, %s", p, x, f64imm(-9.223372036854777856e18))
	g.ins("setp.lt.and.f64 %s, %s, %s, %s", p, x, f64imm(9.223372036854775808e18), p)
	g.ins("@!%s mov.b64 %s, 0x8000000000000000", p, o)
	return o
}

// f2i32 is dtype.FloatToInt32, sign-extended to 64 bits.
func (g *gen) f2i32(x string) string {
	w, o, p := g.r(), g.rd(), g.p()
	g.ins("cvt.rzi.s32.f64 %s, %s", w, x)
	g.ins("setp.gt.f64 %s, %s, %s", p, x, f64imm(-2147483649))
	g.ins("setp.lt.and.f64 %s, %s, %s, %s", p, x, f64imm(2147483648), p)
	g.ins("@!%s mov.b32 %s, 0x80000000", p, w)
	g.ins("cvt.s64.s32 %s, %s", o, w)
	return o
}

// floatToInt converts the float64 x to integer dtype to by NumPy's rules on x86-64 (those of
// dtype.Convert).
func (g *gen) floatToInt(x string, to dtype.DType) string {
	switch to {
	case dtype.Int64:
		return g.f2i64(x)
	case dtype.Uint64, dtype.Uint32:
		conv, half := g.f2i64, 9.223372036854775808e18
		top := "0x8000000000000000"
		if to == dtype.Uint32 {
			conv, half, top = g.f2i32, 2147483648, "0x80000000"
		}
		lo := conv(x)
		t := g.fd()
		g.ins("sub.rn.f64 %s, %s, %s", t, x, f64imm(half))
		hi := conv(t)
		g.ins("xor.b64 %s, %s, %s", hi, hi, top)
		o, p := g.rd(), g.p()
		g.ins("setp.ge.f64 %s, %s, %s", p, x, f64imm(half))
		g.ins("selp.b64 %s, %s, %s, %s", o, hi, lo, p)
		return g.wrap(to, o)
	}
	return g.wrap(to, g.f2i32(x))
}

// cast converts a of dtype from to dtype to, by NumPy's astype rules (the CPU executor's).
func (g *gen) cast(a val, from, to dtype.DType) (val, error) {
	if to == dtype.Bool {
		return g.boolOf(g.truth(a)), nil
	}
	switch LaneOf(to) {
	case LaneF:
		o := a.r // a complex value's real part
		if a.l == LaneI {
			o = g.intToFloat(a.r, from, to == dtype.Float32)
		}
		return g.finish(to, val{l: LaneF, r: o}), nil
	case LaneI:
		if a.l == LaneI {
			return val{l: LaneI, r: g.wrap(to, a.r)}, nil
		}
		if from == dtype.Bool {
			// 0 or 1 in every integer type, with no float conversion: a bool sum (a cast to
			// int64) spent about half its time in the two 64-bit conversions of a byte widened
			// to a float64 and back (Hopper runs those at 16 per clock per SM).
			o := g.rd()
			if w, ok := g.boolBits[a.r]; ok { // the byte a narrow bool was loaded from
				g.ins("cvt.u64.u16 %s, %s", o, w)
			} else {
				g.ins("selp.b64 %s, 1, 0, %s", o, g.truth(a))
			}
			return val{l: LaneI, r: o}, nil
		}
		return val{l: LaneI, r: g.floatToInt(a.r, to)}, nil
	}
	re, im := a.r, a.im
	switch a.l {
	case LaneI:
		re = g.intToFloat(a.r, from, to == dtype.Complex64)
		fallthrough
	case LaneF:
		im = g.fd()
		g.ins("mov.f64 %s, %s", im, f64imm(0))
	}
	return g.finish(to, val{l: LaneC, r: re, im: im}), nil
}

// constant emits a constant node.
func (g *gen) constant(nd *Node) val {
	switch LaneOf(nd.DType) {
	case LaneI:
		o := g.rd()
		g.ins("mov.b64 %s, 0x%016X", o, uint64(intConst(nd.Value, nd.DType)))
		return val{l: LaneI, r: o}
	case LaneC:
		re, im := g.fd(), g.fd()
		g.ins("mov.f64 %s, %s", re, f64imm(nd.Value))
		g.ins("mov.f64 %s, %s", im, f64imm(0))
		return g.finish(nd.DType, val{l: LaneC, r: re, im: im})
	}
	o := g.fd()
	g.ins("mov.f64 %s, %s", o, f64imm(nd.Value))
	return g.finish(nd.DType, val{l: LaneF, r: o})
}

// input loads an input leaf's element at index idx (buffers in EncodeWords' format, or
// elements of their own size for a Narrow leaf, widened exactly).
func (g *gen) input(nd *Node, idx string) val {
	ad := g.rd()
	l := LaneOf(nd.DType)
	if nd.Narrow {
		g.ins("mul.lo.u64 %s, %s, %d", ad, idx, nd.DType.Size())
		g.ins("add.u64 %s, %s, %s", ad, ad, g.leafPtrs[nd.Leaf])
		return g.loadNarrow(nd.DType, ad, "")
	}
	shift := 3
	if l == LaneC {
		shift = 4
	}
	g.ins("shl.b64 %s, %s, %d", ad, idx, shift)
	g.ins("add.u64 %s, %s, %s", ad, ad, g.leafPtrs[nd.Leaf])
	switch l {
	case LaneI:
		o := g.rd()
		g.ins("ld.global.nc.u64 %s, [%s]", o, ad)
		return val{l: LaneI, r: o}
	case LaneC:
		re, im := g.fd(), g.fd()
		g.ins("ld.global.nc.f64 %s, [%s]", re, ad)
		g.ins("ld.global.nc.f64 %s, [%s+8]", im, ad)
		return val{l: LaneC, r: re, im: im}
	}
	o := g.fd()
	g.ins("ld.global.nc.f64 %s, [%s]", o, ad)
	return g.finish(nd.DType, val{l: LaneF, r: o})
}

// loadNarrow loads the element of Narrow dtype dt at address ad (under predicate pred when
// not "": zero where it is false) and widens it to its lane as EncodeWords holds it: a
// float32 to float64 exactly, a bool (byte 0 or 1) to 0 or 1, an integer sign- or
// zero-extended to 64 bits as its dtype says.
func (g *gen) loadNarrow(dt dtype.DType, ad, pred string) val {
	guard := ""
	if pred != "" {
		guard = "@" + pred + " "
	}
	if dt == dtype.Float32 {
		f, o := g.f(), g.fd()
		if pred != "" {
			g.ins("mov.f32 %s, 0f00000000", f)
		}
		g.ins("%sld.global.nc.f32 %s, [%s]", guard, f, ad)
		g.ins("cvt.f64.f32 %s, %s", o, f)
		return val{l: LaneF, r: o} // a float32 already: finish would not change it
	}
	// Integers and bools: into a 16-bit register (1 and 2 bytes) or a 32-bit one (4 bytes),
	// then a conversion from the element's own type.
	bits := 8 * dt.Size()
	var w string
	if bits == 32 {
		w = g.r()
	} else {
		w = g.rs()
	}
	if pred != "" {
		g.ins("mov.b%d %s, 0", max(bits, 16), w)
	}
	g.ins("%sld.global.nc.u%d %s, [%s]", guard, bits, w, ad)
	if dt == dtype.Bool {
		o := g.fd()
		g.ins("cvt.rn.f64.u16 %s, %s", o, w)
		if g.boolBits == nil {
			g.boolBits = map[string]string{}
		}
		g.boolBits[o] = w // a cast to an integer reads the byte (cast), leaving this unused
		return val{l: LaneF, r: o}
	}
	o := g.rd()
	g.ins("cvt.%s64.%s%d %s, %s", signed(dt), signed(dt), bits, o, w)
	return val{l: LaneI, r: o}
}

// store writes v as element e of the output (at word (outOff+e)*Words; under narrowOut at
// element outOff+e of its own size).
func (g *gen) store(v val, e, out, outOff string) {
	ad := g.rd()
	if g.narrowOut {
		dt := g.outDT
		g.ins("add.u64 %s, %s, %s", ad, outOff, e)
		g.ins("mul.lo.u64 %s, %s, %d", ad, ad, dt.Size())
		g.ins("add.u64 %s, %s, %s", ad, ad, out)
		switch {
		case dt == dtype.Float32:
			f := g.f()
			g.ins("cvt.rn.f32.f64 %s, %s", f, v.r) // exact: v is a float32 already
			g.ins("st.global.f32 [%s], %s", ad, f)
		case dt == dtype.Bool:
			w := g.rs()
			g.ins("cvt.rzi.u16.f64 %s, %s", w, v.r) // 0 or 1
			g.ins("st.global.u8 [%s], %s", ad, w)
		case dt.Size() == 4:
			w := g.r()
			g.ins("cvt.u32.u64 %s, %s", w, v.r) // the low bytes: the value, wrapped to dt
			g.ins("st.global.u32 [%s], %s", ad, w)
		default:
			w := g.rs()
			g.ins("cvt.u16.u64 %s, %s", w, v.r)
			g.ins("st.global.u%d [%s], %s", 8*dt.Size(), ad, w)
		}
		return
	}
	shift := 3
	if v.l == LaneC {
		shift = 4
	}
	g.ins("add.u64 %s, %s, %s", ad, outOff, e)
	g.ins("shl.b64 %s, %s, %d", ad, ad, shift)
	g.ins("add.u64 %s, %s, %s", ad, ad, out)
	switch v.l {
	case LaneI:
		g.ins("st.global.u64 [%s], %s", ad, v.r)
	case LaneC:
		g.ins("st.global.f64 [%s], %s", ad, v.r)
		g.ins("st.global.f64 [%s+8], %s", ad, v.im)
	default:
		g.ins("st.global.f64 [%s], %s", ad, v.r)
	}
}

// reduceValue returns the f64 register a float reduction accumulates (float values, and
// bools as 0 or 1). Integer and complex values accumulate in their own lanes (accum).
func (g *gen) reduceValue(s *Spec, v val) (string, error) {
	if v.l == LaneF {
		return v.r, nil
	}
	last := &s.Nodes[len(s.Nodes)-1]
	return "", fmt.Errorf("cuda: %v reductions of %v values accumulate in their own lane (internal)", s.Reduce, last.DType)
}

// node emits the computation of node i and returns its value.
func (g *gen) node(s *Spec, i int, vals []val, idx []string) (val, error) {
	nd := &s.Nodes[i]
	a := func(k int) val { return vals[nd.Args[k]] }
	adt := func(k int) dtype.DType { return s.Nodes[nd.Args[k]].DType }
	switch nd.Kind {
	case NConst:
		return g.constant(nd), nil
	case NInput:
		return g.input(nd, idx[nd.Leaf]), nil
	case NRandom, NRange:
		o := g.fd()
		if nd.Kind == NRandom {
			if err := g.random(nd, idx[nd.Leaf], o); err != nil {
				return val{}, err
			}
		} else {
			g.rangeValue(nd, idx[nd.Leaf], o)
		}
		// As the CPU: float64 values, then cast to the node's dtype.
		return g.cast(val{l: LaneF, r: o}, dtype.Float64, nd.DType)
	case NCast:
		return g.cast(a(0), adt(0), nd.DType)
	case NSearch:
		switch adt(0) {
		case dtype.Float64, dtype.Int64, dtype.Uint64:
		default:
			return val{}, fmt.Errorf("kernel spec: a search for %v values (the planner casts them to float64, int64 or uint64)", adt(0))
		}
		return g.search(nd, a(0), adt(0), idx[nd.Leaf]), nil
	case NWhere:
		p := g.truth(a(0))
		x, y := a(1), a(2)
		if x.l != y.l || x.l != LaneOf(nd.DType) {
			return val{}, fmt.Errorf("kernel spec: where of %v between lanes %d and %d", nd.DType, x.l, y.l)
		}
		o := val{l: x.l}
		switch x.l {
		case LaneI:
			o.r = g.rd()
			g.ins("selp.b64 %s, %s, %s, %s", o.r, x.r, y.r, p)
		case LaneC:
			o.r, o.im = g.fd(), g.fd()
			g.ins("selp.f64 %s, %s, %s, %s", o.r, x.r, y.r, p)
			g.ins("selp.f64 %s, %s, %s, %s", o.im, x.im, y.im, p)
		default:
			o.r = g.fd()
			g.ins("selp.f64 %s, %s, %s, %s", o.r, x.r, y.r, p)
		}
		return o, nil
	case NUnary:
		v, err := g.unary(nd, a(0), adt(0))
		if err != nil {
			return val{}, err
		}
		return g.finish(nd.DType, v), nil
	case NBinary:
		x, y := a(0), a(1)
		if x.l != y.l {
			return val{}, fmt.Errorf("kernel spec: %v between lanes %d and %d", nd.Op, x.l, y.l)
		}
		v, err := g.binary(nd, x, y, adt(0))
		if err != nil {
			return val{}, err
		}
		return g.finish(nd.DType, v), nil
	}
	return val{}, fmt.Errorf("kernel spec: unknown node kind %d", nd.Kind)
}

// search emits the binary search of an NSearch node: where v (of dtype vdt: float64, int64
// or uint64, see plan.SearchDType) goes among the n sorted values of its leaf's buffer (n: the
// leaf's index, its map offset), as the CPU's Search: the first position whose value is >= v
// (> v with Right). In float64 a NaN value counts as above every number, so NaNs sort last; a
// NaN v goes before the first NaN, or with Right after all n. The sorted words are converted to
// vdt as the CPU converts the sorted array (integers to float64 rounded to nearest, bools to
// 0 and 1).
func (g *gen) search(nd *Node, v val, vdt dtype.DType, n string) val {
	lo, hi, mid, ad := g.rd(), g.rd(), g.rd(), g.rd()
	p, pc := g.p(), g.p()
	loop, done := g.label("search"), g.label("found")
	g.ins("mov.u64 %s, 0", lo)
	g.ins("mov.u64 %s, %s", hi, n)
	g.put(loop)
	g.ins("setp.ge.u64 %s, %s, %s", p, lo, hi)
	g.ins("@%s bra %s", p, done)
	g.ins("add.u64 %s, %s, %s", mid, lo, hi)
	g.ins("shr.u64 %s, %s, 1", mid, mid)
	if nd.Narrow { // an array held in its own element size
		g.ins("mul.lo.u64 %s, %s, %d", ad, mid, nd.Sorted.Size())
	} else {
		g.ins("shl.b64 %s, %s, 3", ad, mid)
	}
	g.ins("add.u64 %s, %s, %s", ad, ad, g.leafPtrs[nd.Leaf])
	cmp := "ge"
	if nd.Right {
		cmp = "gt"
	}
	intWords := LaneOf(nd.Sorted) == LaneI
	var e val // the sorted element in its lane, as EncodeWords holds it
	switch {
	case nd.Narrow:
		e = g.loadNarrow(nd.Sorted, ad, "")
	case intWords:
		e = val{l: LaneI, r: g.rd()}
		g.ins("ld.global.nc.u64 %s, [%s]", e.r, ad)
	default:
		e = val{l: LaneF, r: g.fd()}
		g.ins("ld.global.nc.f64 %s, [%s]", e.r, ad)
	}
	if vdt == dtype.Float64 {
		s := e.r
		switch {
		case nd.Sorted == dtype.Uint64:
			s = g.fd()
			g.ins("cvt.rn.f64.u64 %s, %s", s, e.r)
		case intWords:
			s = g.fd()
			g.ins("cvt.rn.f64.s64 %s, %s", s, e.r)
		}
		g.ins("setp.nan.f64 %s, %s, %s", p, s, s)
		g.ins("setp.%s.f64 %s, %s, %s", cmp, pc, s, v.r)
		g.ins("or.pred %s, %s, %s", p, p, pc)
	} else {
		ty := "s64"
		if vdt == dtype.Uint64 {
			ty = "u64"
		}
		w := e.r       // int64 values, or uint64 bits: as they are
		if !intWords { // bools' float64 values
			w = g.rd()
			g.ins("cvt.rzi.%s.f64 %s, %s", ty, w, e.r)
		}
		g.ins("setp.%s.%s %s, %s, %s", cmp, ty, p, w, v.r)
	}
	g.ins("@%s mov.u64 %s, %s", p, hi, mid)
	g.ins("@!%s add.u64 %s, %s, 1", p, lo, mid)
	g.ins("bra %s", loop)
	g.put(done)
	if nd.Right && vdt == dtype.Float64 {
		g.ins("setp.nan.f64 %s, %s, %s", p, v.r, v.r)
		g.ins("@%s mov.u64 %s, %s", p, lo, n)
	}
	return val{l: LaneI, r: lo}
}

// rangeValue emits a range leaf's float64 value at source index idx into o.
func (g *gen) rangeValue(nd *Node, idx, o string) {
	// As the CPU: Step*float64(i) rounded, then + Start rounded (no FMA).
	fi, t := g.fd(), g.fd()
	g.ins("cvt.rn.f64.s64 %s, %s", fi, idx)
	g.ins("mul.rn.f64 %s, %s, %s", t, fi, f64imm(nd.Step))
	g.ins("add.rn.f64 %s, %s, %s", o, t, f64imm(nd.Value))
	if nd.Exact {
		p := g.p()
		g.ins("setp.eq.s64 %s, %s, %d", p, idx, nd.Last)
		g.ins("@%s mov.f64 %s, %s", p, o, f64imm(nd.Stop))
	}
}

// unary emits a one-operand op on x (of dtype xdt); the result is finished by the caller.
func (g *gen) unary(nd *Node, x val, xdt dtype.DType) (val, error) {
	if _, gen := nd.Op.Generated(); gen {
		return g.table(nd, xdt, x)
	}
	if x.l == LaneI && nd.Op == expr.OpAbs {
		// Not the table's: abs of unsigned values is a move, of signed ones abs.s64 ({u}
		// cannot pick between them).
		o := g.rd()
		if xdt.Kind() == dtype.KindUint {
			g.ins("mov.b64 %s, %s", o, x.r)
		} else {
			g.ins("abs.s64 %s, %s", o, x.r)
		}
		return val{l: LaneI, r: o}, nil
	}
	return g.core(nd, xdt, x)
}

// binary emits a two-operand op on x and y (of dtype xdt); the result is finished by the caller.
func (g *gen) binary(nd *Node, x, y val, xdt dtype.DType) (val, error) {
	if _, gen := nd.Op.Generated(); gen {
		return g.table(nd, xdt, x, y)
	}
	if nd.Op.Comparison() && x.l == LaneC {
		return g.compare(nd.Op, x, y)
	}
	return g.core(nd, xdt, x, y)
}

func unsignedFlag(dt dtype.DType) string {
	if dt.Kind() == dtype.KindUint {
		return "1"
	}
	return "0"
}

// compare emits a comparison (a bool result) of complex numbers (floats and integers: the
// table's corePTX and corePTXInt): they order lexicographically and are unordered where
// math/cmplx.IsNaN holds for either, as on the CPU; one predicate sequence serves the six.
func (g *gen) compare(op expr.Op, x, y val) (val, error) {
	p := g.p()
	lt, eq, t, num := g.p(), g.p(), g.p(), g.p()
	g.ins("setp.lt.f64 %s, %s, %s", lt, x.r, y.r)
	g.ins("setp.eq.f64 %s, %s, %s", t, x.r, y.r)
	g.ins("setp.lt.and.f64 %s, %s, %s, %s", t, x.im, y.im, t)
	g.ins("or.pred %s, %s, %s", lt, lt, t)
	g.ins("setp.eq.f64 %s, %s, %s", eq, x.r, y.r)
	g.ins("setp.eq.and.f64 %s, %s, %s, %s", eq, x.im, y.im, eq)
	// Unordered where either is NaN as math/cmplx.IsNaN says: a NaN part and no infinite one.
	for k, v := range []val{x, y} {
		n, inf := g.p(), g.p()
		a, b := g.fd(), g.fd()
		g.ins("setp.nan.f64 %s, %s, %s", n, v.r, v.im)
		g.ins("abs.f64 %s, %s", a, v.r)
		g.ins("abs.f64 %s, %s", b, v.im)
		g.ins("max.f64 %s, %s, %s", a, a, b) // max drops a NaN
		g.ins("setp.eq.f64 %s, %s, %s", inf, a, f64imm(math.Inf(1)))
		g.ins("not.pred %s, %s", inf, inf)
		g.ins("and.pred %s, %s, %s", n, n, inf)
		g.ins("not.pred %s, %s", n, n)
		if k == 0 {
			g.ins("mov.pred %s, %s", num, n)
		} else {
			g.ins("and.pred %s, %s, %s", num, num, n)
		}
	}
	switch op {
	case expr.OpEq:
		g.ins("mov.pred %s, %s", p, eq)
	case expr.OpNe:
		g.ins("not.pred %s, %s", p, eq)
	case expr.OpLt:
		g.ins("and.pred %s, %s, %s", p, lt, num)
	case expr.OpLe:
		g.ins("or.pred %s, %s, %s", p, lt, eq)
		g.ins("and.pred %s, %s, %s", p, p, num)
	case expr.OpGt:
		g.ins("or.pred %s, %s, %s", p, lt, eq)
		g.ins("not.pred %s, %s", p, p)
		g.ins("and.pred %s, %s, %s", p, p, num)
	case expr.OpGe:
		g.ins("not.pred %s, %s", p, lt)
		g.ins("and.pred %s, %s, %s", p, p, num)
	}
	return g.boolOf(p), nil
}

// table emits the body of an op of the generated table (genPTX, genPTXInt, genPTXComplex) for
// the lane of its operands; an error names the op when that lane has no GPU body.
func (g *gen) table(nd *Node, xdt dtype.DType, args ...val) (val, error) {
	op := nd.Op
	var body string
	var ok bool
	switch args[0].l {
	case LaneF:
		body, ok = genPTX[op]
		if op == expr.OpNextafter && nd.DType == dtype.Float32 {
			body = "call gpn_nextafterf {o}, {x}, {y}" // the next float32, as the CPU
		}
	case LaneI:
		body, ok = genPTXInt[op]
	case LaneC:
		body, ok = genPTXComplex[op]
	}
	if !ok {
		return val{}, fmt.Errorf("cuda: %v of %v values is not generated on the GPU yet", op, xdt)
	}
	return g.emitBody(nd, xdt, body, args...)
}

// core emits a first op (the table's Core) by its operands' lane: for floats its corePTXBool
// body where the result is bool and it has one (NumPy's bool arithmetic), else its corePTX
// body; for integers corePTXInt; for complex numbers corePTXComplex.
func (g *gen) core(nd *Node, xdt dtype.DType, args ...val) (val, error) {
	var body string
	var ok bool
	switch args[0].l {
	case LaneF:
		body, ok = corePTXBool[nd.Op]
		if !ok || nd.DType != dtype.Bool {
			body, ok = corePTX[nd.Op]
		}
	case LaneI:
		body, ok = corePTXInt[nd.Op]
	case LaneC:
		body, ok = corePTXComplex[nd.Op]
	}
	if !ok {
		return val{}, fmt.Errorf("cuda: %v of %v values is not generated on the GPU yet", nd.Op, xdt)
	}
	return g.emitBody(nd, xdt, body, args...)
}

// emitBody emits a table body (see gpuarray/optable's PTX fields) for nd on args, placeholders
// replaced by registers.
func (g *gen) emitBody(nd *Node, xdt dtype.DType, body string, args ...val) (val, error) {
	out := LaneOf(nd.DType)
	o := val{l: out}
	regs := map[string]string{"{u}": signed(xdt), "{U}": unsignedFlag(xdt), "{bits}": fmt.Sprint(8 * xdt.Size())}
	switch args[0].l {
	case LaneC:
		regs["{xr}"], regs["{xi}"] = args[0].r, args[0].im
		if len(args) > 1 {
			regs["{yr}"], regs["{yi}"] = args[1].r, args[1].im
		}
	default:
		regs["{x}"] = args[0].r
		if len(args) > 1 {
			regs["{y}"] = args[1].r
		}
	}
	switch out {
	case LaneC:
		o.r, o.im = g.fd(), g.fd()
		regs["{or}"], regs["{oi}"] = o.r, o.im
	case LaneI:
		o.r = g.rd()
		regs["{o}"] = o.r
	default:
		o.r = g.fd()
		regs["{o}"] = o.r
	}
	alloc := map[string]func() string{"{p}": g.p, "{p2}": g.p, "{t}": g.fd, "{s}": g.fd, "{r}": g.rd, "{q}": g.rd, "{w}": g.r}
	for _, line := range strings.Split(body, "\n") {
		for name, mk := range alloc {
			if _, done := regs[name]; !done && strings.Contains(line, name) {
				regs[name] = mk()
			}
		}
		for name, r := range regs {
			line = strings.ReplaceAll(line, name, r)
		}
		if fn, ok := strings.CutPrefix(line, "call "); ok {
			// call NAME RET, ARG, ...: a device library function.
			name, rest, _ := strings.Cut(fn, " ")
			ops := strings.Split(rest, ",")
			for k := range ops {
				ops[k] = strings.TrimSpace(ops[k])
			}
			if f := g.inlineFor(name); f != nil && g.splitArm && f.split != nil {
				if err := g.inlineHot(name, f, ops[0], ops[1:]...); err != nil {
					return val{}, err
				}
				continue
			}
			if f := g.inlineFor(name); f != nil {
				if err := g.inline(name, f, ops[0], ops[1:]...); err != nil {
					return val{}, err
				}
				continue
			}
			if err := g.call(name, ops[0], ops[1:]...); err != nil {
				return val{}, err
			}
			continue
		}
		g.ins("%s", line)
	}
	return o, nil
}

// TableOnGPU reports whether the fused GPU kernel computes op of the generated table on float
// (and bool) values.
func TableOnGPU(op expr.Op) bool {
	_, ok := genPTX[op]
	return ok
}
