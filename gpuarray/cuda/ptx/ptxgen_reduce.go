package ptx

import "fmt"

// AxesDescWords returns the 64-bit words of one task's descriptor for a partial reduction of
// rank r with l leaves: dims[r] (kept axes first), the kept count K, the reduced count N, the
// slice count S, the output offset (in partial slots), then for each leaf its buffer address,
// offset and strides[r].
func AxesDescWords(r, l int) int { return r + 4 + l*(r+2) }

// generateAxes writes the PTX of a partial reduction (s.Kept > 0): a task's iteration space
// is (kept index q, reduced index n), q row-major over its first Kept axes and n over the rest.
// Each kept element's run is split into slices walked in order, each slice's partial stored at
// slot outOff + b*K + q for slice b. Block x of the block walk takes kept elements 32j … 32j+31
// (one per lane) and outer slice b, its eight warps eight inner slices merged in order through
// shared memory; a warp of the row walk (Spec.Rows) takes one (q, slice), its lanes every 32nd
// element, merged by shuffles; a thread of the short walk (Spec.Short) takes q = its global
// index (then q plus the grid's threads, …) and the whole run, one slice. Neighbouring threads take neighbouring q: when the
// innermost axis is kept (a column reduction) their leaves read neighbouring elements. The host
// combines the S slices of each q in order, so the bits do not depend on timing or on the GPU.
func generateAxes(s *Spec, lib *Library) (string, string, error) {
	g := &gen{lib: lib, n: map[string]int{}, used: map[string]bool{}, rank: s.Rank, leaves: s.Leaves()}
	name := "gpn_axes_" + s.Key()
	R, L, nk := s.Rank, g.leaves, s.Kept
	words := AxesDescWords(R, L)

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
	exit := g.label("exit")
	pExit := g.p()
	lane := g.rd()
	g.ins("and.b64 %s, %s, 31", lane, tid)
	q, sl, lo, hi := g.rd(), g.rd(), g.rd(), g.rd()
	var active, stride, shortNext string
	if s.Rows {
		// Warp gid/32 takes (q, slice) and its lane the run's elements lane, lane+32, …
		ks, wi := g.rd(), g.rd()
		g.ins("mul.lo.u64 %s, %s, %s", ks, K, S)
		g.ins("shr.u64 %s, %s, 5", wi, gid)
		g.ins("setp.ge.u64 %s, %s, %s", pExit, wi, ks)
		g.ins("@%s bra %s", pExit, exit)
		g.ins("mov.u64 %s, %s", sl, g.divmod(q, wi, K))
		g.ins("mul.lo.u64 %s, %s, %s", t, N, sl)
		g.ins("mov.u64 %s, %s", lo, g.divmod("", t, S))
		g.ins("add.u64 %s, %s, 1", hi, sl)
		g.ins("mul.lo.u64 %s, %s, %s", t, N, hi)
		g.ins("mov.u64 %s, %s", hi, g.divmod("", t, S))
	} else if s.Short {
		// Thread gid takes kept elements gid, gid + stride, … (stride: the grid's threads)
		// and walks each one's whole run (shortNext, below).
		g.ins("mov.u64 %s, %s", q, gid)
		g.ins("mov.u64 %s, 0", sl)
		g.ins("mov.u64 %s, 0", lo)
		nx := g.r()
		stride = g.rd()
		g.ins("mov.u32 %s, %%nctaid.x", nx)
		g.ins("mul.wide.u32 %s, %s, %d", stride, nx, BlockSize)
	} else {
		// Block x takes kept elements 32j … 32j+31 (one per lane) and outer slice b; its warp w
		// walks inner slice 8b+w of the task's 8S slices.
		G, gs, bx64, w, s8, sub := g.rd(), g.rd(), g.rd(), g.rd(), g.rd(), g.rd()
		g.ins("add.u64 %s, %s, 31", G, K)
		g.ins("shr.u64 %s, %s, 5", G, G)
		g.ins("mul.lo.u64 %s, %s, %s", gs, G, S)
		g.ins("cvt.u64.u32 %s, %s", bx64, bx)
		g.ins("setp.ge.u64 %s, %s, %s", pExit, bx64, gs)
		g.ins("@%s bra %s", pExit, exit)
		g.ins("mov.u64 %s, %s", sl, g.divmod(q, bx64, G))
		g.ins("shl.b64 %s, %s, 5", q, q)
		g.ins("add.u64 %s, %s, %s", q, q, lane)
		g.ins("shr.u64 %s, %s, 5", w, tid)
		g.ins("shl.b64 %s, %s, 3", s8, S)
		g.ins("mad.lo.u64 %s, %s, 8, %s", sub, sl, w)
		g.ins("mul.lo.u64 %s, %s, %s", t, N, sub)
		g.ins("mov.u64 %s, %s", lo, g.divmod("", t, s8))
		g.ins("add.u64 %s, %s, 1", hi, sub)
		g.ins("mul.lo.u64 %s, %s, %s", t, N, hi)
		g.ins("mov.u64 %s, %s", hi, g.divmod("", t, s8))
		// Lanes past the last kept element walk nothing but take part in the block's merge.
		active = g.p()
		g.ins("setp.lt.u64 %s, %s, %s", active, q, K)
		g.ins("@!%s mov.u64 %s, %s", active, hi, lo)
	}

	lv := g.loadLeaves(s, d, 8*(R+4))
	if s.Short {
		// Each of the thread's kept elements from here; lanes past the last one walk nothing
		// and store nothing, and go round with their warp.
		next := g.label("shortnext")
		g.put(next)
		shortNext = next
		active = g.p()
		g.ins("mov.u64 %s, %s", hi, N)
		g.ins("setp.lt.u64 %s, %s, %s", active, q, K)
		g.ins("@!%s mov.u64 %s, %s", active, hi, lo)
	}
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
			g.ins("mov.u64 %s, %s", rem, g.divmod(ik, rem, dims[k]))
		}
		for l := range lv {
			g.ins("mad.lo.s64 %s, %s, %s, %s", kb[l], ik, lv[l].str[k], kb[l])
		}
	}
	acc, accI, wn, wm, wq := g.accumulators(s.Reduce)
	g.welfordRcp = opt.Welford == "rcp"
	var ia accum // integer and complex reductions (reduce_lanes.go)
	if s.AccLane() != LaneF {
		var err error
		if ia, err = g.newAccum(s); err != nil {
			return "", "", err
		}
	}
	var dq *deferQueue
	// A short walk does not defer: a batch would end every few elements, and the warp's
	// round for its slow draws cost more than it saved (measured, H100: the reshape row's
	// runs of 2, 30.9 ms deferred, 21.0 not).
	if opt.DeferAxes && opt.Defer && DrawsNormals(s) && !s.Short {
		dq = g.newDeferQueue(s)
	}

	// The reduced index n as (row over the reduced axes but the last, column c of the last).
	n, c, row := g.rd(), g.rd(), g.rd()
	dl := dims[R-1]
	loopEnd, loop := g.label("loopend"), g.label("loop")
	pe := g.p()
	g.ins("mov.u64 %s, %s", n, lo)
	step := 1
	if s.Rows {
		step = 32
		g.ins("add.u64 %s, %s, %s", n, n, lane)
	}
	g.ins("setp.ge.u64 %s, %s, %s", pe, n, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	if s.Short {
		// A short walk starts its run at element 0: row 0, column 0.
		g.ins("mov.u64 %s, 0", row)
		g.ins("mov.u64 %s, 0", c)
	} else {
		g.ins("mov.u64 %s, %s", row, g.divmod(c, n, dl))
	}
	rowBase := func(lv []leafRegs, row string) {
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
				g.ins("mov.u64 %s, %s", r, g.divmod(ik, r, dims[k]))
			}
			for l := range lv {
				g.ins("mad.lo.s64 %s, %s, %s, %s", lv[l].rb, ik, lv[l].str[k], lv[l].rb)
			}
		}
	}
	rowBase(lv, row)
	each := func(ev val, n string) error {
		if ia.l != LaneF {
			return g.accAdd(ia, ev, n)
		}
		v, err := g.reduceValue(s, ev)
		if err != nil {
			return err
		}
		return g.accumulate(s.Reduce, v, n, acc, accI, wn, wm, wq, "", "")
	}
	if dq != nil {
		g.deferStart(dq, n, hi, step)
	}
	g.put(loop)
	check := g.label("check")
	if u := UnrollOf(s); u > 1 {
		single := g.label("single")
		if err := g.unrolled(s, lv, n, c, hi, dl, step, u, single, each); err != nil {
			return "", "", err
		}
		g.ins("bra %s", check)
		g.put(single)
	}
	if dq == nil {
		ev, err := g.elementValue(s, lv, c)
		if err != nil {
			return "", "", err
		}
		if err := each(ev, n); err != nil {
			return "", "", err
		}
	} else if err := g.deferredLoopBody(s, dq, lv, n, c, hi, dl, t, step, rowBase, each); err != nil {
		return "", "", err
	}
	g.ins("add.u64 %s, %s, %d", n, n, step)
	g.ins("add.u64 %s, %s, %d", c, c, step)
	g.put(check)
	g.ins("setp.ge.u64 %s, %s, %s", pe, n, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	pc := g.p()
	g.ins("setp.lt.u64 %s, %s, %s", pc, c, dl)
	g.ins("@%s bra %s", pc, loop)
	if s.Rows {
		g.ins("mov.u64 %s, %s", row, g.divmod(c, n, dl))
	} else {
		g.ins("mov.u64 %s, 0", c)
		g.ins("add.u64 %s, %s, 1", row, row)
	}
	rowBase(lv, row)
	g.ins("bra %s", loop)
	g.put(loopEnd)
	if s.Rows {
		// Lane 0 gathers the warp's partials: lane l takes lane l+o's for o = 16, 8, 4, 2, 1.
		for o := 16; o > 0; o >>= 1 {
			in := g.p()
			g.ins("setp.lt.u64 %s, %s, %d", in, lane, 32-o)
			if ia.l != LaneF {
				g.accMerge(ia, g.accShfl(ia, o), in)
			} else {
				g.warpMerge(s.Reduce, o, in, acc, accI, wn, wm, wq)
			}
		}
		p0 := g.p()
		g.ins("setp.ne.u64 %s, %s, 0", p0, lane)
		g.ins("@%s bra %s", p0, exit)
	} else if s.Short {
		// The thread's partial is its kept element's (one slice, nothing to merge).
		g.ins("@!%s bra %s", active, shortNext+"_store")
	} else {
		// Warp 0 gathers the block's eight inner slices in order through shared memory.
		pw := s.PartialWords()
		g.shared += fmt.Sprintf("\t.shared .align 8 .b8 gpn_axes_part[%d];\n", BlockSize*pw*8)
		base, ad := g.rd(), g.rd()
		g.ins("mov.u64 %s, gpn_axes_part", base)
		g.ins("mul.lo.u64 %s, %s, %d", ad, tid, pw*8)
		g.ins("add.u64 %s, %s, %s", ad, ad, base)
		switch {
		case ia.l != LaneF:
			g.accStore(ia, "shared", ad)
		case s.Reduce == RSum, s.Reduce == RMin, s.Reduce == RMax:
			g.ins("st.shared.f64 [%s], %s", ad, acc)
		case s.Reduce == RArgMin, s.Reduce == RArgMax:
			g.ins("st.shared.f64 [%s], %s", ad, acc)
			g.ins("st.shared.u64 [%s+8], %s", ad, accI)
		case s.Reduce == RWelford:
			g.ins("st.shared.f64 [%s], %s", ad, wn)
			g.ins("st.shared.f64 [%s+8], %s", ad, wm)
			g.ins("st.shared.f64 [%s+16], %s", ad, wq)
		}
		g.ins("bar.sync 0")
		p0 := g.p()
		g.ins("setp.ge.u64 %s, %s, 32", p0, tid)
		g.ins("@%s bra %s", p0, exit)
		for w := 1; w < BlockSize/32; w++ {
			a := g.rd()
			g.ins("add.u64 %s, %s, %d", a, ad, w*32*pw*8)
			if ia.l != LaneF {
				g.accMerge(ia, g.accLoad(ia, "shared", a), "")
				continue
			}
			var v2, i2, n2, m2, q2 string
			switch s.Reduce {
			case RSum, RMin, RMax, RArgMin, RArgMax:
				v2 = g.fd()
				g.ins("ld.shared.f64 %s, [%s]", v2, a)
				if s.Reduce == RArgMin || s.Reduce == RArgMax {
					i2 = g.rd()
					g.ins("ld.shared.u64 %s, [%s+8]", i2, a)
				}
			case RWelford:
				n2, m2, q2 = g.fd(), g.fd(), g.fd()
				g.ins("ld.shared.f64 %s, [%s]", n2, a)
				g.ins("ld.shared.f64 %s, [%s+8]", m2, a)
				g.ins("ld.shared.f64 %s, [%s+16]", q2, a)
			}
			g.merge(s.Reduce, "", acc, accI, wn, wm, wq, v2, i2, n2, m2, q2)
		}
		g.ins("@!%s bra %s", active, exit)
	}

	// The partial: slot outOff + b*K + q, partialWords() words.
	slot, ad := g.rd(), g.rd()
	g.ins("mad.lo.u64 %s, %s, %s, %s", slot, sl, K, q)
	g.ins("add.u64 %s, %s, %s", slot, slot, outOff)
	g.ins("mul.lo.u64 %s, %s, %d", slot, slot, 8*s.PartialWords())
	g.ins("add.u64 %s, %s, %s", ad, out, slot)
	if ia.l != LaneF {
		g.accStore(ia, "global", ad)
	} else {
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
	}
	if s.Short {
		// The next kept element, while the warp's first lane has one.
		g.put(shortNext + "_store")
		first, more := g.rd(), g.p()
		g.ins("add.u64 %s, %s, %s", q, q, stride)
		g.ins("sub.u64 %s, %s, %s", first, q, lane)
		g.ins("setp.lt.u64 %s, %s, %s", more, first, K)
		g.ins("@%s bra %s", more, shortNext)
	}
	g.put(exit)
	g.ins("ret")
	return g.module(s, name), name, nil
}

// divmod emits the unsigned 64-bit division a / b into a new register, which it returns, and
// where rem is not "" the remainder a - (a/b)*b into rem (rem may be a). Operands that both
// fit in 32 bits (task sizes, almost always) take a 32-bit division, as nvcc's code does: a
// 64-bit one is a subroutine of several dozen instructions, paid per thread.
func (g *gen) divmod(rem, a, b string) string {
	quo, t, p := g.rd(), g.rd(), g.p()
	fast, done := g.label("div32"), g.label("divdone")
	g.ins("or.b64 %s, %s, %s", t, a, b)
	g.ins("shr.u64 %s, %s, 32", t, t)
	g.ins("setp.eq.u64 %s, %s, 0", p, t)
	g.ins("@%s bra %s", p, fast)
	g.ins("div.u64 %s, %s, %s", quo, a, b)
	g.ins("bra %s", done)
	g.put(fast)
	a32, b32, q32 := g.r(), g.r(), g.r()
	g.ins("cvt.u32.u64 %s, %s", a32, a)
	g.ins("cvt.u32.u64 %s, %s", b32, b)
	g.ins("div.u32 %s, %s, %s", q32, a32, b32)
	g.ins("cvt.u64.u32 %s, %s", quo, q32)
	g.put(done)
	if rem != "" {
		g.ins("mul.lo.u64 %s, %s, %s", t, quo, b)
		g.ins("sub.u64 %s, %s, %s", rem, a, t)
	}
	return quo
}

// shfl64 returns the f64 or b64 register v of the lane o above (shfl.sync.down on both halves).
func (g *gen) shfl64(v string, o int, f64 bool) string {
	lo, hi, lo2, hi2 := g.r(), g.r(), g.r(), g.r()
	g.ins("mov.b64 {%s, %s}, %s", lo, hi, v)
	g.ins("shfl.sync.down.b32 %s, %s, %d, 31, -1", lo2, lo, o)
	g.ins("shfl.sync.down.b32 %s, %s, %d, 31, -1", hi2, hi, o)
	d := g.rd()
	if f64 {
		d = g.fd()
	}
	g.ins("mov.b64 %s, {%s, %s}", d, lo2, hi2)
	return d
}

// warpMerge merges, in lanes where in holds, the partial of the lane o above into the lane's
// own, as the host's collect and the library's block reductions do.
func (g *gen) warpMerge(r Reduce, o int, in, acc, accI, wn, wm, wq string) {
	var v2, i2, n2, m2, q2 string
	switch r {
	case RSum, RMin, RMax:
		v2 = g.shfl64(acc, o, true)
	case RArgMin, RArgMax:
		v2, i2 = g.shfl64(acc, o, true), g.shfl64(accI, o, false)
	case RWelford:
		n2, m2, q2 = g.shfl64(wn, o, true), g.shfl64(wm, o, true), g.shfl64(wq, o, true)
	}
	g.merge(r, in, acc, accI, wn, wm, wq, v2, i2, n2, m2, q2)
}

// merge merges the partial (v2, i2) or (n2, m2, q2) that covers later elements into the
// thread's own (acc, accI) or (wn, wm, wq), where predicate in holds ("": everywhere).
func (g *gen) merge(r Reduce, in, acc, accI, wn, wm, wq, v2, i2, n2, m2, q2 string) {
	guard := ""
	if in != "" {
		guard = "@" + in + " "
	}
	switch r {
	case RSum:
		g.ins("%sadd.rn.f64 %s, %s, %s", guard, acc, acc, v2)
	case RMin, RMax:
		v := v2
		op := "min"
		if r == RMax {
			op = "max"
		}
		t, p := g.fd(), g.p()
		g.ins("%s.f64 %s, %s, %s", op, t, acc, v)
		g.ins("setp.nan.f64 %s, %s, %s", p, acc, v)
		g.ins("@%s add.f64 %s, %s, %s", p, t, acc, v)
		g.ins("%smov.f64 %s, %s", guard, acc, t)
	case RArgMin, RArgMax:
		has2, none1, n1, n2, ilt, anyn, nn1, t1, nanTake, eq, eqTake, strict, numTake, na, take := g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p(), g.p()
		g.ins("setp.ge.s64 %s, %s, 0", has2, i2)
		g.ins("setp.lt.s64 %s, %s, 0", none1, accI)
		g.ins("setp.nan.f64 %s, %s, %s", n1, acc, acc)
		g.ins("setp.nan.f64 %s, %s, %s", n2, v2, v2)
		g.ins("setp.lt.s64 %s, %s, %s", ilt, i2, accI)
		// NaN involved: take v2 if it is NaN and (acc is not, or comes later).
		g.ins("or.pred %s, %s, %s", anyn, n1, n2)
		g.ins("not.pred %s, %s", nn1, n1)
		g.ins("or.pred %s, %s, %s", t1, nn1, ilt)
		g.ins("and.pred %s, %s, %s", nanTake, n2, t1)
		// Numbers: strictly better, or equal with a smaller index.
		cmp := "lt"
		if r == RArgMax {
			cmp = "gt"
		}
		g.ins("setp.eq.f64 %s, %s, %s", eq, v2, acc)
		g.ins("and.pred %s, %s, %s", eqTake, eq, ilt)
		g.ins("setp.%s.f64 %s, %s, %s", cmp, strict, v2, acc)
		g.ins("or.pred %s, %s, %s", numTake, eqTake, strict)
		g.ins("and.pred %s, %s, %s", nanTake, nanTake, anyn)
		g.ins("not.pred %s, %s", na, anyn)
		g.ins("and.pred %s, %s, %s", numTake, numTake, na)
		g.ins("or.pred %s, %s, %s", take, nanTake, numTake)
		g.ins("or.pred %s, %s, %s", take, take, none1)
		g.ins("and.pred %s, %s, %s", take, take, has2)
		if in != "" {
			g.ins("and.pred %s, %s, %s", take, take, in)
		}
		g.ins("@%s mov.f64 %s, %s", take, acc, v2)
		g.ins("@%s mov.u64 %s, %s", take, accI, i2)
	case RWelford:
		has2, zero1 := g.p(), g.p()
		g.ins("setp.neu.f64 %s, %s, %s", has2, n2, f64imm(0))
		if in != "" {
			g.ins("and.pred %s, %s, %s", has2, has2, in)
		}
		g.ins("setp.eq.f64 %s, %s, %s", zero1, wn, f64imm(0))
		nn, d, t, mm, qq, u := g.fd(), g.fd(), g.fd(), g.fd(), g.fd(), g.fd()
		g.ins("add.rn.f64 %s, %s, %s", nn, wn, n2)
		g.ins("sub.rn.f64 %s, %s, %s", d, m2, wm)
		g.ins("div.rn.f64 %s, %s, %s", t, n2, nn)
		g.ins("mul.rn.f64 %s, %s, %s", t, d, t)
		g.ins("add.rn.f64 %s, %s, %s", mm, wm, t)
		g.ins("add.rn.f64 %s, %s, %s", qq, wq, q2)
		g.ins("mul.rn.f64 %s, %s, %s", t, d, d)
		g.ins("mul.rn.f64 %s, %s, %s", u, wn, n2)
		g.ins("div.rn.f64 %s, %s, %s", u, u, nn)
		g.ins("mul.rn.f64 %s, %s, %s", t, t, u)
		g.ins("add.rn.f64 %s, %s, %s", qq, qq, t)
		g.ins("@%s mov.f64 %s, %s", zero1, nn, n2)
		g.ins("@%s mov.f64 %s, %s", zero1, mm, m2)
		g.ins("@%s mov.f64 %s, %s", zero1, qq, q2)
		g.ins("@%s mov.f64 %s, %s", has2, wn, nn)
		g.ins("@%s mov.f64 %s, %s", has2, wm, mm)
		g.ins("@%s mov.f64 %s, %s", has2, wq, qq)
	}
}
