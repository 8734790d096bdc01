package ptx

import (
	"fmt"
	"math/bits"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// KeyLeaves returns the random leaves of s whose Philox keys are kernel parameters, in
// parameter order: each leaf that derives its own round keys (not one sharing an earlier
// leaf's, SameKey), for element kernels only (partial reductions, Kept > 0, read keys from
// their descriptors).
func KeyLeaves(s *Spec) []int {
	if !opt.KeyParams || s.Kept > 0 {
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

// CoopPays reports whether the warps of s's kernel compute their slow elements together: by
// default every kernel. At f313bb6 the larger kernels (stds along an axis, x + x.T) were slower
// with warps together, but at cc0e6fe (fewer registers, only slow elements storing their
// records) warps together were as fast or faster on every row (H100, N=40000, against lanes
// alone: sum 10.62 against 10.93 ms, axis sums 10.0-10.3 against 10.5-10.7, std along axis 0
// 11.29 against 11.73, along axis 1 11.86 against 12.19, x + x.T 17.55 against 19.50;
// bench/RESULTS.md). GPUNOTES_PTX_DEFER_COOP=0 leaves each lane to compute its own.
func CoopPays(_ *Spec) bool {
	return opt.DeferCoop != "0"
}

// maxStageWords bounds the 64-bit words of one slot of the warp's shared stage (a slow
// element's leaf indices, then its values): wider elements are computed by their own lanes.
const maxStageWords = 8

// foldGroup is the values a grouped fold loads before it folds them in.
const foldGroup = 8

// deferQueue is a thread's queue of deferred elements: a local array of element indices and
// its length.
type deferQueue struct {
	base, n string
	// batch, when set, replaces the queue: a reduction's in-order deferral (deferredInOrder).
	batch *deferBatch
}

// DrawsNormals reports whether an element of s draws a normal inline (the ziggurat of
// gen.random; the library's distributions call their own code).
func DrawsNormals(s *Spec) bool {
	for _, nd := range s.Nodes {
		if nd.Kind == NRandom && nd.Rand.Dist == expr.Normal {
			return true
		}
	}
	return false
}

// newDeferQueue declares a thread's queue for the deferred elements of s and empties it: a
// batch folded in element order for reductions (Options.DeferOrder), a queue of element indices for
// elementwise kernels.
func (g *gen) newDeferQueue(s *Spec) *deferQueue {
	// Counts (RCount) are integers: their order changes no bit, so they take the cheaper queue
	// (countInBatches: the batches, for their warps computing slow elements together).
	if s.Reduce != RNone && (s.Reduce != RCount || opt.CountBatch) && opt.DeferOrder {
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
	slow, vals, skip, end, err := g.fastValues(s, lv, c)
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

// fastValues emits the values of the element at column c (elementValues) with every normal
// draw on its fast path, and the predicate (slow) that a draw sets where its element needs the
// slow path.
func (g *gen) fastValues(s *Spec, lv []leafRegs, c string) (slow string, vals []val, skip []string, end string, err error) {
	slow = g.p()
	g.ins("mov.pred %s, 0", slow)
	g.deferPred = slow
	vals, skip, end, err = g.elementValues(s, lv, c)
	g.deferPred = ""
	return slow, vals, skip, end, err
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

// deferBatch is the state of a reduction's in-order deferral (deferredInOrder). A thread holds
// the values of its batch's elements in a local array (vals) and a record of each slow element
// (queue): its place in the batch, then its leaves' source indices, from which any lane of the
// warp can compute its values. k counts the batch's elements, kend is where the batch ends
// (the batch length, or fewer at the thread's last elements), n counts its slow elements;
// first, set where the batch ends, is its first element's index; mask (mirrored kernels, whose
// batches hold at most 16 elements) has bit j set for each value j to fold in. The loop keeps
// only k, kend and n (and mask) in registers: a register more through the element's draws can
// cost an H100 half its blocks per SM.
type deferBatch struct {
	vals, queue, k, kend, n, first, mask string
	size, nv, words, leaves              int
	// stage names the warp's shared slots (deferredSlowCoop), "" when the lanes compute their
	// own slow elements.
	stage string
	// tail, when set, labels the one-element body's batch end (batchEnd), where a paired
	// pass (pairedInOrder) goes on.
	tail string
}

// recBytes is the bytes of a slow element's record: its place, then a source index per leaf.
func (b *deferBatch) recBytes() int { return 8 * (1 + b.leaves) }

// stageWords is the 64-bit words of one slot of the warp's stage: a slow element's leaf
// indices, then its values.
func (b *deferBatch) stageWords() int { return max(b.leaves, b.nv*b.words) }

// newDeferBatch declares a reduction's batch for elements of nv values (elementValues) of s's
// result lane. Its state is set at the loop's first element (deferStart).
func (g *gen) newDeferBatch(s *Spec) *deferQueue {
	nv := 1
	if s.Mirror != nil {
		nv = 2
	}
	words := 1
	if LaneOf(s.Nodes[len(s.Nodes)-1].DType) == LaneC {
		words = 2
	}
	// A batch holds deferBatchLen words of values: fewer complex or mirrored elements.
	size := max(opt.DeferBatch/(words*nv), 4)
	if nv > 1 {
		size = min(size, 16) // the mask's 32 bits
	}
	b := &deferBatch{vals: g.rd(), queue: g.rd(), k: g.r(), kend: g.r(), n: g.r(), first: g.rd(), size: size, nv: nv, words: words, leaves: g.leaves}
	g.locals = fmt.Sprintf("\t.local .align 8 .b8 gpn_defer_v[%d];\n\t.local .align 8 .b8 gpn_defer_q[%d];\n", 8*size*nv*words, b.recBytes()*size)
	if CoopPays(s) && b.stageWords() <= maxStageWords {
		b.stage = "gpn_defer_s"
		g.shared += fmt.Sprintf("\t.shared .align 8 .b8 %s[%d];\n", b.stage, BlockSize*8*b.stageWords())
	}
	g.ins("mov.u64 %s, gpn_defer_v", b.vals)
	g.ins("mov.u64 %s, gpn_defer_q", b.queue)
	if nv > 1 {
		b.mask = g.r()
	}
	return &deferQueue{batch: b}
}

// deferStart emits the start of a batch whose first element is e (the thread's elements
// going on by step below hi): empty, ending after min(size, the thread's elements left).
func (g *gen) deferStart(q *deferQueue, e, hi string, step int) {
	b := q.batch
	if b == nil {
		return
	}
	g.ins("mov.u32 %s, 0", b.k)
	g.ins("mov.u32 %s, 0", b.n)
	if b.mask != "" {
		g.ins("mov.u32 %s, 0", b.mask)
	}
	left := g.rd()
	g.ins("sub.u64 %s, %s, %s", left, hi, e)
	g.ins("add.u64 %s, %s, %d", left, left, step-1)
	g.ins("shr.u64 %s, %s, %d", left, left, bits.TrailingZeros(uint(step)))
	g.ins("min.u64 %s, %s, %d", left, left, b.size)
	g.ins("cvt.u32.u64 %s, %s", b.kend, left)
}

// deferredInOrder emits the element loop's body of a reduction that defers slow draws, in
// element order: element e's values, computed with every normal on its fast path, go to its
// place k in the batch, and a slow element's record (its place and leaf indices) to the queue;
// at the batch's end (kend, or a full queue where tests set deferQueueLen) the queued elements
// are computed with the slow path into their places (deferredSlow), every value of the batch
// is handed to each in order, and the next batch starts. The thread's additions are those of a
// kernel without deferral, in the same order, so the bits equal a reduction of the same values
// stored (a persisted array).
func (g *gen) deferredInOrder(s *Spec, q *deferQueue, lv []leafRegs, e, c, hi, dl, t string, step int, rowBase func([]leafRegs, string), each func(val, string) error) error {
	b := q.batch
	cell := 8 * b.words // bytes of one value
	slow, vals, skip, end, err := g.fastValues(s, lv, c)
	if err != nil {
		return err
	}
	va := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", va, b.k, cell*b.nv)
	g.ins("add.u64 %s, %s, %s", va, va, b.vals)
	for i, v := range vals {
		p := slow
		if skip[i] != "" {
			p = g.p()
			g.ins("or.pred %s, %s, %s", p, skip[i], slow)
		}
		g.storeLocal(v, va, i*cell, p)
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
	// A slow element's record: its place, and its leaf indices computed again (held through
	// the draws, they cost registers; stored by every element, the lanes' stores scatter:
	// both measured slower on an H100).
	ra := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", ra, b.n, b.recBytes())
	g.ins("add.u64 %s, %s, %s", ra, ra, b.queue)
	g.ins("@%s st.local.u32 [%s], %s", slow, ra, b.k)
	for l, r := range g.leafIndices(lv, c) {
		g.ins("@%s st.local.u64 [%s+%d], %s", slow, ra, 8*(l+1), r)
	}
	g.ins("@%s add.u32 %s, %s, 1", slow, b.n, b.n)
	if end != "" {
		g.put(end) // a mirrored element past the diagonal: nothing to store
	}
	g.ins("add.u32 %s, %s, 1", b.k, b.k)
	return g.batchEnd(s, q, e, hi, step, vals[0].l, each)
}

// batchEnd emits, after element e (the last one put in the batch), the end of the batch when
// it is full (kend) or its queue is (deferQueueLen): the slow elements computed into their
// places, every value handed to each in order (lane l), and the next batch started.
func (g *gen) batchEnd(s *Spec, q *deferQueue, e, hi string, step int, l lane, each func(val, string) error) error {
	b := q.batch
	if b.tail != "" {
		g.put(b.tail)
	}
	pl := g.p()
	g.ins("setp.lt.u32 %s, %s, %s", pl, b.k, b.kend)
	if opt.DeferQueue > 0 && opt.DeferQueue < b.size {
		pf := g.p()
		g.ins("setp.lt.u32 %s, %s, %d", pf, b.n, opt.DeferQueue)
		g.ins("and.pred %s, %s, %s", pl, pl, pf)
	}
	done := g.label("dend")
	g.ins("@%s bra %s", pl, done)
	// The batch's first element: e - (k-1)*step.
	back := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", back, b.k, step)
	g.ins("sub.u64 %s, %s, %s", b.first, e, back)
	g.ins("add.u64 %s, %s, %d", b.first, b.first, step)
	if err := g.deferredSlow(s, b); err != nil {
		return err
	}
	if err := g.deferredFold(b, l, step, each); err != nil {
		return err
	}
	en := g.rd()
	g.ins("add.u64 %s, %s, %d", en, e, step)
	g.deferStart(q, en, hi, step)
	g.put(done)
	return nil
}

// deferredSlow emits the computation of the batch's slow elements into their places: by the
// warp's lanes together (deferredSlowCoop) when the whole warp ends its batch here, else by
// each lane for its own.
func (g *gen) deferredSlow(s *Spec, b *deferBatch) error {
	slowDone := g.label("dslowend")
	if b.stage != "" {
		m, pm := g.r(), g.p()
		own := g.label("down")
		g.ins("activemask.b32 %s", m)
		g.ins("setp.ne.u32 %s, %s, -1", pm, m)
		g.ins("@%s bra %s", pm, own)
		if err := g.deferredSlowCoop(s, b, slowDone); err != nil {
			return err
		}
		g.ins("bra %s", slowDone)
		g.put(own)
	}
	// Each lane its own slow elements, record by record.
	slowLoop := g.label("dloop")
	i, pq := g.r(), g.p()
	g.ins("setp.eq.u32 %s, %s, 0", pq, b.n)
	g.ins("@%s bra %s", pq, slowDone)
	g.ins("mov.u32 %s, 0", i)
	g.put(slowLoop)
	ra := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", ra, i, b.recBytes())
	g.ins("add.u64 %s, %s, %s", ra, ra, b.queue)
	vals, end, err := g.slowAt(s, b, ra)
	if err != nil {
		return err
	}
	kq, a := g.r(), g.rd()
	g.ins("ld.local.u32 %s, [%s]", kq, ra)
	g.ins("mul.wide.u32 %s, %s, %d", a, kq, 8*b.words*b.nv)
	g.ins("add.u64 %s, %s, %s", a, a, b.vals)
	// A queued element is never past the diagonal; its skipped values are masked out.
	for j, v := range vals {
		g.storeLocal(v, a, j*8*b.words, "")
	}
	if end != "" {
		g.put(end)
	}
	g.ins("add.u32 %s, %s, 1", i, i)
	g.ins("setp.lt.u32 %s, %s, %s", pq, i, b.n)
	g.ins("@%s bra %s", pq, slowLoop)
	g.put(slowDone)
	return nil
}

// slowAt emits the values, every draw with its slow path, of the element whose leaf indices
// follow the place at local (or, with space "shared", shared) address ra; end as in
// elementValues.
func (g *gen) slowAt(s *Spec, b *deferBatch, ra string) ([]val, string, error) {
	return g.slowFrom(s, b, ra, "local", 8)
}

func (g *gen) slowFrom(s *Spec, b *deferBatch, ra, space string, off int) ([]val, string, error) {
	idx := make([]string, b.leaves)
	for l := range idx {
		idx[l] = g.rd()
		g.ins("ld.%s.u64 %s, [%s+%d]", space, idx[l], ra, off+8*l)
	}
	vals, _, end, err := g.elementValuesAt(s, idx)
	return vals, end, err
}

// deferredSlowCoop emits the computation of the slow elements of the batches of a whole warp,
// all 32 lanes ending a batch here, by its lanes together: the lanes' queues, in lane order,
// are the warp's items (an exclusive scan of their lengths gives each lane's first); items
// go 32 at a time through the warp's shared slots, lane j computing the round's item j: its
// owner writes the item's leaf indices into slot j, lane j its values over them, and the
// owner reads them back into the item's place. The warp runs the slow path about once per
// batch (a batch of 32 elements holds 15 slow ones on average across the warp), where lanes
// computing their own queues run it as often as the lane with most (2.3 times on average).
// Only this warp's lanes use its slots, and all of them are here.
func (g *gen) deferredSlowCoop(s *Spec, b *deferBatch, slowDone string) error {
	ln, incl, tot, pre := g.r(), g.r(), g.r(), g.r()
	g.ins("mov.u32 %s, %%laneid", ln)
	g.ins("mov.u32 %s, %s", incl, b.n)
	for o := 1; o < 32; o <<= 1 {
		up, pu := g.r(), g.p()
		g.ins("shfl.sync.up.b32 %s, %s, %d, 0, -1", up, incl, o)
		g.ins("setp.ge.u32 %s, %s, %d", pu, ln, o)
		g.ins("@%s add.u32 %s, %s, %s", pu, incl, incl, up)
	}
	g.ins("shfl.sync.idx.b32 %s, %s, 31, 31, -1", tot, incl)
	g.ins("sub.u32 %s, %s, %s", pre, incl, b.n)
	pz := g.p()
	g.ins("setp.eq.u32 %s, %s, 0", pz, tot)
	g.ins("@%s bra %s", pz, slowDone)
	// Only tot, pre and r0 stay in registers through the round (the slow path is where a
	// kernel needs most); the lane, its warp's slots and its own slot are derived where used.
	slot := 8 * b.stageWords()
	slots := func() (ws, mine string) {
		ws, mine = g.rd(), g.rd()
		w, l := g.r(), g.r()
		g.ins("mov.u32 %s, %%tid.x", w)
		g.ins("shr.b32 %s, %s, 5", w, w)
		g.ins("mul.wide.u32 %s, %s, %d", ws, w, 32*slot)
		g.ins("mov.u64 %s, %s", mine, b.stage)
		g.ins("add.u64 %s, %s, %s", ws, ws, mine)
		g.ins("mov.u32 %s, %%laneid", l)
		g.ins("mul.wide.u32 %s, %s, %d", mine, l, slot)
		g.ins("add.u64 %s, %s, %s", mine, mine, ws)
		return ws, mine
	}
	r0 := g.r()
	g.ins("mov.u32 %s, 0", r0)
	round := g.label("dround")
	g.put(round)
	// items walks this lane's records in the round, ilo <= i < ihi (item pre+i in [r0, r0+32)):
	// record address ra, slot address sa.
	items := func(body func(ra, sa string)) {
		ws, _ := slots()
		ilo, ihi := g.r(), g.r()
		g.ins("sub.u32 %s, %s, %s", ilo, r0, pre)
		g.ins("max.s32 %s, %s, 0", ilo, ilo)
		g.ins("add.u32 %s, %s, 32", ihi, r0)
		g.ins("sub.u32 %s, %s, %s", ihi, ihi, pre)
		g.ins("min.s32 %s, %s, %s", ihi, ihi, b.n)
		i, pi := ilo, g.p()
		loop, out := g.label("ditem"), g.label("ditemsend")
		g.put(loop)
		g.ins("setp.ge.s32 %s, %s, %s", pi, i, ihi)
		g.ins("@%s bra %s", pi, out)
		ra, sa, j := g.rd(), g.rd(), g.r()
		g.ins("mul.wide.u32 %s, %s, %d", ra, i, b.recBytes())
		g.ins("add.u64 %s, %s, %s", ra, ra, b.queue)
		g.ins("add.u32 %s, %s, %s", j, pre, i)
		g.ins("sub.u32 %s, %s, %s", j, j, r0)
		g.ins("mul.wide.u32 %s, %s, %d", sa, j, slot)
		g.ins("add.u64 %s, %s, %s", sa, sa, ws)
		body(ra, sa)
		g.ins("add.u32 %s, %s, 1", i, i)
		g.ins("bra %s", loop)
		g.put(out)
	}
	items(func(ra, sa string) {
		for l := range b.leaves {
			x := g.rd()
			g.ins("ld.local.u64 %s, [%s+%d]", x, ra, 8*(l+1))
			g.ins("st.shared.u64 [%s+%d], %s", sa, 8*l, x)
		}
	})
	g.ins("bar.warp.sync -1")
	// Lane j computes the round's item j, if there is one.
	it, pn, l := g.r(), g.p(), g.r()
	none := g.label("dnone")
	g.ins("mov.u32 %s, %%laneid", l)
	g.ins("add.u32 %s, %s, %s", it, r0, l)
	g.ins("setp.ge.u32 %s, %s, %s", pn, it, tot)
	g.ins("@%s bra %s", pn, none)
	_, mine := slots()
	vals, end, err := g.slowFrom(s, b, mine, "shared", 0)
	if err != nil {
		return err
	}
	_, mine = slots()
	for j, v := range vals {
		g.storeSpace("shared", v, mine, j*8*b.words, "")
	}
	if end != "" {
		g.put(end)
	}
	g.put(none)
	g.ins("bar.warp.sync -1")
	items(func(ra, sa string) {
		kq, a := g.r(), g.rd()
		g.ins("ld.local.u32 %s, [%s]", kq, ra)
		g.ins("mul.wide.u32 %s, %s, %d", a, kq, 8*b.words*b.nv)
		g.ins("add.u64 %s, %s, %s", a, a, b.vals)
		for j := range b.nv {
			v := g.loadSpace("shared", vals[j].l, sa, j*8*b.words)
			g.storeLocal(v, a, j*8*b.words, "")
		}
	})
	g.ins("bar.warp.sync -1")
	pr := g.p()
	g.ins("add.u32 %s, %s, 32", r0, r0)
	g.ins("setp.lt.u32 %s, %s, %s", pr, r0, tot)
	g.ins("@%s bra %s", pr, round)
	return nil
}

// deferredFold emits the fold of the batch's values (lane l), in order: value j of element
// j/nv, index first + (j/nv)*step, handed to each. A full batch's fold is unrolled (the loads
// issued eight at a time) up to maxUnrolledFold words, grouped above (foldGroup values a
// round); a partial batch loops over its values.
func (g *gen) deferredFold(b *deferBatch, l lane, step int, each func(val, string) error) error {
	cell := 8 * b.words
	foldDone := g.label("dfolded")
	n := b.size * b.nv
	unrolled := n*b.words <= opt.FoldUnroll
	grouped := !unrolled && n%foldGroup == 0 && foldGroup%b.nv == 0
	if unrolled || grouped {
		partial, pfull := g.label("dpartial"), g.p()
		g.ins("setp.ne.u32 %s, %s, %d", pfull, b.k, b.size)
		g.ins("@%s bra %s", pfull, partial)
		if grouped {
			if err := g.deferredFoldGroups(b, l, step, each); err != nil {
				return err
			}
		}
		for j0 := 0; unrolled && j0 < n; j0 += 8 {
			vs := make([]val, 0, 8)
			for j := j0; j < min(j0+8, n); j++ {
				vs = append(vs, g.loadSpace("local", l, b.vals, j*cell))
			}
			for i, v := range vs {
				j := j0 + i
				ej := g.rd()
				g.ins("add.u64 %s, %s, %d", ej, b.first, (j/b.nv)*step)
				if err := g.foldValue(b.mask, g.maskBitAt(b.mask, j), v, ej, each); err != nil {
					return err
				}
			}
		}
		g.ins("bra %s", foldDone)
		g.put(partial)
	}
	foldLoop := g.label("dfold")
	j, nvals, ej, aj := g.r(), g.r(), g.rd(), g.rd()
	pq := g.p()
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
	v := g.loadSpace("local", l, aj, 0)
	maskBit := func(bit string) {
		g.ins("shr.b32 %s, %s, %s", bit, b.mask, j)
		g.ins("and.b32 %s, %s, 1", bit, bit)
	}
	if err := g.foldValue(b.mask, maskBit, v, ej, each); err != nil {
		return err
	}
	g.ins("add.u32 %s, %s, 1", j, j)
	g.ins("setp.lt.u32 %s, %s, %s", pq, j, nvals)
	g.ins("@%s bra %s", pq, foldLoop)
	g.put(foldDone)
	return nil
}

// deferredFoldGroups emits the fold of a full batch's values by rounds of foldGroup: each
// round loads its values, then hands them to each in order (value j of the round is value
// r*foldGroup+j of the batch, of element (r*foldGroup+j)/nv). The loads of one round are in
// flight together, as in an unrolled fold, without the registers of the whole batch's.
func (g *gen) deferredFoldGroups(b *deferBatch, l lane, step int, each func(val, string) error) error {
	cell := 8 * b.words
	rounds := b.size * b.nv / foldGroup
	r, va, e0, pr := g.r(), g.rd(), g.rd(), g.p()
	mw := ""
	g.ins("mov.u32 %s, 0", r)
	g.ins("mov.u64 %s, %s", va, b.vals)
	g.ins("mov.u64 %s, %s", e0, b.first)
	if b.mask != "" {
		mw = g.r()
		g.ins("mov.u32 %s, %s", mw, b.mask)
	}
	loop := g.label("dgroup")
	g.put(loop)
	g.ins(`.pragma "nounroll"`) // unrolled, ptxas issues every round's loads at once
	vs := make([]val, foldGroup)
	for j := range vs {
		vs[j] = g.loadSpace("local", l, va, j*cell)
	}
	for j, v := range vs {
		ej := g.rd()
		g.ins("add.u64 %s, %s, %d", ej, e0, (j/b.nv)*step)
		if err := g.foldValue(mw, g.maskBitAt(mw, j), v, ej, each); err != nil {
			return err
		}
	}
	g.ins("add.u64 %s, %s, %d", va, va, foldGroup*cell)
	g.ins("add.u64 %s, %s, %d", e0, e0, foldGroup/b.nv*step)
	if mw != "" {
		g.ins("shr.b32 %s, %s, %d", mw, mw, foldGroup)
	}
	g.ins("add.u32 %s, %s, 1", r, r)
	g.ins("setp.lt.u32 %s, %s, %d", pr, r, rounds)
	g.ins("@%s bra %s", pr, loop)
	return nil
}

// foldValue hands value v, of element index ej, to each, unless the mask register (none: "")
// leaves it out: maskBit emits the value's bit of the mask (zero: left out) into the register
// it is given.
func (g *gen) foldValue(mask string, maskBit func(bit string), v val, ej string, each func(val, string) error) error {
	skip := ""
	if mask != "" {
		bit, pm := g.r(), g.p()
		skip = g.label("dskip")
		maskBit(bit)
		g.ins("setp.eq.u32 %s, %s, 0", pm, bit)
		g.ins("@%s bra %s", pm, skip)
	}
	if err := each(v, ej); err != nil {
		return err
	}
	if skip != "" {
		g.put(skip)
	}
	return nil
}

// maskBitAt is foldValue's maskBit for value j of a mask register: its bit j.
func (g *gen) maskBitAt(mask string, j int) func(bit string) {
	return func(bit string) { g.ins("and.b32 %s, %s, %d", bit, mask, 1<<j) }
}

// storeLocal stores value v at byte off of local address a, unless predicate skip holds
// (skip "": always).
func (g *gen) storeLocal(v val, a string, off int, skip string) {
	g.storeSpace("local", v, a, off, skip)
}

// storeSpace stores value v at byte off of address a of state space sp ("local", "shared"),
// unless predicate skip holds (skip "": always).
func (g *gen) storeSpace(sp string, v val, a string, off int, skip string) {
	guard := ""
	if skip != "" {
		guard = "@!" + skip + " "
	}
	switch v.l {
	case LaneI:
		g.ins("%sst.%s.u64 [%s+%d], %s", guard, sp, a, off, v.r)
	case LaneC:
		g.ins("%sst.%s.f64 [%s+%d], %s", guard, sp, a, off, v.r)
		g.ins("%sst.%s.f64 [%s+%d], %s", guard, sp, a, off+8, v.im)
	default:
		g.ins("%sst.%s.f64 [%s+%d], %s", guard, sp, a, off, v.r)
	}
}

// loadSpace loads a value of lane l from byte off of address a of state space sp.
func (g *gen) loadSpace(sp string, l lane, a string, off int) val {
	switch l {
	case LaneI:
		r := g.rd()
		g.ins("ld.%s.u64 %s, [%s+%d]", sp, r, a, off)
		return val{l: l, r: r}
	case LaneC:
		re, im := g.fd(), g.fd()
		g.ins("ld.%s.f64 %s, [%s+%d]", sp, re, a, off)
		g.ins("ld.%s.f64 %s, [%s+%d]", sp, im, a, off+8)
		return val{l: l, r: re, im: im}
	}
	r := g.fd()
	g.ins("ld.%s.f64 %s, [%s+%d]", sp, r, a, off)
	return val{l: l, r: r}
}
