package ptx

import "os"

// WelfordMode picks how the kernels of partial (axis) reductions fold a thread's Welford
// values (GPUNOTES_PTX_WELFORD, for measuring): "div" divides the deviation by the count for
// each element; "rcp" (the default) multiplies it by the count's reciprocal (rcp.rn, correctly
// rounded), as the CPU executor does (mean += d * (1/c)): four fewer registers than "div" in
// the axis kernels. Batches of values merged with one division each (Chan et al.) were
// measured and dropped: a batch of four held in registers took the axis kernel from 120 to
// 136 registers and one block per SM (std(axis=0) 19.3 -> 27.2 ms on an H100), pairs gained
// nothing measurable (bench/RESULTS.md).
var WelfordMode = func() string {
	if os.Getenv("GPUNOTES_PTX_WELFORD") == "div" {
		return "div"
	}
	return "rcp"
}()

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
