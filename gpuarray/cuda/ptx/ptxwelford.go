package ptx

// welfordStep emits the element-by-element Welford update of (wn, wm, wq) by v: the
// deviation divided by the count (rcp false), or multiplied by its reciprocal.
func (g *gen) welfordStep(v, wn, wm, wq string, rcp bool) {
	dd, t := g.fd(), g.fd()
	g.ins("add.rn.f64 %s, %s, %s", wn, wn, f64imm(1))
	g.ins("sub.rn.f64 %s, %s, %s", dd, v, wm)
	if rcp {
		inv := g.fd()
		g.ins("rcp.rn.f64 %s, %s", inv, wn)
		g.ins("mul.rn.f64 %s, %s, %s", t, dd, inv)
	} else {
		g.ins("div.rn.f64 %s, %s, %s", t, dd, wn)
	}
	g.ins("add.rn.f64 %s, %s, %s", wm, wm, t)
	g.ins("sub.rn.f64 %s, %s, %s", t, v, wm)
	g.ins("mul.rn.f64 %s, %s, %s", t, dd, t)
	g.ins("add.rn.f64 %s, %s, %s", wq, wq, t)
}
