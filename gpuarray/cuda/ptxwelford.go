package cuda

import "os"

// welfordMode picks how the kernels of partial (axis) reductions fold a thread's Welford
// values (GPUNOTES_PTX_WELFORD, for measuring): "div" divides by the count for each element;
// "rcp" multiplies by the count's reciprocal (rcp.rn, correctly rounded, as the CPU executor
// does: mean += d * (1/c)); "2" and "4" hold values in registers and merge each batch's count,
// mean and squared deviations into the thread's (Chan et al.), one division per batch. A
// thread's folds follow its own element order, so a kernel reading stored data (four elements
// per pass) and one regenerating them give the same bits.
var welfordMode = func() string {
	switch m := os.Getenv("GPUNOTES_PTX_WELFORD"); m {
	case "div", "rcp", "2", "4":
		return m
	}
	return "rcp"
}()

// welfordBatch is a thread's pending Welford values: x (a batch less one) and how many of
// them are held (k; the values held are the last k of x).
type welfordBatch struct {
	x   []string
	k   string
	rcp bool // no batch: each value folded alone with the count's reciprocal
}

// batchWelford declares and empties the thread's pending values; accumulate then folds
// RWelford values through them, and flushWelford must fold what is left before the partial
// is read.
func (g *gen) batchWelford() {
	switch welfordMode {
	case "div":
		return
	case "rcp":
		g.welford = &welfordBatch{rcp: true}
		return
	}
	b := &welfordBatch{k: g.rd()}
	for range map[string]int{"2": 1, "4": 3}[welfordMode] {
		b.x = append(b.x, g.fd())
		g.ins("mov.f64 %s, %s", b.x[len(b.x)-1], f64imm(0))
	}
	g.ins("mov.u64 %s, 0", b.k)
	g.welford = b
}

// welfordRcpStep emits the element-by-element update of (wn, wm, wq) by v with the count's
// reciprocal, the CPU executor's steps.
func (g *gen) welfordRcpStep(v, wn, wm, wq string) {
	dd, t, inv := g.fd(), g.fd(), g.fd()
	g.ins("add.rn.f64 %s, %s, %s", wn, wn, f64imm(1))
	g.ins("rcp.rn.f64 %s, %s", inv, wn)
	g.ins("sub.rn.f64 %s, %s, %s", dd, v, wm)
	g.ins("mul.rn.f64 %s, %s, %s", t, dd, inv)
	g.ins("add.rn.f64 %s, %s, %s", wm, wm, t)
	g.ins("sub.rn.f64 %s, %s, %s", t, v, wm)
	g.ins("mul.rn.f64 %s, %s, %s", t, dd, t)
	g.ins("add.rn.f64 %s, %s, %s", wq, wq, t)
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
	if b.rcp {
		g.welfordRcpStep(v, wn, wm, wq)
		return
	}
	h := len(b.x)
	merge, done := g.label("wmerge"), g.label("wdone")
	p := g.p()
	g.ins("setp.eq.u64 %s, %s, %d", p, b.k, h)
	g.ins("@%s bra %s", p, merge)
	for i := 0; i+1 < h; i++ {
		g.ins("mov.f64 %s, %s", b.x[i], b.x[i+1])
	}
	g.ins("mov.f64 %s, %s", b.x[h-1], v)
	g.ins("add.u64 %s, %s, 1", b.k, b.k)
	g.ins("bra %s", done)
	g.put(merge)
	// The batch of B = h+1 values: mean mb (a pairwise sum times 1/B, exact for B = 2 or 4),
	// squared deviations qb from it.
	xs := append(append([]string{}, b.x...), v)
	B := len(xs)
	sum := func(regs []string) string {
		for len(regs) > 1 {
			var next []string
			for i := 0; i < len(regs); i += 2 {
				r := g.fd()
				g.ins("add.rn.f64 %s, %s, %s", r, regs[i], regs[i+1])
				next = append(next, r)
			}
			regs = next
		}
		return regs[0]
	}
	mb := g.fd()
	g.ins("mul.rn.f64 %s, %s, %s", mb, sum(xs), f64imm(1/float64(B)))
	var d []string
	for _, x := range xs {
		r := g.fd()
		g.ins("sub.rn.f64 %s, %s, %s", r, x, mb)
		g.ins("mul.rn.f64 %s, %s, %s", r, r, r)
		d = append(d, r)
	}
	qb := sum(d)
	// Chan's merge of (B, mb, qb) into (wn, wm, wq): r = B / (wn + B),
	// wm += (mb - wm) r, wq += qb + (mb - wm)^2 wn r.
	nn, r, dl, t, u := g.fd(), g.fd(), g.fd(), g.fd(), g.fd()
	g.ins("add.rn.f64 %s, %s, %s", nn, wn, f64imm(float64(B)))
	g.ins("div.rn.f64 %s, %s, %s", r, f64imm(float64(B)), nn)
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
	if b == nil || b.rcp {
		return
	}
	h := len(b.x)
	for j := range h {
		skip := g.label("wflush")
		p := g.p()
		g.ins("setp.lt.u64 %s, %s, %d", p, b.k, h-j)
		g.ins("@%s bra %s", p, skip)
		g.welfordStep(b.x[j], wn, wm, wq)
		g.put(skip)
	}
	g.ins("mov.u64 %s, 0", b.k)
}
