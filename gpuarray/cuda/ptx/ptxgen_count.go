package ptx

import (
	"fmt"
)

// Counting kernels (Spec.Reduce RCount): a bincount fused with the elementwise work that
// computes its values (a histogram's bin numbers), in one pass. Each element's value is
// counted into the block's counters in shared memory (a copy per warp where they fit, so
// that the warps of a block do not contend for the same words), and at the end each block
// adds its counters to its task's int64 counts in device memory. Counts are integers: the
// order of the additions changes no bit, so the counts equal the CPU's for any chunking,
// timing or number of GPUs. No value is stored.
//
// A task's output is Bins+2 words from its descriptor's output offset (in words): the counts,
// then a flag and a value that is not an integer in [0, Bins) (one of them, if any).

// CountCopies returns how many copies of the counters a block keeps in shared memory: one per
// warp while they fit in MaxSharedBins words, else one; 0 for more bins than that, which
// are counted with atomics on the task's counts in device memory.
func CountCopies(bins int) int {
	switch {
	case bins*(BlockSize/32) <= MaxSharedBins:
		return BlockSize / 32
	case bins <= MaxSharedBins:
		return 1
	}
	return 0
}

// validCount checks the fields of a counting spec.
func (s *Spec) validCount() error {
	if s.Reduce != RCount {
		if s.Bins != 0 {
			return fmt.Errorf("kernel spec: %d bins for reduction %v", s.Bins, s.Reduce)
		}
		return nil
	}
	if s.Bins < 1 || s.Bins >= 1<<31 || s.Kept > 0 || s.Tile || s.Mirror != nil {
		return fmt.Errorf("kernel spec: a count of %d bins with %d kept axes, tiles %v, mirror %v", s.Bins, s.Kept, s.Tile, s.Mirror)
	}
	if l := LaneOf(s.Nodes[len(s.Nodes)-1].DType); l != LaneF {
		return fmt.Errorf("kernel spec: a count of %v values (float words only)", s.Nodes[len(s.Nodes)-1].DType)
	}
	return nil
}

// counter holds a counting kernel's registers: the task's counts in device memory, and the
// address of this warp's copy of the block's counters in shared memory (copies > 0).
type counter struct {
	bins, copies int
	counts       string // b64: global address of the task's counts
	base         string // b32: shared address of the block's counters
	mine         string // b32: shared address of this thread's copy
}

// countInit declares the block's counters, zeroes them, and waits for the block (every
// thread of a block runs it: the exit before the loop is taken by a whole block).
func (g *gen) countInit(s *Spec, tid32, out, outOff string) *counter {
	c := &counter{bins: s.Bins, copies: CountCopies(s.Bins), counts: g.rd()}
	t := g.rd()
	g.ins("shl.b64 %s, %s, 3", t, outOff)
	g.ins("add.u64 %s, %s, %s", c.counts, out, t)
	if c.copies == 0 {
		return c
	}
	total := c.copies * c.bins
	g.shared += fmt.Sprintf("\t.shared .align 4 .b32 gpn_count[%d];\n", total)
	c.base = g.r()
	g.ins("mov.u32 %s, gpn_count", c.base)
	i, a, p := g.r(), g.r(), g.p()
	loop, done := g.label("czero"), g.label("czeroed")
	g.ins("mov.u32 %s, %s", i, tid32)
	g.put(loop)
	g.ins("setp.ge.u32 %s, %s, %d", p, i, total)
	g.ins("@%s bra %s", p, done)
	g.ins("mad.lo.u32 %s, %s, 4, %s", a, i, c.base)
	g.ins("st.shared.u32 [%s], 0", a)
	g.ins("add.u32 %s, %s, %d", i, i, BlockSize)
	g.ins("bra %s", loop)
	g.put(done)
	g.ins("bar.sync 0")
	c.mine = g.r()
	if c.copies > 1 {
		w := g.r()
		g.ins("shr.u32 %s, %s, 5", w, tid32)
		g.ins("mad.lo.u32 %s, %s, %d, %s", c.mine, w, 4*c.bins, c.base)
	} else {
		g.ins("mov.u32 %s, %s", c.mine, c.base)
	}
	return c
}

// countAdd counts the value v (an f64 register): one more in its counter, or for a value
// that is not an integer in [0, bins) (NaN too), the flag and the value after the counts.
//
// The bin comes from t = v + 2^52: for an integer v in [0, 2^52) t is exact, its high word
// 0x43300000 and its low word v; a v that is not an integer rounds, so t - 2^52 != v; a v
// outside [0, 2^52) (NaN, infinities) gives another high word. Two fp64 additions where a
// conversion to an integer and back took the slower conversion unit twice.
func (g *gen) countAdd(c *counter, v string) {
	if opt.CountCvt {
		g.countAddConverted(c, v)
		return
	}
	t, u := g.fd(), g.fd()
	lo, hi := g.r(), g.r()
	g.ins("add.rn.f64 %s, %s, 0d4330000000000000", t, v)
	g.ins("sub.rn.f64 %s, %s, 0d4330000000000000", u, t)
	g.ins("mov.b64 {%s, %s}, %s", lo, hi, t)
	bad, q := g.p(), g.p()
	g.ins("setp.neu.f64 %s, %s, %s", bad, u, v)
	g.ins("setp.ne.u32 %s, %s, 1127219200", q, hi) // 0x43300000
	g.ins("or.pred %s, %s, %s", bad, bad, q)
	g.ins("setp.ge.u32 %s, %s, %d", q, lo, c.bins)
	g.ins("or.pred %s, %s, %s", bad, bad, q)
	flag, next := g.label("cbad"), g.label("cnext")
	g.ins("@%s bra %s", bad, flag)
	if c.copies > 0 {
		a := g.r()
		g.ins("mad.lo.u32 %s, %s, 4, %s", a, lo, c.mine)
		g.ins("red.shared.add.u32 [%s], 1", a)
	} else {
		a := g.rd()
		g.ins("mul.wide.u32 %s, %s, 8", a, lo)
		g.ins("add.u64 %s, %s, %s", a, a, c.counts)
		g.ins("red.global.add.u64 [%s], 1", a)
	}
	g.countFlagged(c, v, flag, next)
}

// countFlagged ends a count of v: the counted value branches past label flag, where a value
// that is not a bin's (the branch to flag) is flagged, its value stored after the counts.
func (g *gen) countFlagged(c *counter, v, flag, next string) {
	g.ins("bra %s", next)
	g.put(flag)
	g.ins("st.global.f64 [%s+%d], %s", c.counts, 8*(c.bins+1), v)
	g.ins("st.global.u64 [%s+%d], 1", c.counts, 8*c.bins)
	g.put(next)
}

// countAddConverted is countAdd by a conversion to an integer and back.
func (g *gen) countAddConverted(c *counter, v string) {
	k, kf := g.rd(), g.fd()
	g.ins("cvt.rzi.s64.f64 %s, %s", k, v)
	g.ins("cvt.rn.f64.s64 %s, %s", kf, k)
	bad, q := g.p(), g.p()
	g.ins("setp.neu.f64 %s, %s, %s", bad, kf, v)
	g.ins("setp.lt.s64 %s, %s, 0", q, k)
	g.ins("or.pred %s, %s, %s", bad, bad, q)
	g.ins("setp.ge.s64 %s, %s, %d", q, k, c.bins)
	g.ins("or.pred %s, %s, %s", bad, bad, q)
	flag, next := g.label("cbad"), g.label("cnext")
	g.ins("@%s bra %s", bad, flag)
	if c.copies > 0 {
		a := g.r()
		g.ins("cvt.u32.u64 %s, %s", a, k)
		g.ins("mad.lo.u32 %s, %s, 4, %s", a, a, c.mine)
		g.ins("red.shared.add.u32 [%s], 1", a)
	} else {
		a := g.rd()
		g.ins("mad.lo.u64 %s, %s, 8, %s", a, k, c.counts)
		g.ins("red.global.add.u64 [%s], 1", a)
	}
	g.countFlagged(c, v, flag, next)
}

// countFlush adds the block's counters (its copies summed per bin) to the task's counts, once
// every thread of the block has counted its elements. A block counts fewer than 2^32
// elements (a task has fewer than 2^47, in at most MaxSlices blocks of at least
// ElemsPerBlock), so the sums fit their 32 bits.
func (g *gen) countFlush(c *counter, tid32 string) {
	if c.copies == 0 {
		return
	}
	g.ins("bar.sync 0")
	i, a, sum, t, p := g.r(), g.r(), g.r(), g.r(), g.p()
	loop, skip, done := g.label("cflush"), g.label("cskip"), g.label("cflushed")
	g.ins("mov.u32 %s, %s", i, tid32)
	g.put(loop)
	g.ins("setp.ge.u32 %s, %s, %d", p, i, c.bins)
	g.ins("@%s bra %s", p, done)
	g.ins("mad.lo.u32 %s, %s, 4, %s", a, i, c.base)
	g.ins("ld.shared.u32 %s, [%s]", sum, a)
	for k := 1; k < c.copies; k++ {
		g.ins("ld.shared.u32 %s, [%s+%d]", t, a, 4*k*c.bins)
		g.ins("add.u32 %s, %s, %s", sum, sum, t)
	}
	g.ins("setp.eq.u32 %s, %s, 0", p, sum)
	g.ins("@%s bra %s", p, skip)
	w, ad := g.rd(), g.rd()
	g.ins("cvt.u64.u32 %s, %s", w, sum)
	g.ins("mul.wide.u32 %s, %s, 8", ad, i)
	g.ins("add.u64 %s, %s, %s", ad, c.counts, ad)
	g.ins("red.global.add.u64 [%s], %s", ad, w)
	g.put(skip)
	g.ins("add.u32 %s, %s, %d", i, i, BlockSize)
	g.ins("bra %s", loop)
	g.put(done)
}

// MaxSharedBins is the most counters a block keeps in shared memory (32 KiB of uint32); more
// bins are counted with atomics on the task's counts in device memory.
const MaxSharedBins = 8192
