package ptx

import (
	"fmt"
)

// PairMark starts a paired pass in the kernel's text.
const PairMark = "// two elements a pass (pairedInOrder)"

// pairs reports whether the element loop of s takes two elements a pass (Options.Pair).
func (g *gen) pairs(s *Spec, q *deferQueue) bool {
	if q == nil || q.batch == nil || q.batch.nv != 1 || opt.Pair == "0" {
		return false
	}
	if opt.Pair == "1" {
		return true
	}
	for i, nd := range s.Nodes {
		if nd.Kind == NUnary && g.splitArmed(s, i, g.argLanes(s)) {
			return true
		}
	}
	return false
}

// argLanes returns placeholder values of s's nodes (each node's lane, no register) for
// splitArmed's look at a node's argument before anything is emitted.
func (g *gen) argLanes(s *Spec) []val {
	vs := make([]val, len(s.Nodes))
	for i, nd := range s.Nodes {
		vs[i] = val{l: LaneOf(nd.DType)}
	}
	return vs
}

// valuesAt2 emits the expression's nodes at two elements (leaf source indices idx[0] and
// idx[1], draws leaving the ziggurat's fast path setting slow[0] and slow[1]) node by node in
// turn, so that the compiler sees two independent chains in each basic block (the split
// bodies' fast paths of both elements form one group). Each element's instructions are those
// valueAt emits for it, so its value has the same bits.
func (g *gen) valuesAt2(s *Spec, idx [2][]string, slow [2]string) ([2]val, error) {
	var vals [2][]val
	vals[0], vals[1] = make([]val, len(s.Nodes)), make([]val, len(s.Nodes))
	defer func() { g.deferPred, g.splitArm = "", false }()
	for i := range s.Nodes {
		for h := range 2 {
			g.splitArm = g.splitArmed(s, i, vals[h])
			if !g.splitArm {
				g.flushSplit()
			}
			g.deferPred = slow[h]
			v, err := g.node(s, i, vals[h], idx[h])
			if err != nil {
				return [2]val{}, err
			}
			if v.l != LaneOf(s.Nodes[i].DType) {
				return [2]val{}, fmt.Errorf("kernel spec: node %d of %v computed in lane %d (internal)", i, s.Nodes[i].DType, v.l)
			}
			vals[h][i] = v
		}
	}
	g.flushSplit()
	n := len(s.Nodes) - 1
	return [2]val{vals[0][n], vals[1][n]}, nil
}

// pairedInOrder emits one pass of the element loop over elements e and e+step (columns c and
// c+step of the current row) of a reduction deferring in element order: both must be in the
// batch (k+1 < kend) and in the row, else it branches to single (the one-element body). The
// two values go to places k and k+1 of the batch, a slow one's record to the queue, each in
// element order, so the batch and its fold are those of two one-element passes: the bits do
// not change. It goes on at the one-element body's batch end (deferBatch.tail), which it
// labels, with e and c at the second element.
func (g *gen) pairedInOrder(s *Spec, q *deferQueue, lv []leafRegs, e, c, dl string, step int, single string) error {
	b := q.batch
	b.tail = g.label("dtail")
	k1, p := g.r(), g.p()
	g.ins("add.u32 %s, %s, 1", k1, b.k)
	g.ins("setp.ge.u32 %s, %s, %s", p, k1, b.kend)
	g.ins("@%s bra %s", p, single)
	c2 := g.rd()
	g.ins("add.u64 %s, %s, %d", c2, c, step)
	g.ins("setp.ge.u64 %s, %s, %s", p, c2, dl)
	g.ins("@%s bra %s", p, single)
	if opt.DeferQueue > 0 && opt.DeferQueue < b.size {
		// A queue that may end the batch after the first of the two: one at a time.
		g.ins("setp.ge.u32 %s, %s, %d", p, b.n, opt.DeferQueue-1)
		g.ins("@%s bra %s", p, single)
	}
	g.body.WriteString("\t" + PairMark + "\n")
	cs := [2]string{c, c2}
	slow := [2]string{g.p(), g.p()}
	var idx [2][]string
	for h := range 2 {
		g.ins("mov.pred %s, 0", slow[h])
		idx[h] = g.leafIndices(lv, cs[h])
	}
	vs, err := g.valuesAt2(s, idx, slow)
	if err != nil {
		return err
	}
	cell := 8 * b.words
	va := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", va, b.k, cell)
	g.ins("add.u64 %s, %s, %s", va, va, b.vals)
	for h := range 2 {
		g.storeLocal(vs[h], va, h*cell, slow[h])
		ra := g.rd()
		g.ins("mul.wide.u32 %s, %s, %d", ra, b.n, b.recBytes())
		g.ins("add.u64 %s, %s, %s", ra, ra, b.queue)
		g.ins("@%s st.local.u32 [%s], %s", slow[h], ra, b.k)
		for l, r := range g.leafIndices(lv, cs[h]) {
			g.ins("@%s st.local.u64 [%s+%d], %s", slow[h], ra, 8*(l+1), r)
		}
		g.ins("@%s add.u32 %s, %s, 1", slow[h], b.n, b.n)
		g.ins("add.u32 %s, %s, 1", b.k, b.k)
	}
	// On at the one-element body's batch end, after the second element (its own advance by
	// step follows there).
	g.ins("add.u64 %s, %s, %d", e, e, step)
	g.ins("add.u64 %s, %s, %d", c, c, step)
	g.ins("bra %s", b.tail)
	return nil
}
