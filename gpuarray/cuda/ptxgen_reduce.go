package cuda

import "fmt"

// axesDescWords returns the 64-bit words of one task's descriptor for a partial reduction of
// rank r with l leaves: dims[r] (kept axes first), the kept count K, the reduced count N, the
// slice count S, the output offset (in partial slots), then for each leaf its buffer address,
// offset and strides[r].
func axesDescWords(r, l int) int { return r + 4 + l*(r+2) }

// generateAxes writes the PTX of a partial reduction (s.Kept > 0): a task's iteration space
// is (kept index q, reduced index n), q row-major over its first Kept axes and n over the rest.
// Thread g of a task (blockIdx.x*BlockSize + threadIdx.x) takes q = g mod K and slice
// b = g div K, walks n over the slice's range [N*b/S, N*(b+1)/S) in order, and stores its partial
// at slot outOff + b*K + q. Neighbouring threads take neighbouring q: when the innermost axis is
// kept (a column reduction) their leaves read neighbouring elements. The host combines the S
// slices of each q in order, so the bits do not depend on timing or on the GPU.
func generateAxes(s *Spec, lib *library) (string, string, error) {
	g := &gen{lib: lib, n: map[string]int{}, used: map[string]bool{}, rank: s.Rank, leaves: s.Leaves()}
	name := "gpn_axes_" + s.Key()
	R, L, nk := s.Rank, g.leaves, s.Kept
	words := axesDescWords(R, L)

	desc, out := g.rd(), g.rd()
	g.ins("ld.param.u64 %s, [desc]", desc)
	g.ins("ld.param.u64 %s, [out]", out)
	g.ins("cvta.to.global.u64 %s, %s", desc, desc)
	g.ins("cvta.to.global.u64 %s, %s", out, out)
	ty, bx, tid32 := g.r(), g.r(), g.r()
	g.ins("mov.u32 %s, %%ctaid.y", ty)
	g.ins("mov.u32 %s, %%ctaid.x", bx)
	g.ins("mov.u32 %s, %%tid.x", tid32)
	d, t := g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", t, ty, words*8)
	g.ins("add.u64 %s, %s, %s", d, desc, t)
	dims := make([]string, R)
	for k := range dims {
		dims[k] = g.rd()
		g.ins("ld.global.nc.u64 %s, [%s+%d]", dims[k], d, 8*k)
	}
	K, N, S, outOff := g.rd(), g.rd(), g.rd(), g.rd()
	g.ins("ld.global.nc.u64 %s, [%s+%d]", K, d, 8*R)
	g.ins("ld.global.nc.u64 %s, [%s+%d]", N, d, 8*(R+1))
	g.ins("ld.global.nc.u64 %s, [%s+%d]", S, d, 8*(R+2))
	g.ins("ld.global.nc.u64 %s, [%s+%d]", outOff, d, 8*(R+3))
	gid, tid := g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", gid, bx, BlockSize)
	g.ins("cvt.u64.u32 %s, %s", tid, tid32)
	g.ins("add.u64 %s, %s, %s", gid, gid, tid)
	ks := g.rd()
	g.ins("mul.lo.u64 %s, %s, %s", ks, K, S)
	exit := g.label("exit")
	pExit := g.p()
	g.ins("setp.ge.u64 %s, %s, %s", pExit, gid, ks)
	g.ins("@%s bra %s", pExit, exit)
	q, sl := g.rd(), g.rd()
	g.ins("rem.u64 %s, %s, %s", q, gid, K)
	g.ins("div.u64 %s, %s, %s", sl, gid, K)
	lo, hi := g.rd(), g.rd()
	g.ins("mul.lo.u64 %s, %s, %s", t, N, sl)
	g.ins("div.u64 %s, %s, %s", lo, t, S)
	g.ins("add.u64 %s, %s, 1", hi, sl)
	g.ins("mul.lo.u64 %s, %s, %s", t, N, hi)
	g.ins("div.u64 %s, %s, %s", hi, t, S)

	lv := g.loadLeaves(s, d, 8*(R+4))
	// The kept index's part of each leaf's index, once per thread.
	kb := make([]string, L)
	for l := range lv {
		kb[l] = g.rd()
		g.ins("mov.u64 %s, %s", kb[l], lv[l].off)
	}
	rem := g.rd()
	g.ins("mov.u64 %s, %s", rem, q)
	for k := nk - 1; k >= 0; k-- {
		ik := g.rd()
		if k == 0 {
			g.ins("mov.u64 %s, %s", ik, rem)
		} else {
			g.ins("rem.u64 %s, %s, %s", ik, rem, dims[k])
			g.ins("div.u64 %s, %s, %s", rem, rem, dims[k])
		}
		for l := range lv {
			g.ins("mad.lo.s64 %s, %s, %s, %s", kb[l], ik, lv[l].str[k], kb[l])
		}
	}
	acc, accI, wn, wm, wq := g.accumulators(s.Reduce)

	// The reduced index n as (row over the reduced axes but the last, column c of the last).
	n, c, row := g.rd(), g.rd(), g.rd()
	dl := dims[R-1]
	loopEnd, loop := g.label("loopend"), g.label("loop")
	pe := g.p()
	g.ins("setp.ge.u64 %s, %s, %s", pe, lo, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	g.ins("mov.u64 %s, %s", n, lo)
	g.ins("div.u64 %s, %s, %s", row, n, dl)
	g.ins("mul.lo.u64 %s, %s, %s", t, row, dl)
	g.ins("sub.u64 %s, %s, %s", c, n, t)
	rowBase := func() {
		for l := range lv {
			g.ins("mov.u64 %s, %s", lv[l].rb, kb[l])
		}
		r := g.rd()
		g.ins("mov.u64 %s, %s", r, row)
		for k := R - 2; k >= nk; k-- {
			ik := g.rd()
			if k == nk {
				g.ins("mov.u64 %s, %s", ik, r)
			} else {
				g.ins("rem.u64 %s, %s, %s", ik, r, dims[k])
				g.ins("div.u64 %s, %s, %s", r, r, dims[k])
			}
			for l := range lv {
				g.ins("mad.lo.s64 %s, %s, %s, %s", lv[l].rb, ik, lv[l].str[k], lv[l].rb)
			}
		}
	}
	rowBase()
	g.put(loop)
	idx := make([]string, L)
	for l := range lv {
		idx[l] = g.rd()
		g.ins("mad.lo.s64 %s, %s, %s, %s", idx[l], c, lv[l].str[R-1], lv[l].rb)
	}
	vals := make([]string, len(s.Nodes))
	for i := range s.Nodes {
		v, err := g.node(s, i, vals, idx)
		if err != nil {
			return "", "", err
		}
		vals[i] = v
	}
	if err := g.accumulate(s.Reduce, vals[len(vals)-1], n, acc, accI, wn, wm, wq, "", ""); err != nil {
		return "", "", err
	}
	g.ins("add.u64 %s, %s, 1", n, n)
	g.ins("setp.ge.u64 %s, %s, %s", pe, n, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	g.ins("add.u64 %s, %s, 1", c, c)
	pc := g.p()
	g.ins("setp.lt.u64 %s, %s, %s", pc, c, dl)
	g.ins("@%s bra %s", pc, loop)
	g.ins("mov.u64 %s, 0", c)
	g.ins("add.u64 %s, %s, 1", row, row)
	rowBase()
	g.ins("bra %s", loop)
	g.put(loopEnd)

	// The partial: slot outOff + b*K + q, Reduce.words() words.
	slot, ad := g.rd(), g.rd()
	g.ins("mad.lo.u64 %s, %s, %s, %s", slot, sl, K, q)
	g.ins("add.u64 %s, %s, %s", slot, slot, outOff)
	g.ins("mul.lo.u64 %s, %s, %d", slot, slot, 8*s.Reduce.words())
	g.ins("add.u64 %s, %s, %s", ad, out, slot)
	switch s.Reduce {
	case RSum, RMin, RMax:
		g.ins("st.global.f64 [%s], %s", ad, acc)
	case RArgMin, RArgMax:
		g.ins("st.global.f64 [%s], %s", ad, acc)
		g.ins("st.global.u64 [%s+8], %s", ad, accI)
	case RWelford:
		g.ins("st.global.f64 [%s], %s", ad, wn)
		g.ins("st.global.f64 [%s+8], %s", ad, wm)
		g.ins("st.global.f64 [%s+16], %s", ad, wq)
	default:
		return "", "", fmt.Errorf("kernel spec: partial reduction %v", s.Reduce)
	}
	g.put(exit)
	g.ins("ret")
	return g.module(s, name), name, nil
}
