package cuda

import "os"

// welford4On makes the kernels of partial (axis) reductions fold a thread's Welford values
// four at a time (GPUNOTES_PTX_WELFORD4=0: one at a time, for measuring): the first three of a
// batch wait in registers, the fourth merges the batch's count, mean and squared deviations
// into the thread's (Chan et al.), one division per four elements where the element-by-element
// update divides for each. A thread's batches follow its own element order, so a kernel
// reading stored data (four elements per pass) and one regenerating them give the same bits.
var welford4On = os.Getenv("GPUNOTES_PTX_WELFORD4") != "0"

// welfordBatch is a thread's pending Welford values: x[0..2] and how many of them are held (k,
// 0 to 3; the values held are the last k of x).
type welfordBatch struct {
	x [3]string
	k string
}

// batchWelford declares and empties the thread's pending values; accumulate then folds
// RWelford values through them, and flushWelford must fold what is left before the partial
// is read.
func (g *gen) batchWelford() {
	b := &welfordBatch{x: [3]string{g.fd(), g.fd(), g.fd()}, k: g.rd()}
	for _, x := range b.x {
		g.ins("mov.f64 %s, %s", x, f64imm(0))
	}
	g.ins("mov.u64 %s, 0", b.k)
	g.welford = b
}

// welfordStep emits the element-by-element Welford update of (wn, wm, wq) by v.
func (g *gen) welfordStep(v, wn, wm, wq string) {
	dd, t := g.fd(), g.fd()
	g.ins("add.rn.f64 %s, %s, %s", wn, wn, f64imm(1))
	g.ins("sub.rn.f64 %s, %s, %s", dd, v, wm)
	g.ins("div.rn.f64 %s, %s, %s", t, dd, wn)
	g.ins("add.rn.f64 %s, %s, %s", wm, wm, t)
	g.ins("sub.rn.f64 %s, %s, %s", t, v, wm)
	g.ins("mul.rn.f64 %s, %s, %s", t, dd, t)
	g.ins("add.rn.f64 %s, %s, %s", wq, wq, t)
}

// welfordBatchStep emits the batched fold of v: held while fewer than three values wait,
// else the batch (x0, x1, x2, v) merged into (wn, wm, wq). Its branch is uniform in a warp
// whose lanes fold their elements together.
func (g *gen) welfordBatchStep(v, wn, wm, wq string) {
	b := g.welford
	merge, done := g.label("wmerge"), g.label("wdone")
	p := g.p()
	g.ins("setp.eq.u64 %s, %s, 3", p, b.k)
	g.ins("@%s bra %s", p, merge)
	g.ins("mov.f64 %s, %s", b.x[0], b.x[1])
	g.ins("mov.f64 %s, %s", b.x[1], b.x[2])
	g.ins("mov.f64 %s, %s", b.x[2], v)
	g.ins("add.u64 %s, %s, 1", b.k, b.k)
	g.ins("bra %s", done)
	g.put(merge)
	// The batch: mean mb = ((x0 + x1) + (x2 + v)) / 4, squared deviations qb from it.
	s, u, mb := g.fd(), g.fd(), g.fd()
	g.ins("add.rn.f64 %s, %s, %s", s, b.x[0], b.x[1])
	g.ins("add.rn.f64 %s, %s, %s", u, b.x[2], v)
	g.ins("add.rn.f64 %s, %s, %s", s, s, u)
	g.ins("mul.rn.f64 %s, %s, %s", mb, s, f64imm(0.25))
	var d [4]string
	for i, x := range []string{b.x[0], b.x[1], b.x[2], v} {
		d[i] = g.fd()
		g.ins("sub.rn.f64 %s, %s, %s", d[i], x, mb)
		g.ins("mul.rn.f64 %s, %s, %s", d[i], d[i], d[i])
	}
	qb := g.fd()
	g.ins("add.rn.f64 %s, %s, %s", d[0], d[0], d[1])
	g.ins("add.rn.f64 %s, %s, %s", d[2], d[2], d[3])
	g.ins("add.rn.f64 %s, %s, %s", qb, d[0], d[2])
	// Chan's merge of (4, mb, qb) into (wn, wm, wq): r = 4 / (wn + 4),
	// wm += (mb - wm) r, wq += qb + (mb - wm)^2 wn r.
	nn, r, dl, t := g.fd(), g.fd(), g.fd(), g.fd()
	g.ins("add.rn.f64 %s, %s, %s", nn, wn, f64imm(4))
	g.ins("div.rn.f64 %s, %s, %s", r, f64imm(4), nn)
	g.ins("sub.rn.f64 %s, %s, %s", dl, mb, wm)
	g.ins("mul.rn.f64 %s, %s, %s", t, dl, r)
	g.ins("add.rn.f64 %s, %s, %s", wm, wm, t)
	g.ins("mul.rn.f64 %s, %s, %s", t, dl, dl)
	g.ins("mul.rn.f64 %s, %s, %s", u, wn, r)
	g.ins("mul.rn.f64 %s, %s, %s", t, t, u)
	g.ins("add.rn.f64 %s, %s, %s", wq, wq, qb)
	g.ins("add.rn.f64 %s, %s, %s", wq, wq, t)
	g.ins("mov.f64 %s, %s", wn, nn)
	g.ins("mov.u64 %s, 0", b.k)
	g.put(done)
}

// flushWelford folds the values still held, in order, one at a time.
func (g *gen) flushWelford(wn, wm, wq string) {
	b := g.welford
	if b == nil {
		return
	}
	for j := range 3 {
		skip := g.label("wflush")
		p := g.p()
		g.ins("setp.lt.u64 %s, %s, %d", p, b.k, 3-j)
		g.ins("@%s bra %s", p, skip)
		g.welfordStep(b.x[j], wn, wm, wq)
		g.put(skip)
	}
	g.ins("mov.u64 %s, 0", b.k)
}
