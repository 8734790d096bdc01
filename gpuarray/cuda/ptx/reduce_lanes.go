package ptx

import (
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// Integer and complex reductions. Integers accumulate in 64-bit registers (sums wrap as
// NumPy's int64 and uint64 sums do; min, max and their arguments compare signed or unsigned),
// so any combine order gives the CPU's bits. Complex sums accumulate the real and imaginary
// parts as two float sums, combined in a fixed order like the float reductions.

// AccLane returns the lane a reduction of s accumulates in: laneI for integer values, laneC for
// complex ones, laneF for floats and bools (and for elementwise kernels).
func (s *Spec) AccLane() lane {
	if s.Reduce == RNone {
		return LaneF
	}
	return LaneOf(s.Nodes[len(s.Nodes)-1].DType)
}

// UnsignedAcc reports whether s reduces unsigned integers (compared as such).
func (s *Spec) UnsignedAcc() bool {
	return s.Nodes[len(s.Nodes)-1].DType.Kind() == dtype.KindUint
}

// PartialWords returns how many 64-bit words one partial of s takes.
func (s *Spec) PartialWords() int {
	if s.AccLane() == LaneC {
		return 2
	}
	return s.Reduce.words()
}

// accum is a thread's accumulator of an integer (laneI: v a b64 register) or complex (laneC: v
// and im f64 registers) reduction; i is the index register of ArgMin and ArgMax (-1: none).
type accum struct {
	r        Reduce
	l        lane
	unsigned bool
	v, im, i string
}

// newAccum declares and initializes a thread's accumulator for an integer or complex
// reduction of s; it fails for reductions NumPy's dtype rules send through float64 first.
func (g *gen) newAccum(s *Spec) (accum, error) {
	a := accum{r: s.Reduce, l: s.AccLane(), unsigned: s.UnsignedAcc()}
	switch {
	case a.l == LaneC && a.r == RSum:
		a.v, a.im = g.fd(), g.fd()
		g.ins("mov.f64 %s, %s", a.v, f64imm(0))
		g.ins("mov.f64 %s, %s", a.im, f64imm(0))
	case a.l == LaneI && a.r != RWelford:
		a.v = g.rd()
		init := int64(0)
		switch {
		case a.r == RMin && a.unsigned:
			init = -1 // all ones: the largest uint64
		case a.r == RMin:
			init = math.MaxInt64
		case a.r == RMax && !a.unsigned:
			init = math.MinInt64
		}
		g.ins("mov.b64 %s, 0x%016X", a.v, uint64(init))
		if a.r == RArgMin || a.r == RArgMax {
			a.i = g.rd()
			g.ins("mov.s64 %s, -1", a.i)
		}
	default:
		last := s.Nodes[len(s.Nodes)-1].DType
		return accum{}, fmt.Errorf("cuda: %v reductions of %v values are not generated on the GPU (internal: the planner casts them to float64)", s.Reduce, last)
	}
	return a, nil
}

// cmp returns the comparison suffix that orders a's values ("s64" or "u64").
func (a accum) cmp() string {
	if a.unsigned {
		return "u64"
	}
	return "s64"
}

// add folds value x of element e into a.
func (g *gen) accAdd(a accum, x val, e string) error {
	if x.l != a.l {
		return fmt.Errorf("kernel spec: %v of a lane %d value into a lane %d accumulator (internal)", a.r, x.l, a.l)
	}
	switch {
	case a.l == LaneC:
		g.ins("add.rn.f64 %s, %s, %s", a.v, a.v, x.r)
		g.ins("add.rn.f64 %s, %s, %s", a.im, a.im, x.im)
	case a.r == RSum:
		g.ins("add.s64 %s, %s, %s", a.v, a.v, x.r)
	case a.r == RMin:
		g.ins("min.%s %s, %s, %s", a.cmp(), a.v, a.v, x.r)
	case a.r == RMax:
		g.ins("max.%s %s, %s, %s", a.cmp(), a.v, a.v, x.r)
	default: // ArgMin, ArgMax: the first extreme element, in whatever order elements come
		// (a kernel that defers slow normal draws visits some later)
		op := "lt"
		if a.r == RArgMax {
			op = "gt"
		}
		none, take, eq, ilt := g.p(), g.p(), g.p(), g.p()
		g.ins("setp.lt.s64 %s, %s, 0", none, a.i)
		g.ins("setp.%s.%s %s, %s, %s", op, a.cmp(), take, x.r, a.v)
		g.ins("setp.eq.s64 %s, %s, %s", eq, x.r, a.v)
		g.ins("setp.lt.s64 %s, %s, %s", ilt, e, a.i)
		g.ins("and.pred %s, %s, %s", eq, eq, ilt)
		g.ins("or.pred %s, %s, %s", take, take, eq)
		g.ins("or.pred %s, %s, %s", take, take, none)
		g.ins("@%s mov.b64 %s, %s", take, a.v, x.r)
		g.ins("@%s mov.u64 %s, %s", take, a.i, e)
	}
	return nil
}

// accMerge merges b, which covers later elements, into a where predicate in holds ("":
// everywhere). Complex sums add a + b, so the order of merges fixes the bits; integer
// results do not depend on it (ties of ArgMin and ArgMax go to the smaller index).
func (g *gen) accMerge(a, b accum, in string) {
	guard := ""
	if in != "" {
		guard = "@" + in + " "
	}
	switch {
	case a.l == LaneC:
		g.ins("%sadd.rn.f64 %s, %s, %s", guard, a.v, a.v, b.v)
		g.ins("%sadd.rn.f64 %s, %s, %s", guard, a.im, a.im, b.im)
	case a.r == RSum:
		g.ins("%sadd.s64 %s, %s, %s", guard, a.v, a.v, b.v)
	case a.r == RMin:
		g.ins("%smin.%s %s, %s, %s", guard, a.cmp(), a.v, a.v, b.v)
	case a.r == RMax:
		g.ins("%smax.%s %s, %s, %s", guard, a.cmp(), a.v, a.v, b.v)
	default:
		op := "lt"
		if a.r == RArgMax {
			op = "gt"
		}
		has2, none1, strict, eq, ilt, take := g.p(), g.p(), g.p(), g.p(), g.p(), g.p()
		g.ins("setp.ge.s64 %s, %s, 0", has2, b.i)
		g.ins("setp.lt.s64 %s, %s, 0", none1, a.i)
		g.ins("setp.%s.%s %s, %s, %s", op, a.cmp(), strict, b.v, a.v)
		g.ins("setp.eq.s64 %s, %s, %s", eq, b.v, a.v)
		g.ins("setp.lt.s64 %s, %s, %s", ilt, b.i, a.i)
		g.ins("and.pred %s, %s, %s", eq, eq, ilt)
		g.ins("or.pred %s, %s, %s", take, strict, eq)
		g.ins("or.pred %s, %s, %s", take, take, none1)
		g.ins("and.pred %s, %s, %s", take, take, has2)
		if in != "" {
			g.ins("and.pred %s, %s, %s", take, take, in)
		}
		g.ins("@%s mov.b64 %s, %s", take, a.v, b.v)
		g.ins("@%s mov.b64 %s, %s", take, a.i, b.i)
	}
}

// accShfl returns the accumulator of the lane o above (shfl.sync.down).
func (g *gen) accShfl(a accum, o int) accum {
	b := a
	b.v = g.shfl64(a.v, o, a.l == LaneC)
	if a.l == LaneC {
		b.im = g.shfl64(a.im, o, true)
	}
	if a.i != "" {
		b.i = g.shfl64(a.i, o, false)
	}
	return b
}

// accStore stores a at address ad of state space sp ("global", "shared"): partialWords words.
func (g *gen) accStore(a accum, sp, ad string) {
	if a.l == LaneC {
		g.ins("st.%s.f64 [%s], %s", sp, ad, a.v)
		g.ins("st.%s.f64 [%s+8], %s", sp, ad, a.im)
		return
	}
	g.ins("st.%s.u64 [%s], %s", sp, ad, a.v)
	if a.i != "" {
		g.ins("st.%s.u64 [%s+8], %s", sp, ad, a.i)
	}
}

// accLoad loads an accumulator like a from address ad of state space sp.
func (g *gen) accLoad(a accum, sp, ad string) accum {
	b := a
	if a.l == LaneC {
		b.v, b.im = g.fd(), g.fd()
		g.ins("ld.%s.f64 %s, [%s]", sp, b.v, ad)
		g.ins("ld.%s.f64 %s, [%s+8]", sp, b.im, ad)
		return b
	}
	b.v = g.rd()
	g.ins("ld.%s.u64 %s, [%s]", sp, b.v, ad)
	if a.i != "" {
		b.i = g.rd()
		g.ins("ld.%s.u64 %s, [%s+8]", sp, b.i, ad)
	}
	return b
}

// laneBlockReduce combines the block's accumulators in a fixed order (a shuffle tree in each warp,
// then warps 0..7 in order by thread 0) and stores the block's partial at global address ad.
// Every thread of the block must reach it.
func (g *gen) laneBlockReduce(a accum, tid, ad string, pw int) {
	lane, warp := g.rd(), g.rd()
	g.ins("and.b64 %s, %s, 31", lane, tid)
	g.ins("shr.u64 %s, %s, 5", warp, tid)
	for o := 16; o > 0; o >>= 1 {
		in := g.p()
		g.ins("setp.lt.u64 %s, %s, %d", in, lane, 32-o)
		g.accMerge(a, g.accShfl(a, o), in)
	}
	g.shared += fmt.Sprintf("\t.shared .align 8 .b8 gpn_lane_part[%d];\n", BlockSize/32*pw*8)
	base, sa := g.rd(), g.rd()
	g.ins("mov.u64 %s, gpn_lane_part", base)
	g.ins("mad.lo.u64 %s, %s, %d, %s", sa, warp, pw*8, base)
	p0, done := g.p(), g.label("blockdone")
	g.ins("setp.ne.u64 %s, %s, 0", p0, lane)
	skip := g.label("lane0")
	g.ins("@%s bra %s", p0, skip)
	g.accStore(a, "shared", sa)
	g.put(skip)
	g.ins("bar.sync 0")
	pt := g.p()
	g.ins("setp.ne.u64 %s, %s, 0", pt, tid)
	g.ins("@%s bra %s", pt, done)
	for w := 1; w < BlockSize/32; w++ {
		wa := g.rd()
		g.ins("add.u64 %s, %s, %d", wa, base, w*pw*8)
		g.accMerge(a, g.accLoad(a, "shared", wa), "")
	}
	g.accStore(a, "global", ad)
	g.put(done)
}
