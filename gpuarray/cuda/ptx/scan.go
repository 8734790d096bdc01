package ptx

import (
	"fmt"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// scanUnroll is how many elements a thread of the thread-per-line walk loads at once.
const scanUnroll = 4

// ScanPTX generates the scan kernel of dtype dt (its words as EncodeWords writes them) and op:
// seg selects the segmented walk. Parameters, all u64:
//   - thread per line: buf, outer, n, inner, tot (0: none; else each line's total goes there),
//     last (1: leave buf as it is, only the totals are wanted);
//   - segmented: buf, outer, n, inner, segs, cin (0: none; else each segment's carry, in
//     segment order, for segments 1..segs-1 of each line), tout (0: none; else each segment's
//     total), store (0: scan without storing).
func ScanPTX(version, target string, dt dtype.DType, op expr.Op, seg bool) (string, string, error) {
	g := &gen{lib: &Library{version: version, target: target, protos: map[string]libProto{}}, n: map[string]int{}, used: map[string]bool{}}
	name := ScanName(dt, op, seg)
	params := []string{"buf", "outer", "n", "inner", "tot", "last"}
	if seg {
		params = []string{"buf", "outer", "n", "inner", "segs", "cin", "tout", "store"}
	}
	p := map[string]string{}
	for _, name := range params {
		p[name] = g.rd()
		g.ins("ld.param.u64 %s, [%s]", p[name], name)
	}
	g.ins("cvta.to.global.u64 %s, %s", p["buf"], p["buf"])
	ws := int64(8 * Words(dt))
	apply := func(x, y val) (val, error) {
		v, err := g.binary(&Node{Kind: NBinary, Op: op, DType: dt}, x, y, dt)
		if err != nil {
			return val{}, err
		}
		return g.finish(dt, v), nil
	}
	bx, tx := g.r(), g.r()
	g.ins("mov.u32 %s, %%ctaid.x", bx)
	g.ins("mov.u32 %s, %%tid.x", tx)
	gid, t := g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", gid, bx, BlockSize)
	g.ins("cvt.u64.u32 %s, %s", t, tx)
	g.ins("add.u64 %s, %s, %s", gid, gid, t)
	exit := g.label("exit")
	lines := g.rd()
	g.ins("mul.lo.u64 %s, %s, %s", lines, p["outer"], p["inner"])
	// base: the address of element 0 of line ln; step: the bytes between its elements.
	lineBase := func(ln string) (string, string) {
		o, i, base, step := g.rd(), g.rd(), g.rd(), g.rd()
		g.ins("div.u64 %s, %s, %s", o, ln, p["inner"])
		g.ins("mul.lo.u64 %s, %s, %s", t, o, p["inner"])
		g.ins("sub.u64 %s, %s, %s", i, ln, t)
		g.ins("mul.lo.u64 %s, %s, %s", base, o, p["n"])
		g.ins("mul.lo.u64 %s, %s, %s", base, base, p["inner"])
		g.ins("add.u64 %s, %s, %s", base, base, i)
		g.ins("mad.lo.u64 %s, %s, %d, %s", base, base, ws, p["buf"])
		g.ins("mul.lo.u64 %s, %s, %d", step, p["inner"], ws)
		return base, step
	}
	pe := g.p()
	if !seg {
		g.ins("setp.ge.u64 %s, %s, %s", pe, gid, lines)
		g.ins("@%s bra %s", pe, exit)
		ad, step := lineBase(gid)
		acc := scanLoad(g, dt, ad, "")
		k := g.rd()
		g.ins("mov.u64 %s, 1", k)
		loop, end, skip, single := g.label("loop"), g.label("end"), g.label("skip"), g.label("single")
		pl := g.p()
		g.ins("setp.ne.u64 %s, %s, 0", pl, p["last"])
		g.put(loop)
		// scanUnroll elements at once where the line has them: their loads first, then the
		// ops in order (the same bits), so that a thread has several loads in flight.
		k4 := g.rd()
		g.ins("add.u64 %s, %s, %d", k4, k, scanUnroll-1)
		g.ins("setp.ge.u64 %s, %s, %s", pe, k4, p["n"])
		g.ins("@%s bra %s", pe, single)
		ads, vs := make([]string, scanUnroll), make([]val, scanUnroll)
		for u := range ads {
			ads[u] = g.rd()
			prev := ad
			if u > 0 {
				prev = ads[u-1]
			}
			g.ins("add.u64 %s, %s, %s", ads[u], prev, step)
			vs[u] = scanLoad(g, dt, ads[u], "")
		}
		for u := range ads {
			v, err := apply(acc, vs[u])
			if err != nil {
				return "", "", err
			}
			scanMove(g, acc, v, "")
			scanStore(g, acc, ads[u], "!"+pl)
		}
		g.ins("mov.u64 %s, %s", ad, ads[scanUnroll-1])
		g.ins("add.u64 %s, %s, %d", k, k, scanUnroll)
		g.ins("bra %s", loop)
		g.put(single)
		g.ins("setp.ge.u64 %s, %s, %s", pe, k, p["n"])
		g.ins("@%s bra %s", pe, end)
		g.ins("add.u64 %s, %s, %s", ad, ad, step)
		v, err := apply(acc, scanLoad(g, dt, ad, ""))
		if err != nil {
			return "", "", err
		}
		scanMove(g, acc, v, "")
		g.ins("@%s bra %s", pl, skip)
		scanStore(g, acc, ad, "")
		g.put(skip)
		g.ins("add.u64 %s, %s, 1", k, k)
		g.ins("bra %s", loop)
		g.put(end)
		pt := g.p()
		g.ins("setp.eq.u64 %s, %s, 0", pt, p["tot"])
		g.ins("@%s bra %s", pt, exit)
		ta := g.rd()
		g.ins("cvta.to.global.u64 %s, %s", ta, p["tot"])
		g.ins("mad.lo.u64 %s, %s, %d, %s", ta, gid, ws, ta)
		scanStore(g, acc, ta, "")
	} else {
		wid, lane, nw := g.rd(), g.rd(), g.rd()
		g.ins("shr.u64 %s, %s, 5", wid, gid)
		g.ins("and.b64 %s, %s, 31", lane, gid)
		g.ins("mul.lo.u64 %s, %s, %s", nw, lines, p["segs"])
		g.ins("setp.ge.u64 %s, %s, %s", pe, wid, nw)
		g.ins("@%s bra %s", pe, exit)
		ln, sg := g.rd(), g.rd()
		g.ins("div.u64 %s, %s, %s", ln, wid, p["segs"])
		g.ins("mul.lo.u64 %s, %s, %s", t, ln, p["segs"])
		g.ins("sub.u64 %s, %s, %s", sg, wid, t)
		base, step := lineBase(ln)
		lo, hi := g.rd(), g.rd()
		g.ins("mul.lo.u64 %s, %s, %s", t, p["n"], sg)
		g.ins("div.u64 %s, %s, %s", lo, t, p["segs"])
		g.ins("add.u64 %s, %s, 1", hi, sg)
		g.ins("mul.lo.u64 %s, %s, %s", t, p["n"], hi)
		g.ins("div.u64 %s, %s, %s", hi, t, p["segs"])
		// The carry into the segment: none for the first, else cin's.
		has, ca := g.p(), g.rd()
		g.ins("setp.ne.u64 %s, %s, 0", has, p["cin"])
		pz := g.p()
		g.ins("setp.ne.u64 %s, %s, 0", pz, sg)
		g.ins("and.pred %s, %s, %s", has, has, pz)
		g.ins("cvta.to.global.u64 %s, %s", ca, p["cin"])
		g.ins("mad.lo.u64 %s, %s, %d, %s", ca, wid, ws, ca)
		cv := scanZero(g, dt)
		scanMove(g, cv, scanLoad(g, dt, ca, has), has)
		pst := g.p()
		g.ins("setp.ne.u64 %s, %s, 0", pst, p["store"])
		loop, end := g.label("tile"), g.label("tiled")
		tt := g.rd()
		g.ins("mov.u64 %s, %s", tt, lo)
		g.put(loop)
		g.ins("setp.ge.u64 %s, %s, %s", pe, tt, hi)
		g.ins("@%s bra %s", pe, end)
		idx, ad, valid := g.rd(), g.rd(), g.p()
		g.ins("add.u64 %s, %s, %s", idx, tt, lane)
		g.ins("setp.lt.u64 %s, %s, %s", valid, idx, hi)
		g.ins("mad.lo.u64 %s, %s, %s, %s", ad, idx, step, base)
		v := scanZero(g, dt)
		scanMove(g, v, scanLoad(g, dt, ad, valid), valid)
		// Inclusive scan of the tile: lane l takes lane l-o's value for o = 1, 2, 4, 8, 16.
		for o := 1; o < 32; o <<= 1 {
			y := scanShfl(g, v, "up", fmt.Sprint(o), 0)
			r, err := apply(y, v)
			if err != nil {
				return "", "", err
			}
			in := g.p()
			g.ins("setp.ge.u64 %s, %s, %d", in, lane, o)
			scanMove(g, v, r, in)
		}
		r, err := apply(cv, v)
		if err != nil {
			return "", "", err
		}
		scanMove(g, v, r, has)
		sv := g.p()
		g.ins("and.pred %s, %s, %s", sv, valid, pst)
		scanStore(g, v, ad, sv)
		// The carry out: the last valid lane's value.
		ll, ll32 := g.rd(), g.r()
		g.ins("sub.u64 %s, %s, %s", ll, hi, tt)
		g.ins("sub.u64 %s, %s, 1", ll, ll)
		g.ins("min.u64 %s, %s, 31", ll, ll)
		g.ins("cvt.u32.u64 %s, %s", ll32, ll)
		scanMove(g, cv, scanShfl(g, v, "idx", ll32, 31), "")
		g.ins("setp.eq.u64 %s, %s, %s", has, lane, lane) // true from now on
		g.ins("add.u64 %s, %s, 32", tt, tt)
		g.ins("bra %s", loop)
		g.put(end)
		pt := g.p()
		g.ins("setp.eq.u64 %s, %s, 0", pt, p["tout"])
		g.ins("@%s bra %s", pt, exit)
		g.ins("setp.ne.u64 %s, %s, 0", pt, lane)
		g.ins("@%s bra %s", pt, exit)
		ta := g.rd()
		g.ins("cvta.to.global.u64 %s, %s", ta, p["tout"])
		g.ins("mad.lo.u64 %s, %s, %d, %s", ta, wid, ws, ta)
		scanStore(g, cv, ta, "")
	}
	g.put(exit)
	g.ins("ret")
	if len(g.usedList) > 0 {
		return "", "", fmt.Errorf("cuda: the scan of %v calls the device library (%v; internal)", dt, g.usedList)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by gpunotes (gpuarray/cuda/scan.go).\n.version %s\n.target %s\n.address_size 64\n\n", version, target)
	fmt.Fprintf(&b, ".visible .entry %s(\n", name)
	for i, pn := range params {
		sep := ","
		if i == len(params)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "\t.param .u64 %s%s\n", pn, sep)
	}
	fmt.Fprintf(&b, ")\n.maxntid %d, 1, 1\n{\n", BlockSize)
	for _, pre := range []string{"p", "r", "rd", "f", "fd"} {
		if n := g.n[pre]; n > 0 {
			typ := map[string]string{"p": ".pred", "r": ".b32", "rd": ".b64", "f": ".f32", "fd": ".f64"}[pre]
			fmt.Fprintf(&b, "\t.reg %s %%%s<%d>;\n", typ, pre, n+1)
		}
	}
	b.WriteString(g.body.String())
	b.WriteString("}\n")
	return b.String(), name, nil
}

func ScanName(dt dtype.DType, op expr.Op, seg bool) string {
	walk := "lines"
	if seg {
		walk = "segments"
	}
	return fmt.Sprintf("gpn_scan_%s_%s_%s", dt, map[expr.Op]string{expr.OpAdd: "sum", expr.OpMul: "prod"}[op], walk)
}

// scanZero returns fresh registers for a value of dt, set to zero.
func scanZero(g *gen, dt dtype.DType) val {
	switch LaneOf(dt) {
	case LaneI:
		v := val{l: LaneI, r: g.rd()}
		g.ins("mov.b64 %s, 0", v.r)
		return v
	case LaneC:
		v := val{l: LaneC, r: g.fd(), im: g.fd()}
		g.ins("mov.f64 %s, %s", v.r, f64imm(0))
		g.ins("mov.f64 %s, %s", v.im, f64imm(0))
		return v
	}
	v := val{l: LaneF, r: g.fd()}
	g.ins("mov.f64 %s, %s", v.r, f64imm(0))
	return v
}

// guarded returns the predicate prefix of an instruction guarded by p ("": none).
func guarded(p string) string {
	if p == "" {
		return ""
	}
	return "@" + p + " "
}

// scanLoad loads a value of dt from global address ad (where p holds) into fresh registers.
func scanLoad(g *gen, dt dtype.DType, ad, p string) val { return spaceLoad(g, "global", dt, ad, p) }

// scanStore stores v at global address ad where p holds.
func scanStore(g *gen, v val, ad, p string) { spaceStore(g, "global", v, ad, p) }

// spaceLoad loads a value of dt from address ad of state space sp (global, shared) where p
// holds, into fresh registers.
func spaceLoad(g *gen, sp string, dt dtype.DType, ad, p string) val {
	v := scanZero(g, dt)
	switch v.l {
	case LaneI:
		g.ins("%sld.%s.u64 %s, [%s]", guarded(p), sp, v.r, ad)
	case LaneC:
		g.ins("%sld.%s.f64 %s, [%s]", guarded(p), sp, v.r, ad)
		g.ins("%sld.%s.f64 %s, [%s+8]", guarded(p), sp, v.im, ad)
	default:
		g.ins("%sld.%s.f64 %s, [%s]", guarded(p), sp, v.r, ad)
	}
	return v
}

// spaceStore stores v at address ad of state space sp where p holds.
func spaceStore(g *gen, sp string, v val, ad, p string) {
	switch v.l {
	case LaneI:
		g.ins("%sst.%s.u64 [%s], %s", guarded(p), sp, ad, v.r)
	case LaneC:
		g.ins("%sst.%s.f64 [%s], %s", guarded(p), sp, ad, v.r)
		g.ins("%sst.%s.f64 [%s+8], %s", guarded(p), sp, ad, v.im)
	default:
		g.ins("%sst.%s.f64 [%s], %s", guarded(p), sp, ad, v.r)
	}
}

// scanMove copies v's registers into dst's where p holds.
func scanMove(g *gen, dst, v val, p string) {
	g.ins("%smov.b64 %s, %s", guarded(p), dst.r, v.r)
	if v.l == LaneC {
		g.ins("%smov.b64 %s, %s", guarded(p), dst.im, v.im)
	}
}

// scanShfl returns v as lane b of the warp sees it by shfl.sync mode ("up": lane-b, "idx":
// lane b), c its clamp operand.
func scanShfl(g *gen, v val, mode, b string, c int) val {
	one := func(r string, f64 bool) string {
		lo, hi, lo2, hi2 := g.r(), g.r(), g.r(), g.r()
		g.ins("mov.b64 {%s, %s}, %s", lo, hi, r)
		g.ins("shfl.sync.%s.b32 %s, %s, %s, %d, -1", mode, lo2, lo, b, c)
		g.ins("shfl.sync.%s.b32 %s, %s, %s, %d, -1", mode, hi2, hi, b, c)
		o := g.rd()
		if f64 {
			o = g.fd()
		}
		g.ins("mov.b64 %s, {%s, %s}", o, lo2, hi2)
		return o
	}
	o := val{l: v.l, r: one(v.r, v.l != LaneI)}
	if v.l == LaneC {
		o.im = one(v.im, true)
	}
	return o
}
