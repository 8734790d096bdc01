package cuda

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Cumulative sums and products on the GPU (expr.FnCumSum, FnCumProd, and FnProd, the product
// along an axis). The planner brings the scanned axis into one chunk; a task's values are
// computed by the fused kernel in the result's dtype and left on the device, then scanned there
// in place by a generated kernel, line by line (a line: the elements along the axis at one
// index of the other axes), with the CPU's ops (Go's integer wrap-around, float32 and complex64
// rounding after each op, complex products as Go computes them).
//
// Two walks:
//   - many lines (at least scanMinLines) or short ones (below scanMinLong): one thread per
//     line, in order, as the CPU does, so every dtype gives the CPU's bits;
//   - few long lines: each line is cut into segments, one warp per segment scanning 32
//     elements at a time (a shuffle scan); the segments' totals are chained on the host in
//     segment order and each segment is scanned again from its carry. Integers give the CPU's
//     bits (wrapping addition and multiplication are associative); floats are summed in
//     another fixed order, within (n-1)*eps*sum|x| of the exact running sum, as the CPU's are,
//     so within 2*(n-1)*eps*sum|x| of the CPU's (n the line's length so far); products within
//     2*(n-1)*eps relative.

const (
	// scanUnroll is how many elements a thread of the thread-per-line walk loads at once.
	scanUnroll   = 4
	scanMinLines = 1 << 14
	scanMinLong  = 1 << 16
	// scanWarps is the number of warps the segmented walk aims at, and scanMinSeg the fewest
	// elements a segment holds.
	scanWarps  = 1 << 13
	scanMinSeg = 1 << 10
)

// scanLines is a block's shape seen by a scan along an axis: outer × n × inner, the axis in the
// middle.
type scanLines struct{ outer, n, inner int64 }

func linesOf(shape []int, axis int) scanLines {
	l := scanLines{outer: 1, n: int64(shape[axis]), inner: 1}
	for k, d := range shape {
		switch {
		case k < axis:
			l.outer *= int64(d)
		case k > axis:
			l.inner *= int64(d)
		}
	}
	return l
}

func (l scanLines) lines() int64 { return l.outer * l.inner }

// segments returns how many segments each line is cut into: 0 for the thread-per-line walk.
func (l scanLines) segments() int64 {
	if l.lines() >= scanMinLines || l.n < scanMinLong {
		return 0
	}
	return max(1, min((scanWarps+l.lines()-1)/l.lines(), l.n/scanMinSeg, MaxSlices))
}

// scanOp is the op of a scan of fn (FnCumSum: addition, else multiplication).
func scanOp(fn expr.CallFn) expr.Op {
	if fn == expr.FnCumSum {
		return expr.OpAdd
	}
	return expr.OpMul
}

// scanPTX generates the scan kernel of dtype dt (its words as EncodeWords writes them) and op:
// seg selects the segmented walk. Parameters, all u64:
//   - thread per line: buf, outer, n, inner, tot (0: none; else each line's total goes there),
//     last (1: leave buf as it is, only the totals are wanted);
//   - segmented: buf, outer, n, inner, segs, cin (0: none; else each segment's carry, in
//     segment order, for segments 1..segs-1 of each line), tout (0: none; else each segment's
//     total), store (0: scan without storing).
func scanPTX(version, target string, dt dtype.DType, op expr.Op, seg bool) (string, string, error) {
	g := &gen{lib: &library{version: version, target: target, protos: map[string]libProto{}}, n: map[string]int{}, used: map[string]bool{}}
	name := scanName(dt, op, seg)
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

func scanName(dt dtype.DType, op expr.Op, seg bool) string {
	walk := "lines"
	if seg {
		walk = "segments"
	}
	return fmt.Sprintf("gpn_scan_%s_%s_%s", dt, map[expr.Op]string{expr.OpAdd: "sum", expr.OpMul: "prod"}[op], walk)
}

// scanZero returns fresh registers for a value of dt, set to zero.
func scanZero(g *gen, dt dtype.DType) val {
	switch laneOf(dt) {
	case laneI:
		v := val{l: laneI, r: g.rd()}
		g.ins("mov.b64 %s, 0", v.r)
		return v
	case laneC:
		v := val{l: laneC, r: g.fd(), im: g.fd()}
		g.ins("mov.f64 %s, %s", v.r, f64imm(0))
		g.ins("mov.f64 %s, %s", v.im, f64imm(0))
		return v
	}
	v := val{l: laneF, r: g.fd()}
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
func scanLoad(g *gen, dt dtype.DType, ad, p string) val {
	v := scanZero(g, dt)
	switch v.l {
	case laneI:
		g.ins("%sld.global.u64 %s, [%s]", guarded(p), v.r, ad)
	case laneC:
		g.ins("%sld.global.f64 %s, [%s]", guarded(p), v.r, ad)
		g.ins("%sld.global.f64 %s, [%s+8]", guarded(p), v.im, ad)
	default:
		g.ins("%sld.global.f64 %s, [%s]", guarded(p), v.r, ad)
	}
	return v
}

// scanStore stores v at global address ad where p holds.
func scanStore(g *gen, v val, ad, p string) {
	switch v.l {
	case laneI:
		g.ins("%sst.global.u64 [%s], %s", guarded(p), ad, v.r)
	case laneC:
		g.ins("%sst.global.f64 [%s], %s", guarded(p), ad, v.r)
		g.ins("%sst.global.f64 [%s+8], %s", guarded(p), ad, v.im)
	default:
		g.ins("%sst.global.f64 [%s], %s", guarded(p), ad, v.r)
	}
}

// scanMove copies v's registers into dst's where p holds.
func scanMove(g *gen, dst, v val, p string) {
	g.ins("%smov.b64 %s, %s", guarded(p), dst.r, v.r)
	if v.l == laneC {
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
	o := val{l: v.l, r: one(v.r, v.l != laneI)}
	if v.l == laneC {
		o.im = one(v.im, true)
	}
	return o
}

// scanFunction returns the linked scan kernel (on the device goroutine).
func (d *Device) scanFunction(dt dtype.DType, op expr.Op, seg bool) (driver.Function, error) {
	return d.generated(scanName(dt, op, seg), func() (string, error) {
		ptx, _, err := scanPTX(d.lib.version, d.lib.target, dt, op, seg)
		return ptx, err
	})
}

// launchScan launches scan kernel f over threads threads with u64 arguments args.
func (d *Device) launchScan(f driver.Function, name string, threads int64, args ...uint64) error {
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	blocks := (threads + BlockSize - 1) / BlockSize
	if blocks > math.MaxInt32 {
		return fmt.Errorf("kernel %s: %d blocks", name, blocks)
	}
	if err := f.Launch([3]uint32{uint32(blocks), 1, 1}, [3]uint32{BlockSize, 1, 1}, 0, d.stream, params); err != nil {
		return fmt.Errorf("kernel %s (%d blocks): %w", name, blocks, err)
	}
	if err := d.stream.Synchronize(); err != nil {
		return fmt.Errorf("kernel %s: %w", name, err)
	}
	return nil
}

// scan runs call c (a scan) on the words at buf, dtype c.DType, row-major over shape, in place,
// and returns the result's words (the running values, or FnProd's line totals). It runs on the
// device goroutine.
func (d *Device) scan(c *plan.CallStep, buf driver.DevicePtr, shape []int) ([]float64, error) {
	l := linesOf(shape, c.Axis)
	w := int64(Words(c.DType))
	if l.lines()*l.n == 0 {
		return nil, nil
	}
	if c.Fn == expr.FnProd {
		return d.scanTotals(c, buf, shape)
	}
	if err := d.scanInPlace(c, buf, shape); err != nil {
		return nil, err
	}
	out := make([]float64, l.lines()*l.n*w)
	return out, d.CopyToHost(out, buf)
}

// scanInPlace runs a running scan c (not FnProd) on the words at buf, dtype c.DType, row-major
// over shape, in place, and leaves the result there: the segments' carries are chained on the
// host (a few words per segment), the values never leave the device. It runs on the device
// goroutine.
func (d *Device) scanInPlace(c *plan.CallStep, buf driver.DevicePtr, shape []int) error {
	if c.Fn == expr.FnProd {
		return fmt.Errorf("cuda: %v gives line totals, not a running scan (internal)", c.Fn)
	}
	l := linesOf(shape, c.Axis)
	w := int64(Words(c.DType))
	op := scanOp(c.Fn)
	if l.lines()*l.n == 0 {
		return nil
	}
	segs := l.segments()
	f, err := d.scanFunction(c.DType, op, segs > 0)
	if err != nil {
		return err
	}
	name := scanName(c.DType, op, segs > 0)
	if segs == 0 {
		return d.launchScan(f, name, l.lines(), uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), 0, 0)
	}
	nseg := l.lines() * segs
	tout, err := d.pool.Alloc(uint64(nseg * w * 8))
	if err != nil {
		return err
	}
	defer d.pool.Free(tout)
	args := []uint64{uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), uint64(segs)}
	if err := d.launchScan(f, name, nseg*32, append(args, 0, uint64(tout), 0)...); err != nil {
		return err
	}
	tots := make([]float64, nseg*w)
	if err := d.CopyToHost(tots, tout); err != nil {
		return err
	}
	carries, _ := chainSegments(c.DType, op, tots, l.lines(), segs)
	if err := d.CopyToDevice(tout, carries); err != nil {
		return err
	}
	return d.launchScan(f, name, nseg*32, append(args, uint64(tout), 0, 1)...)
}

// scanTotals runs FnProd (the product along an axis) on the words at buf and returns each
// line's total's words. It runs on the device goroutine.
func (d *Device) scanTotals(c *plan.CallStep, buf driver.DevicePtr, shape []int) ([]float64, error) {
	l := linesOf(shape, c.Axis)
	w := int64(Words(c.DType))
	op := scanOp(c.Fn)
	segs := l.segments()
	f, err := d.scanFunction(c.DType, op, segs > 0)
	if err != nil {
		return nil, err
	}
	name := scanName(c.DType, op, segs > 0)
	if segs == 0 {
		tot, err := d.pool.Alloc(uint64(l.lines() * w * 8))
		if err != nil {
			return nil, err
		}
		defer d.pool.Free(tot)
		if err := d.launchScan(f, name, l.lines(), uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), uint64(tot), 1); err != nil {
			return nil, err
		}
		out := make([]float64, l.lines()*w)
		return out, d.CopyToHost(out, tot)
	}
	nseg := l.lines() * segs
	tout, err := d.pool.Alloc(uint64(nseg * w * 8))
	if err != nil {
		return nil, err
	}
	defer d.pool.Free(tout)
	args := []uint64{uint64(buf), uint64(l.outer), uint64(l.n), uint64(l.inner), uint64(segs)}
	if err := d.launchScan(f, name, nseg*32, append(args, 0, uint64(tout), 0)...); err != nil {
		return nil, err
	}
	tots := make([]float64, nseg*w)
	if err := d.CopyToHost(tots, tout); err != nil {
		return nil, err
	}
	_, totals := chainSegments(c.DType, op, tots, l.lines(), segs)
	return totals, nil
}

// chainSegments chains each of lines lines' segs segment totals (tots, words of dt, segment
// order within each line) in order: the carry into segment s is carry[s-1] op total[s-1]
// (none into segment 0). It returns the carries (segment 0's words left zero) and each line's
// total.
func chainSegments(dt dtype.DType, op expr.Op, tots []float64, lines, segs int64) (carries, totals []float64) {
	w := int64(Words(dt))
	carries = make([]float64, lines*segs*w)
	totals = make([]float64, lines*w)
	for ln := range lines {
		acc := tots[ln*segs*w : (ln*segs+1)*w]
		for s := int64(1); s < segs; s++ {
			at := (ln*segs + s) * w
			copy(carries[at:at+w], acc)
			acc = hostScanOp(dt, op, acc, tots[at:at+w])
		}
		copy(totals[ln*w:(ln+1)*w], acc)
	}
	return carries, totals
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// hostScanOp returns x op y for one value of dt in its words (as the kernel computes it).
func hostScanOp(dt dtype.DType, op expr.Op, x, y []float64) []float64 {
	mul := op == expr.OpMul
	switch laneOf(dt) {
	case laneI:
		a, b := int64(math.Float64bits(x[0])), int64(math.Float64bits(y[0]))
		if mul {
			return []float64{math.Float64frombits(uint64(a * b))}
		}
		return []float64{math.Float64frombits(uint64(a + b))}
	case laneC:
		a, b := complex(x[0], x[1]), complex(y[0], y[1])
		var c complex128
		switch {
		case dt == dtype.Complex64 && mul:
			c = complex128(complex64(a) * complex64(b))
		case dt == dtype.Complex64:
			c = complex128(complex64(a) + complex64(b))
		case mul:
			c = a * b
		default:
			c = a + b
		}
		return []float64{real(c), imag(c)}
	}
	switch {
	case dt == dtype.Float32 && mul:
		return []float64{float64(float32(x[0]) * float32(y[0]))}
	case dt == dtype.Float32:
		return []float64{float64(float32(x[0]) + float32(y[0]))}
	case mul:
		return []float64{x[0] * y[0]}
	}
	return []float64{x[0] + y[0]}
}

// scanRuns reports whether the GPU scans values of dt (the dtypes a scan's result takes).
func scanRuns(dt dtype.DType) error {
	switch dt {
	case dtype.Int64, dtype.Uint64, dtype.Float32, dtype.Float64, dtype.Complex64, dtype.Complex128:
		return nil
	}
	return fmt.Errorf("cuda: scans of %v values (internal: the result of a scan is int64, uint64, a float or a complex dtype)", dt)
}

// runScans runs scan tasks: each task's values computed in the result's dtype by the fused
// kernel and left on its GPU (tasks dealt to devs in contiguous runs), scanned there, and
// brought back one task at a time, so that one block is held at once.
func runScans(ctx context.Context, devs []*Device, tasks []*plan.Task) ([]*plan.Output, error) {
	call := tasks[0].Kernel.Call
	if err := scanRuns(call.DType); err != nil {
		return nil, err
	}
	ek := castResult(tasks[0].Kernel.Elementwise(), call.DType)
	outs := make([]*plan.Output, len(tasks))
	err := eachDevice(devs, len(tasks), func(d *Device, lo, hi int) error {
		for i := lo; i < hi; i++ {
			t := *tasks[i]
			t.Kernel = ek
			ptrs, free, err := RunPlanKeep(ctx, d, []*plan.Task{&t})
			if err != nil {
				return err
			}
			var words []float64
			err = d.Do(ctx, func() error {
				var err error
				words, err = d.scan(call, ptrs[0], tasks[i].Shape)
				return err
			})
			free()
			if err != nil {
				return fmt.Errorf("%v of chunk %d: %w", call.Fn, tasks[i].Index, err)
			}
			outs[i] = &plan.Output{Shape: call.OutShape(tasks[i].Shape), Data: DecodeWords(words, call.DType)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// castResult returns k with its result cast to dt (k itself when it has that dtype).
func castResult(k *plan.Kernel, dt dtype.DType) *plan.Kernel {
	if k.Instrs[k.Result].DType == dt {
		return k
	}
	c := *k
	c.Instrs = append(slices.Clone(k.Instrs), plan.Instr{Code: plan.Cast, DType: dt, Args: []int{k.Result}})
	c.Result = len(c.Instrs) - 1
	return &c
}
