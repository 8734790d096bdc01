package cuda

import (
	"fmt"
	"os"
	"strconv"

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

// deferAxes defers slow draws in partial reductions (Spec.Kept) too; GPUNOTES_PTX_DEFER_AXES=0
// turns it off. On an H100 at N=40000 it took the regenerated axis sums and means from
// 13.7-14.1 ms to 10.2-10.8 ms when it folded the deferred values last; folded in element order
// (deferredInOrder), an axis reduction of a regenerated array has the bits of the same
// reduction of the array persisted, which the GPU worker tests compare.
var deferAxes = os.Getenv("GPUNOTES_PTX_DEFER_AXES") != "0"

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

// deferBatchLen is how many elements a reduction's batch holds (deferredInOrder) before its
// slow elements are computed and its values folded in; GPUNOTES_PTX_DEFER_BATCH=N (8 to 256)
// sets it, to measure. A longer batch runs the slow path less often (a warp runs it as many
// times as its lane with the most slow elements in the batch) but holds more values in local
// memory and unrolls a longer fold. On an H100 at N=40000 (bench/RESULTS.md), sum 13.2, 12.2,
// 11.9, 14.3 and 19.8 ms for 16, 32, 64, 128 and 256, std along an axis 19.0-19.4, 16.4-16.8,
// 19.6, 20.9-21.4 and 26.6-27.7 ms: 32 is the best overall (the deferred values folded last,
// out of order: sum 10.2, std along an axis 16.8-17.3).
var deferBatchLen = func() int {
	n, err := strconv.Atoi(os.Getenv("GPUNOTES_PTX_DEFER_BATCH"))
	if err != nil || n < 8 || n > 256 {
		return 32
	}
	return n
}()

// deferQueueLen is how many slow elements a reduction's batch queues before they are computed
// and the batch folded in (deferCap; tests shorten it to reach that end of a batch).
var deferQueueLen = deferCap

// maxUnrolledFold bounds the words of a batch whose fold is unrolled (loads issued eight at a
// time, then their values folded in): a longer batch is folded in a loop, as is a thread's
// last, partial batch.
const maxUnrolledFold = 128

// deferQueue is a thread's queue of deferred elements: a local array of element indices and
// its length.
type deferQueue struct {
	base, n string
	// batch, when set, replaces the queue: a reduction's in-order deferral (deferredInOrder).
	batch *deferBatch
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

// deferOrdered makes reductions that defer slow draws fold their values in element order
// (deferredInOrder). GPUNOTES_PTX_DEFER_ORDER=0 folds the deferred values last instead, to
// measure what the order costs (the bits then differ from a reduction of stored data).
var deferOrdered = os.Getenv("GPUNOTES_PTX_DEFER_ORDER") != "0"

// newDeferQueue declares a thread's queue for the deferred elements of s and empties it: a
// batch folded in element order for reductions (deferOrdered), a queue of element indices for
// elementwise kernels.
func (g *gen) newDeferQueue(s *Spec) *deferQueue {
	// Counts (RCount) are integers: their order changes no bit, so they take the cheaper queue.
	if s.Reduce != RNone && s.Reduce != RCount && deferOrdered {
		return g.newDeferBatch(s)
	}
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
// leaf row bases). Reductions go through deferredInOrder instead (element order, see there);
// this out-of-order body is left to elementwise kernels, whose stores have no order.
func (g *gen) deferredLoopBody(s *Spec, q *deferQueue, lv []leafRegs, e, c, hi, dl, t string, step int, rowBase func([]leafRegs, string), each func(val, string) error) error {
	if q.batch != nil {
		return g.deferredInOrder(s, q, lv, e, c, hi, dl, t, step, rowBase, each)
	}
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
		vals, skip, end, err := g.slowValues(s, lv, e2, dl, t, rowBase)
		if err != nil {
			return err
		}
		return g.foldValues(vals, skip, end, "", e2, each)
	})
}

// slowValues emits the values of a queued element e2 (as elementValues, every draw with its
// slow path): its row e2/dl and column, the leaves' row bases for that row in fresh registers.
func (g *gen) slowValues(s *Spec, lv []leafRegs, e2, dl, t string, rowBase func([]leafRegs, string)) ([]val, []string, string, error) {
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
	return g.elementValues(s, lv2, c2)
}

// deferBatch is the state of a reduction's in-order deferral (deferredInOrder): a local
// array of size elements' values (nv values of width words each), the queue of the batch's
// slow elements (their places in the batch, u32, at most deferQueueLen), the batch's element count
// k, the queue's length n, the batch's first element, and mask, the values to fold in (bit j
// for value j, when some value of an element may be skipped: mirrored kernels, whose batches
// hold at most 16 elements).
type deferBatch struct {
	vals, queue, k, n, first, mask string
	size, nv, words                int
}

// newDeferBatch declares a reduction's batch for elements of nv values (elementValues) of s's
// result lane, and empties it.
func (g *gen) newDeferBatch(s *Spec) *deferQueue {
	nv := 1
	if s.Mirror != nil {
		nv = 2
	}
	words := 1
	if laneOf(s.Nodes[len(s.Nodes)-1].DType) == laneC {
		words = 2
	}
	size := deferBatchLen
	if nv > 1 {
		size = 16 // the mask's 32 bits
	}
	b := &deferBatch{vals: g.rd(), queue: g.rd(), k: g.r(), n: g.r(), first: g.rd(), size: size, nv: nv, words: words}
	g.locals = fmt.Sprintf("\t.local .align 8 .b8 gpn_defer_v[%d];\n\t.local .align 4 .b8 gpn_defer_q[%d];\n", 8*size*nv*words, 4*deferQueueLen)
	g.ins("mov.u64 %s, gpn_defer_v", b.vals)
	g.ins("mov.u64 %s, gpn_defer_q", b.queue)
	g.ins("mov.u32 %s, 0", b.k)
	g.ins("mov.u32 %s, 0", b.n)
	if nv > 1 {
		b.mask = g.r()
		g.ins("mov.u32 %s, 0", b.mask)
	}
	return &deferQueue{batch: b}
}

// deferredInOrder emits the element loop's body of a reduction that defers slow draws, in
// element order: element e's values, computed with every normal on its fast path, go to its
// place k in the batch (a slow element's place holds its index e instead, and k joins the
// queue); when the batch holds deferCap elements or e is the thread's last, the queued elements
// are computed with the slow path into their places, and then every value of the batch is
// handed to each in order. The thread's additions are those of a kernel without deferral, in
// the same order, so the bits equal a reduction of the same values stored (a persisted array).
func (g *gen) deferredInOrder(s *Spec, q *deferQueue, lv []leafRegs, e, c, hi, dl, t string, step int, rowBase func([]leafRegs, string), each func(val, string) error) error {
	b := q.batch
	cell := 8 * b.words // bytes of one value
	slow := g.p()
	g.ins("mov.pred %s, 0", slow)
	pk := g.p()
	g.ins("setp.eq.u32 %s, %s, 0", pk, b.k)
	g.ins("@%s mov.u64 %s, %s", pk, b.first, e)
	// a: the element's first value cell.
	a := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", a, b.k, cell*b.nv)
	g.ins("add.u64 %s, %s, %s", a, a, b.vals)
	g.deferPred = slow
	vals, skip, end, err := g.elementValues(s, lv, c)
	g.deferPred = ""
	if err != nil {
		return err
	}
	for i, v := range vals {
		p := slow
		if skip[i] != "" {
			p = g.p()
			g.ins("or.pred %s, %s, %s", p, skip[i], slow)
		}
		g.storeLocal(v, a, i*cell, p)
		if b.mask != "" {
			// Value i of element k is bit k*nv+i, set unless the value is skipped.
			bit, sh := g.r(), g.r()
			g.ins("mad.lo.u32 %s, %s, %d, %d", sh, b.k, b.nv, i)
			g.ins("shl.b32 %s, 1, %s", bit, sh)
			if skip[i] != "" {
				g.ins("@!%s or.b32 %s, %s, %s", skip[i], b.mask, b.mask, bit)
			} else {
				g.ins("or.b32 %s, %s, %s", b.mask, b.mask, bit)
			}
		}
	}
	// A slow element: its index in its first cell, its place in the queue.
	qa := g.rd()
	g.ins("@%s st.local.u64 [%s], %s", slow, a, e)
	g.ins("mul.wide.u32 %s, %s, 4", qa, b.n)
	g.ins("add.u64 %s, %s, %s", qa, qa, b.queue)
	g.ins("@%s st.local.u32 [%s], %s", slow, qa, b.k)
	g.ins("@%s add.u32 %s, %s, 1", slow, b.n, b.n)
	if end != "" {
		g.put(end) // a mirrored element past the diagonal: nothing to store
	}
	g.ins("add.u32 %s, %s, 1", b.k, b.k)

	// The batch ends when full, when its queue is, or at the thread's last element.
	en, pl, pf := g.rd(), g.p(), g.p()
	g.ins("add.u64 %s, %s, %d", en, e, step)
	g.ins("setp.ge.u64 %s, %s, %s", pl, en, hi)
	g.ins("setp.ge.u32 %s, %s, %d", pf, b.k, b.size)
	g.ins("or.pred %s, %s, %s", pl, pl, pf)
	g.ins("setp.ge.u32 %s, %s, %d", pf, b.n, deferQueueLen)
	g.ins("or.pred %s, %s, %s", pl, pl, pf)
	done := g.label("dend")
	g.ins("@!%s bra %s", pl, done)
	// The queued elements, with the slow path, into their places.
	slowDone, slowLoop := g.label("dslowend"), g.label("dloop")
	i := g.r()
	g.ins("mov.u32 %s, 0", i)
	pq := g.p()
	g.ins("setp.eq.u32 %s, %s, 0", pq, b.n)
	g.ins("@%s bra %s", pq, slowDone)
	g.put(slowLoop)
	kq, e2, a2 := g.r(), g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, 4", qa, i)
	g.ins("add.u64 %s, %s, %s", qa, qa, b.queue)
	g.ins("ld.local.u32 %s, [%s]", kq, qa)
	g.ins("mul.wide.u32 %s, %s, %d", a2, kq, cell*b.nv)
	g.ins("add.u64 %s, %s, %s", a2, a2, b.vals)
	g.ins("ld.local.u64 %s, [%s]", e2, a2)
	vals2, _, end2, err := g.slowValues(s, lv, e2, dl, t, rowBase)
	if err != nil {
		return err
	}
	// A queued element is never past the diagonal; its skipped values are masked out.
	for j, v := range vals2 {
		g.storeLocal(v, a2, j*cell, "")
	}
	if end2 != "" {
		g.put(end2)
	}
	g.ins("add.u32 %s, %s, 1", i, i)
	g.ins("setp.lt.u32 %s, %s, %s", pq, i, b.n)
	g.ins("@%s bra %s", pq, slowLoop)
	g.put(slowDone)
	// Every value of the batch, in order: value j of element j/nv, index first + (j/nv)*step.
	// A full batch's fold is unrolled (the loads issued eight at a time), the rest loop.
	foldDone := g.label("dfolded")
	if n := b.size * b.nv; n*b.words <= maxUnrolledFold {
		partial, pfull := g.label("dpartial"), g.p()
		g.ins("setp.ne.u32 %s, %s, %d", pfull, b.k, b.size)
		g.ins("@%s bra %s", pfull, partial)
		for j0 := 0; j0 < n; j0 += 8 {
			vs := make([]val, 0, 8)
			for j := j0; j < min(j0+8, n); j++ {
				aj := g.rd()
				g.ins("add.u64 %s, %s, %d", aj, b.vals, j*cell)
				vs = append(vs, g.loadLocal(vals[0].l, aj))
			}
			for i, v := range vs {
				j := j0 + i
				ej := g.rd()
				g.ins("add.u64 %s, %s, %d", ej, b.first, (j/b.nv)*step)
				skipV := ""
				if b.mask != "" {
					bit, pm := g.r(), g.p()
					skipV = g.label("dskip")
					g.ins("and.b32 %s, %s, %d", bit, b.mask, 1<<j)
					g.ins("setp.eq.u32 %s, %s, 0", pm, bit)
					g.ins("@%s bra %s", pm, skipV)
				}
				if err := each(v, ej); err != nil {
					return err
				}
				if skipV != "" {
					g.put(skipV)
				}
			}
		}
		g.ins("bra %s", foldDone)
		g.put(partial)
	}
	foldLoop := g.label("dfold")
	j, nvals, ej, aj := g.r(), g.r(), g.rd(), g.rd()
	g.ins("mul.lo.u32 %s, %s, %d", nvals, b.k, b.nv)
	g.ins("mov.u32 %s, 0", j)
	g.put(foldLoop)
	el := j
	if b.nv > 1 {
		el = g.r()
		g.ins("div.u32 %s, %s, %d", el, j, b.nv)
	}
	g.ins("mul.wide.u32 %s, %s, %d", ej, el, step)
	g.ins("add.u64 %s, %s, %s", ej, ej, b.first)
	g.ins("mul.wide.u32 %s, %s, %d", aj, j, cell)
	g.ins("add.u64 %s, %s, %s", aj, aj, b.vals)
	v := g.loadLocal(vals[0].l, aj)
	skipV := ""
	if b.mask != "" {
		bit, pm := g.r(), g.p()
		skipV = g.label("dskip")
		g.ins("shr.b32 %s, %s, %s", bit, b.mask, j)
		g.ins("and.b32 %s, %s, 1", bit, bit)
		g.ins("setp.eq.u32 %s, %s, 0", pm, bit)
		g.ins("@%s bra %s", pm, skipV)
	}
	if err := each(v, ej); err != nil {
		return err
	}
	if skipV != "" {
		g.put(skipV)
	}
	g.ins("add.u32 %s, %s, 1", j, j)
	g.ins("setp.lt.u32 %s, %s, %s", pq, j, nvals)
	g.ins("@%s bra %s", pq, foldLoop)
	g.put(foldDone)
	g.ins("mov.u32 %s, 0", b.k)
	g.ins("mov.u32 %s, 0", b.n)
	if b.mask != "" {
		g.ins("mov.u32 %s, 0", b.mask)
	}
	g.put(done)
	return nil
}

// storeLocal stores value v at byte off of local address a, unless predicate skip holds
// (skip "": always).
func (g *gen) storeLocal(v val, a string, off int, skip string) {
	guard := ""
	if skip != "" {
		guard = "@!" + skip + " "
	}
	switch v.l {
	case laneI:
		g.ins("%sst.local.u64 [%s+%d], %s", guard, a, off, v.r)
	case laneC:
		g.ins("%sst.local.f64 [%s+%d], %s", guard, a, off, v.r)
		g.ins("%sst.local.f64 [%s+%d], %s", guard, a, off+8, v.im)
	default:
		g.ins("%sst.local.f64 [%s+%d], %s", guard, a, off, v.r)
	}
}

// loadLocal loads a value of lane l from local address a.
func (g *gen) loadLocal(l lane, a string) val {
	switch l {
	case laneI:
		r := g.rd()
		g.ins("ld.local.u64 %s, [%s]", r, a)
		return val{l: l, r: r}
	case laneC:
		re, im := g.fd(), g.fd()
		g.ins("ld.local.f64 %s, [%s]", re, a)
		g.ins("ld.local.f64 %s, [%s+8]", im, a)
		return val{l: l, r: re, im: im}
	}
	r := g.fd()
	g.ins("ld.local.f64 %s, [%s]", r, a)
	return val{l: l, r: r}
}
