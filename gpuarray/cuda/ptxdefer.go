package cuda

import (
	"fmt"
	"os"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// deferSlow makes element kernels that draw normals defer the ziggurat's slow path: an element
// whose draw leaves the fast path (1.5% of draws) is queued and computed after the element loop,
// with the lanes of a warp that have queued elements computing them together, instead of the
// warp waiting at every element where any of its 32 lanes draws slowly (38% of a warp's steps
// with one normal per element, 61% with two). GPUNOTES_PTX_DEFER=0 turns it off, to measure.
var deferSlow = os.Getenv("GPUNOTES_PTX_DEFER") != "0"

// roundKeysInLoop (GPUNOTES_PTX_RKLOOP=1, an experiment) derives the Philox round keys inside
// each draw instead of holding them in 18 registers through the element loop.
var roundKeysInLoop = os.Getenv("GPUNOTES_PTX_RKLOOP") == "1"

// deferAxes (GPUNOTES_PTX_DEFER_AXES=1) defers slow draws in partial reductions (Spec.Kept)
// too. Off by default: on an H100 at N=40000 it takes the regenerated axis sums and means from
// 13.7-14.1 ms to 10.2-10.8 ms and its GPU tests pass, but the deferred elements are added out
// of order, so an axis reduction of a regenerated array no longer has the bits of the same
// reduction of the array persisted (the GPU worker tests compare them; bench/RESULTS.md). Fold
// the deferred values in element order, then make it the default.
var deferAxes = os.Getenv("GPUNOTES_PTX_DEFER_AXES") == "1"

// keyParamsOn makes element kernels (no kept axes) take each random leaf's Philox key as a
// kernel parameter instead of reading it from the task descriptor: the key is the same for
// every task of a run, and the round keys derived from a parameter are warp-uniform, which
// the compiler holds in uniform registers, not in 20 registers of each thread.
// GPUNOTES_PTX_KEYPARAMS=0 turns it off, to measure.
var keyParamsOn = os.Getenv("GPUNOTES_PTX_KEYPARAMS") != "0"

// keyLeaves returns the random leaves of s whose Philox keys are kernel parameters, in
// parameter order: each leaf that derives its own round keys (not one sharing an earlier
// leaf's, SameKey), for element kernels only (partial reductions, Kept > 0, read keys from
// their descriptors).
func keyLeaves(s *Spec) []int {
	if !keyParamsOn || s.Kept > 0 {
		return nil
	}
	var ls []int
	seen := map[int]bool{}
	for _, nd := range s.Nodes {
		if nd.Kind != NRandom || nd.Leaf < 0 || seen[nd.Leaf] {
			continue
		}
		seen[nd.Leaf] = true
		if nd.SameKey > 0 && seen[nd.SameKey-1] {
			continue
		}
		ls = append(ls, nd.Leaf)
	}
	return ls
}

// deferCap is how many elements a thread queues before it computes them in the loop (it
// computes the rest at its last element): a thread of a slice has 256 elements, so 3.8 slow
// ones on average with one normal per element and 7.6 with two; 16 fill up in under 1% of
// threads even then.
const deferCap = 16

// deferQueue is a thread's queue of deferred elements: a local array of element indices and
// its length.
type deferQueue struct {
	base, n string
}

// drawsNormals reports whether an element of s draws a normal inline (the ziggurat of
// gen.random; the library's distributions call their own code).
func drawsNormals(s *Spec) bool {
	for _, nd := range s.Nodes {
		if nd.Kind == NRandom && nd.Rand.Dist == expr.Normal {
			return true
		}
	}
	return false
}

// newDeferQueue declares a thread's queue and empties it.
func (g *gen) newDeferQueue() *deferQueue {
	g.deferring = true
	g.locals = fmt.Sprintf("\t.local .align 8 .b8 gpn_defer_q[%d];\n", 8*deferCap)
	q := &deferQueue{base: g.rd(), n: g.r()}
	g.ins("mov.u64 %s, gpn_defer_q", q.base)
	g.ins("mov.u32 %s, 0", q.n)
	return q
}

// deferElement emits, after element e of the loop, its queueing when slow is set, and when
// the queue is full or e is the thread's last element (the next, e+step, is at hi or
// past), the computation of the queued elements by compute (given a queued element's index).
// Every branch is forward and rejoins at the end: a warp whose lanes diverge here (some queue,
// some compute) joins again for the next element, which a branch out of the loop and back did
// not do (measured: 15x slower).
func (g *gen) deferElement(q *deferQueue, slow, e, hi string, step int, compute func(e2 string) error) error {
	a, t := g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, 8", t, q.n)
	g.ins("add.u64 %s, %s, %s", a, q.base, t)
	g.ins("@%s st.local.u64 [%s], %s", slow, a, e)
	g.ins("@%s add.u32 %s, %s, 1", slow, q.n, q.n)
	en, pl, pf := g.rd(), g.p(), g.p()
	g.ins("add.u64 %s, %s, %d", en, e, step)
	g.ins("setp.ge.u64 %s, %s, %s", pl, en, hi)
	g.ins("setp.ge.u32 %s, %s, %d", pf, q.n, deferCap)
	g.ins("or.pred %s, %s, %s", pl, pl, pf)
	g.ins("setp.ne.u32 %s, %s, 0", pf, q.n)
	g.ins("and.pred %s, %s, %s", pl, pl, pf)
	end, loop := g.label("dend"), g.label("dloop")
	g.ins("@!%s bra %s", pl, end)
	i := g.r()
	g.ins("mov.u32 %s, 0", i)
	g.put(loop)
	e2 := g.rd()
	g.ins("mul.wide.u32 %s, %s, 8", t, i)
	g.ins("add.u64 %s, %s, %s", a, q.base, t)
	g.ins("ld.local.u64 %s, [%s]", e2, a)
	if err := compute(e2); err != nil {
		return err
	}
	g.ins("add.u32 %s, %s, 1", i, i)
	pd := g.p()
	g.ins("setp.lt.u32 %s, %s, %s", pd, i, q.n)
	g.ins("@%s bra %s", pd, loop)
	g.ins("mov.u32 %s, 0", q.n)
	g.put(end)
	return nil
}

// deferredLoopBody emits the element loop's body for element e (column c of the current row;
// the loop goes on to e+step) of a kernel that defers slow draws: the element's value with
// every normal on its fast path, handed to each unless a draw left it, then the queueing and
// the queue's computation (deferElement), where a queued element's value is computed again,
// with the slow path, from its own row e/dl and column (t is a scratch register, rowBase sets
// leaf row bases).
func (g *gen) deferredLoopBody(s *Spec, q *deferQueue, lv []leafRegs, e, c, hi, dl, t string, step int, rowBase func([]leafRegs, string), each func(val, string) error) error {
	slow := g.p()
	g.ins("mov.pred %s, 0", slow)
	g.deferPred = slow
	vals, skip, end, err := g.elementValues(s, lv, c)
	g.deferPred = ""
	if err != nil {
		return err
	}
	if err := g.foldValues(vals, skip, end, slow, e, each); err != nil {
		return err
	}
	return g.deferElement(q, slow, e, hi, step, func(e2 string) error {
		lv2 := make([]leafRegs, len(lv))
		for l := range lv {
			lv2[l] = lv[l]
			lv2[l].rb = g.rd()
		}
		row2, c2 := g.rd(), g.rd()
		g.ins("div.u64 %s, %s, %s", row2, e2, dl)
		g.ins("mul.lo.u64 %s, %s, %s", t, row2, dl)
		g.ins("sub.u64 %s, %s, %s", c2, e2, t)
		rowBase(lv2, row2)
		vals, skip, end, err := g.elementValues(s, lv2, c2)
		if err != nil {
			return err
		}
		return g.foldValues(vals, skip, end, "", e2, each)
	})
}
