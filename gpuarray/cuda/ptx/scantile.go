package ptx

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// ScanTileWords is how many words of each line the tiled scan brings into shared memory at
// once (ScanTilePTX), and ScanTileLines how many lines a block of BlockSize threads takes: 512
// contiguous bytes a line and tile keep enough reads in flight with few lines (5000 lines of a
// chunk are 157 blocks), in 16.6 KB of shared memory a block.
const (
	ScanTileWords = 64
	ScanTileLines = 32
)

// ScanTileName names the tiled scan kernel of dtype dt and op.
func ScanTileName(dt dtype.DType, op expr.Op) string {
	return fmt.Sprintf("gpn_scan_%s_%s_tiles", dt, map[expr.Op]string{expr.OpAdd: "sum", expr.OpMul: "prod"}[op])
}

// ScanTilePTX generates the tiled scan of contiguous lines (a scan along the last axis): a
// block takes ScanTileLines of them, walked a tile of ScanTileWords words each at a time: the
// block loads the tile into shared memory with coalesced reads (consecutive threads read
// consecutive words of a line), one thread a line then scans its line's part of the tile in
// order from its carry (the CPU's order and ops, so every dtype gives the CPU's bits), and the
// block writes the tile back as it read it. Parameters, all u64: buf, lines, n (elements a
// line).
func ScanTilePTX(version, target string, dt dtype.DType, op expr.Op) (string, string, error) {
	g := &gen{lib: &Library{version: version, target: target, protos: map[string]libProto{}}, n: map[string]int{}, used: map[string]bool{}}
	name := ScanTileName(dt, op)
	w := Words(dt)
	if ScanTileWords%w != 0 {
		return "", "", fmt.Errorf("ptx: a tiled scan of %v (internal)", dt)
	}
	elems := ScanTileWords / w // elements of a line in a tile
	pitch := int64(ScanTileWords+1) * 8
	params := []string{"buf", "lines", "n"}
	p := map[string]string{}
	for _, pn := range params {
		p[pn] = g.rd()
		g.ins("ld.param.u64 %s, [%s]", p[pn], pn)
	}
	g.ins("cvta.to.global.u64 %s, %s", p["buf"], p["buf"])
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
	row0, tid, t := g.rd(), g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", row0, bx, ScanTileLines)
	g.ins("cvt.u64.u32 %s, %s", tid, tx)
	// nw: the words of a line; lw: its bytes.
	nw, lb := g.rd(), g.rd()
	g.ins("mul.lo.u64 %s, %s, %d", nw, p["n"], w)
	g.ins("shl.b64 %s, %s, 3", lb, nw)
	sh := g.rd()
	g.ins("mov.u64 %s, gpn_scan_tile", sh)
	// The thread's own line (compute phase): its row in shared memory and whether it exists.
	mine, own := g.rd(), g.p()
	g.ins("add.u64 %s, %s, %s", t, row0, tid)
	g.ins("setp.lt.u64 %s, %s, %s", own, t, p["lines"])
	mineOK := g.p()
	g.ins("setp.lt.u64 %s, %s, %d", mineOK, tid, ScanTileLines)
	g.ins("and.pred %s, %s, %s", own, own, mineOK)
	g.ins("mad.lo.u64 %s, %s, %d, %s", mine, tid, pitch, sh)
	acc := scanZero(g, dt)
	c0, pe := g.rd(), g.p()
	g.ins("mov.u64 %s, 0", c0)
	loop, end := g.label("tile"), g.label("tiled")
	// copyTile moves the tile between global and shared memory: word k*BlockSize+tid of the
	// tile is word k*BlockSize+tid mod ScanTileWords of the block's line (k*BlockSize+tid) /
	// ScanTileWords.
	copyTile := func(load bool) {
		for k := range ScanTileLines * ScanTileWords / BlockSize {
			idx, r, j, ga, sa, ok, in := g.rd(), g.rd(), g.rd(), g.rd(), g.rd(), g.p(), g.p()
			g.ins("add.u64 %s, %s, %d", idx, tid, k*BlockSize)
			g.ins("shr.u64 %s, %s, %d", r, idx, bits.TrailingZeros(ScanTileWords))
			g.ins("and.b64 %s, %s, %d", j, idx, ScanTileWords-1)
			// shared: r*pitch + j*8; global: buf + (row0+r)*lb + (c0*w + j)*8
			g.ins("mad.lo.u64 %s, %s, %d, %s", sa, r, pitch, sh)
			g.ins("mad.lo.u64 %s, %s, 8, %s", sa, j, sa)
			g.ins("add.u64 %s, %s, %s", t, row0, r)
			g.ins("setp.lt.u64 %s, %s, %s", ok, t, p["lines"])
			g.ins("mad.lo.u64 %s, %s, %s, %s", ga, t, lb, p["buf"])
			g.ins("mad.lo.u64 %s, %s, %d, %s", t, c0, w, j)
			g.ins("setp.lt.u64 %s, %s, %s", in, t, nw)
			g.ins("and.pred %s, %s, %s", ok, ok, in)
			g.ins("mad.lo.u64 %s, %s, 8, %s", ga, t, ga)
			v := g.rd()
			if load {
				g.ins("@%s ld.global.u64 %s, [%s]", ok, v, ga)
				g.ins("@%s st.shared.u64 [%s], %s", ok, sa, v)
			} else {
				g.ins("@%s ld.shared.u64 %s, [%s]", ok, v, sa)
				g.ins("@%s st.global.u64 [%s], %s", ok, ga, v)
			}
		}
	}
	g.put(loop)
	g.ins("setp.ge.u64 %s, %s, %s", pe, c0, p["n"])
	g.ins("@%s bra %s", pe, end)
	copyTile(true)
	g.ins("bar.sync 0")
	skip := g.label("mine")
	notOwn := g.p()
	g.ins("not.pred %s, %s", notOwn, own)
	g.ins("@%s bra %s", notOwn, skip)
	for e := range elems {
		ok, first := g.p(), g.p()
		g.ins("add.u64 %s, %s, %d", t, c0, e)
		g.ins("setp.lt.u64 %s, %s, %s", ok, t, p["n"])
		g.ins("setp.eq.u64 %s, %s, 0", first, t)
		sa := g.rd()
		g.ins("add.u64 %s, %s, %d", sa, mine, e*w*8)
		v := sharedLoad(g, dt, sa, ok)
		r, err := apply(acc, v)
		if err != nil {
			return "", "", err
		}
		// The line's first element is its own running value (the CPU starts from it).
		scanMove(g, r, v, first)
		scanMove(g, acc, r, ok)
		sharedStore(g, acc, sa, ok)
	}
	g.put(skip)
	g.ins("bar.sync 0")
	copyTile(false)
	g.ins("bar.sync 0")
	g.ins("add.u64 %s, %s, %d", c0, c0, elems)
	g.ins("bra %s", loop)
	g.put(end)
	g.ins("ret")
	if len(g.usedList) > 0 {
		return "", "", fmt.Errorf("cuda: the scan of %v calls the device library (%v; internal)", dt, g.usedList)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by gpunotes (gpuarray/cuda/ptx/scantile.go).\n.version %s\n.target %s\n.address_size 64\n\n", version, target)
	fmt.Fprintf(&b, ".visible .entry %s(\n", name)
	for i, pn := range params {
		sep := ","
		if i == len(params)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "\t.param .u64 %s%s\n", pn, sep)
	}
	fmt.Fprintf(&b, ")\n.maxntid %d, 1, 1\n{\n", BlockSize)
	fmt.Fprintf(&b, "\t.shared .align 8 .b8 gpn_scan_tile[%d];\n", int64(ScanTileLines)*pitch)
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

// sharedLoad loads a value of dt from shared address ad (where p holds) into fresh registers.
func sharedLoad(g *gen, dt dtype.DType, ad, p string) val { return spaceLoad(g, "shared", dt, ad, p) }

// sharedStore stores v at shared address ad where p holds.
func sharedStore(g *gen, v val, ad, p string) { spaceStore(g, "shared", v, ad, p) }
