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

// deferCap is how many elements a thread queues before it computes them (in the loop, when the
// queue is full): 16 is past the 99.9th percentile of a lane's slow draws in one slice of 256
// elements per thread with two normals per element (mean 7.6).
const deferCap = 16

// deferQueue is a thread's queue of deferred elements: a local array of element indices, its
// length, and the label that queues the current element.
type deferQueue struct {
	base, n, resume string
	push            string
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
	q := &deferQueue{base: g.rd(), n: g.r(), resume: g.r(), push: g.label("defer")}
	g.ins("mov.u64 %s, gpn_defer_q", q.base)
	g.ins("mov.u32 %s, 0", q.n)
	return q
}

// deferredElements emits, after the element loop, the code that queues element e (label
// q.push: back to next, or to the queue's computation when it is full) and, at loopEnd, the
// computation of the queued elements by compute (given a queued element's index); after it a
// full queue goes back to next, the end of the loop falls through to what follows.
func (g *gen) deferredElements(q *deferQueue, e, next, loopEnd string, compute func(e2 string) error) error {
	drain := g.label("drain")
	g.put(q.push)
	a, t := g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, 8", t, q.n)
	g.ins("add.u64 %s, %s, %s", a, q.base, t)
	g.ins("st.local.u64 [%s], %s", a, e)
	g.ins("add.u32 %s, %s, 1", q.n, q.n)
	pf := g.p()
	g.ins("setp.lt.u32 %s, %s, %d", pf, q.n, deferCap)
	g.ins("@%s bra %s", pf, next)
	g.ins("mov.u32 %s, 1", q.resume)
	g.ins("bra %s", drain)

	g.put(loopEnd)
	g.ins("mov.u32 %s, 0", q.resume)
	g.put(drain)
	i := g.r()
	loop, done := g.label("dloop"), g.label("dend")
	g.ins("mov.u32 %s, 0", i)
	g.put(loop)
	pd := g.p()
	g.ins("setp.ge.u32 %s, %s, %s", pd, i, q.n)
	g.ins("@%s bra %s", pd, done)
	e2 := g.rd()
	g.ins("mul.wide.u32 %s, %s, 8", t, i)
	g.ins("add.u64 %s, %s, %s", a, q.base, t)
	g.ins("ld.local.u64 %s, [%s]", e2, a)
	if err := compute(e2); err != nil {
		return err
	}
	g.ins("add.u32 %s, %s, 1", i, i)
	g.ins("bra %s", loop)
	g.put(done)
	g.ins("mov.u32 %s, 0", q.n)
	pr := g.p()
	g.ins("setp.ne.u32 %s, %s, 0", pr, q.resume)
	g.ins("@%s bra %s", pr, next)
	return nil
}
