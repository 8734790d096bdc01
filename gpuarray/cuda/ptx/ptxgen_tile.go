package ptx

import (
	"fmt"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// tileSide is the side of the square tiles of a tiled kernel (Spec.Tile); a block of BlockSize
// threads covers a tile in tileSide*tileSide/BlockSize passes.
const tileSide = 32

// tileRows is how many rows of a tile a warp takes (one row per pass, tileSide/tileRows
// warps).
const tileRows = tileSide * tileSide / BlockSize

// generateTiled writes the PTX of a tiled kernel (Spec.Tile): the iteration space is cut into
// tiles of tileSide x tileSide elements of its last two axes (the axes before them taken
// whole, one tile row after another), numbered row-major, and block b of a task with S slices
// takes tiles [T*b/S, T*(b+1)/S) of its T. For each tile, lane x of warp w first copies the
// elements (i0+x, j0+w+8k) of each Transposed input, whose data run along axis Rank-2, into
// shared memory (32 neighbouring words per warp load), and loads the elements (i0+w+8k, j0+x)
// of the other inputs (32 neighbouring words too); after a barrier, it computes elements
// (i0+w+8k, j0+x), k = 0..3, reading the transposed values from shared memory, and reduces or
// stores them. The per-thread order is fixed, so the bits do not depend on timing; they differ
// from the untiled kernel's (another order of the same elements), which the spec's key tells
// apart. Partials are one per block, as in the untiled kernel (Slices).
func generateTiled(s *Spec, lib *Library) (string, string, error) {
	g := &gen{lib: lib, n: map[string]int{}, used: map[string]bool{}, rank: s.Rank, leaves: s.Leaves(), narrowOut: s.NarrowOut, outDT: s.Nodes[len(s.Nodes)-1].DType}
	name := "gpn_fused_" + s.Key()
	R, L := s.Rank, g.leaves
	words := DescWords(R, L)

	desc, out := g.rd(), g.rd()
	g.ins("ld.param.u64 %s, [desc]", desc)
	g.ins("ld.param.u64 %s, [out]", out)
	g.ins("cvta.to.global.u64 %s, %s", desc, desc)
	g.ins("cvta.to.global.u64 %s, %s", out, out)
	ty, sl32, tid32 := g.r(), g.r(), g.r()
	g.ins("mov.u32 %s, %%ctaid.y", ty)
	g.ins("mov.u32 %s, %%ctaid.x", sl32)
	g.ins("mov.u32 %s, %%tid.x", tid32)
	d, t := g.rd(), g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", t, ty, words*8)
	g.ins("add.u64 %s, %s, %s", d, desc, t)
	dims := make([]string, R)
	for k := range dims {
		dims[k] = g.rd()
		g.ins("ld.global.nc.u64 %s, [%s+%d]", dims[k], d, 8*k)
	}
	S, outOff := g.rd(), g.rd()
	g.ins("ld.global.nc.u64 %s, [%s+%d]", S, d, 8*R)
	g.ins("ld.global.nc.u64 %s, [%s+%d]", outOff, d, 8*(R+1))
	sl := g.rd()
	g.ins("cvt.u64.u32 %s, %s", sl, sl32)
	exit := g.label("exit")
	pExit := g.p()
	// The whole block leaves together (its slice is past the task's), before any barrier.
	g.ins("setp.ge.u64 %s, %s, %s", pExit, sl, S)
	g.ins("@%s bra %s", pExit, exit)

	// Tiles: ntr x ntc per outer index, O outer indices (the product of dims 0..R-3).
	di, dj := dims[R-2], dims[R-1]
	ntr, ntc, O, T := g.rd(), g.rd(), g.rd(), g.rd()
	g.ins("add.u64 %s, %s, %d", ntr, di, tileSide-1)
	g.ins("shr.u64 %s, %s, 5", ntr, ntr)
	g.ins("add.u64 %s, %s, %d", ntc, dj, tileSide-1)
	g.ins("shr.u64 %s, %s, 5", ntc, ntc)
	g.ins("mov.u64 %s, 1", O)
	for k := 0; k < R-2; k++ {
		g.ins("mul.lo.u64 %s, %s, %s", O, O, dims[k])
	}
	g.ins("mul.lo.u64 %s, %s, %s", T, O, ntr)
	g.ins("mul.lo.u64 %s, %s, %s", T, T, ntc)
	lo, hi, sl1 := g.rd(), g.rd(), g.rd()
	g.ins("mul.lo.u64 %s, %s, %s", t, T, sl)
	g.ins("div.u64 %s, %s, %s", lo, t, S)
	g.ins("add.u64 %s, %s, 1", sl1, sl)
	g.ins("mul.lo.u64 %s, %s, %s", t, T, sl1)
	g.ins("div.u64 %s, %s, %s", hi, t, S)

	lv := g.loadLeaves(s, d, 8*(R+2))
	acc, accI, wn, wm, wq := g.accumulators(s.Reduce)
	x, w, tid := g.rd(), g.rd(), g.rd()
	g.ins("cvt.u64.u32 %s, %s", tid, tid32)
	g.ins("and.b64 %s, %s, 31", x, tid)
	g.ins("shr.u64 %s, %s, 5", w, tid)

	// Shared tiles of the transposed inputs, rows padded by one word.
	var sh strings.Builder
	tiles := map[int]string{} // node index -> shared array
	for i, nd := range s.Nodes {
		if nd.Transposed {
			a := fmt.Sprintf("gpn_tile%d", i)
			fmt.Fprintf(&sh, "\t.shared .align 8 .b8 %s[%d];\n", a, tileSide*(tileSide+1)*8)
			tiles[i] = a
		}
	}
	g.shared = sh.String()

	loop, loopEnd := g.label("tile"), g.label("tilesend")
	pe := g.p()
	g.ins("setp.ge.u64 %s, %s, %s", pe, lo, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	// The first tile's (outer, tile row, tile column); later tiles step from it.
	tt, tj, ti, o := g.rd(), g.rd(), g.rd(), g.rd()
	g.ins("mov.u64 %s, %s", tt, lo)
	g.ins("rem.u64 %s, %s, %s", tj, lo, ntc)
	g.ins("div.u64 %s, %s, %s", ti, lo, ntc)
	g.ins("div.u64 %s, %s, %s", o, ti, ntr)
	g.ins("rem.u64 %s, %s, %s", ti, ti, ntr)
	// ob[l]: each leaf's index at (o, 0, 0).
	ob := make([]string, L)
	for l := range ob {
		ob[l] = g.rd()
	}
	outerBase := func() {
		for l := range lv {
			g.ins("mov.u64 %s, %s", ob[l], lv[l].off)
		}
		rem := g.rd()
		g.ins("mov.u64 %s, %s", rem, o)
		for k := R - 3; k >= 0; k-- {
			ik := g.rd()
			if k == 0 {
				g.ins("mov.u64 %s, %s", ik, rem)
			} else {
				g.ins("rem.u64 %s, %s, %s", ik, rem, dims[k])
				g.ins("div.u64 %s, %s, %s", rem, rem, dims[k])
			}
			for l := range lv {
				g.ins("mad.lo.s64 %s, %s, %s, %s", ob[l], ik, lv[l].str[k], ob[l])
			}
		}
	}
	outerBase()

	g.put(loop)
	i0, j0 := g.rd(), g.rd()
	g.ins("shl.b64 %s, %s, 5", i0, ti)
	g.ins("shl.b64 %s, %s, 5", j0, tj)
	// Copy the transposed inputs' tiles: lane x along axis R-2, warp w's rows along axis R-1.
	ci := g.rd()
	g.ins("add.u64 %s, %s, %s", ci, i0, x)
	pci := g.p()
	g.ins("setp.lt.u64 %s, %s, %s", pci, ci, di)
	for k := range tileRows {
		cj, pin := g.rd(), g.p()
		g.ins("add.u64 %s, %s, %s", cj, j0, w)
		g.ins("add.u64 %s, %s, %d", cj, cj, 8*k)
		g.ins("setp.lt.and.u64 %s, %s, %s, %s", pin, cj, dj, pci)
		for i, nd := range s.Nodes {
			if !nd.Transposed {
				continue
			}
			l := nd.Leaf
			idx, ad, v, sa := g.rd(), g.rd(), g.rd(), g.rd()
			g.ins("mad.lo.s64 %s, %s, %s, %s", idx, ci, lv[l].str[R-2], ob[l])
			g.ins("mad.lo.s64 %s, %s, %s, %s", idx, cj, lv[l].str[R-1], idx)
			g.ins("mov.u64 %s, 0", v)
			if nd.Narrow { // elements of their own size, widened into the tile's 8-byte word
				g.ins("mul.lo.u64 %s, %s, %d", ad, idx, nd.DType.Size())
				g.ins("add.u64 %s, %s, %s", ad, ad, lv[l].ptr)
				g.ins("mov.b64 %s, %s", v, g.loadNarrow(nd.DType, ad, pin).r)
			} else {
				g.ins("shl.b64 %s, %s, 3", ad, idx)
				g.ins("add.u64 %s, %s, %s", ad, ad, lv[l].ptr)
				g.ins("@%s ld.global.nc.u64 %s, [%s]", pin, v, ad)
			}
			// Shared word (x, w+8k) of a row of tileSide+1 words.
			g.ins("mad.lo.u64 %s, %s, %d, %s", sa, x, tileSide+1, w)
			g.ins("add.u64 %s, %s, %d", sa, sa, 8*k)
			g.ins("shl.b64 %s, %s, 3", sa, sa)
			a := g.rd()
			g.ins("mov.u64 %s, %s", a, tiles[i])
			g.ins("add.u64 %s, %s, %s", sa, sa, a)
			g.ins("st.shared.u64 [%s], %s", sa, v)
		}
	}
	// This thread's elements (i0+w+8k, j0+x): in range, row bases, and the other inputs' loads.
	ej := g.rd()
	g.ins("add.u64 %s, %s, %s", ej, j0, x)
	pej := g.p()
	g.ins("setp.lt.u64 %s, %s, %s", pej, ej, dj)
	type elem struct {
		in  string
		lvk []leafRegs
		pre map[int]val
		e   string
	}
	els := make([]elem, tileRows)
	for k := range els {
		ei := g.rd()
		g.ins("add.u64 %s, %s, %s", ei, i0, w)
		g.ins("add.u64 %s, %s, %d", ei, ei, 8*k)
		el := elem{in: g.p(), lvk: make([]leafRegs, L), pre: map[int]val{}}
		g.ins("setp.lt.and.u64 %s, %s, %s, %s", el.in, ei, di, pej)
		for l := range lv {
			el.lvk[l] = lv[l]
			el.lvk[l].rb = g.rd()
			g.ins("mad.lo.s64 %s, %s, %s, %s", el.lvk[l].rb, ei, lv[l].str[R-2], ob[l])
		}
		idx := g.leafIndices(el.lvk, ej)
		for i := range s.Nodes {
			nd := &s.Nodes[i]
			if nd.Kind != NInput || nd.Transposed {
				continue
			}
			ad, v := g.rd(), g.rd()
			if nd.Narrow {
				g.ins("mul.lo.u64 %s, %s, %d", ad, idx[nd.Leaf], nd.DType.Size())
				g.ins("add.u64 %s, %s, %s", ad, ad, lv[nd.Leaf].ptr)
				el.pre[i] = g.loadNarrow(nd.DType, ad, el.in)
				continue
			}
			shift := 3
			if Words(nd.DType) == 2 {
				shift = 4
			}
			g.ins("shl.b64 %s, %s, %d", ad, idx[nd.Leaf], shift)
			g.ins("add.u64 %s, %s, %s", ad, ad, lv[nd.Leaf].ptr)
			switch LaneOf(nd.DType) {
			case LaneI:
				g.ins("mov.u64 %s, 0", v)
				g.ins("@%s ld.global.nc.u64 %s, [%s]", el.in, v, ad)
				el.pre[i] = val{l: LaneI, r: v}
			case LaneC:
				re, im := g.fd(), g.fd()
				g.ins("mov.f64 %s, 0d0000000000000000", re)
				g.ins("mov.f64 %s, 0d0000000000000000", im)
				g.ins("@%s ld.global.nc.f64 %s, [%s]", el.in, re, ad)
				g.ins("@%s ld.global.nc.f64 %s, [%s+8]", el.in, im, ad)
				el.pre[i] = val{l: LaneC, r: re, im: im}
			default:
				f := g.fd()
				g.ins("mov.f64 %s, 0d0000000000000000", f)
				g.ins("@%s ld.global.nc.f64 %s, [%s]", el.in, f, ad)
				el.pre[i] = g.finish(nd.DType, val{l: LaneF, r: f})
			}
		}
		if s.Reduce == RNone || s.Reduce == RArgMin || s.Reduce == RArgMax {
			// The element's row-major index in the task.
			el.e = g.rd()
			g.ins("mad.lo.u64 %s, %s, %s, %s", el.e, o, di, ei)
			g.ins("mad.lo.u64 %s, %s, %s, %s", el.e, el.e, dj, ej)
		}
		els[k] = el
	}
	g.ins("bar.sync 0")
	for k, el := range els {
		for i, nd := range s.Nodes {
			if !nd.Transposed {
				continue
			}
			// Shared word (w+8k, x).
			sa, a, v := g.rd(), g.rd(), g.rd()
			g.ins("add.u64 %s, %s, %d", sa, w, 8*k)
			g.ins("mad.lo.u64 %s, %s, %d, %s", sa, sa, tileSide+1, x)
			g.ins("shl.b64 %s, %s, 3", sa, sa)
			g.ins("mov.u64 %s, %s", a, tiles[i])
			g.ins("add.u64 %s, %s, %s", sa, sa, a)
			g.ins("ld.shared.u64 %s, [%s]", v, sa)
			if LaneOf(nd.DType) == LaneI {
				el.pre[i] = val{l: LaneI, r: v}
			} else {
				f := g.fd()
				g.ins("mov.b64 %s, %s", f, v)
				el.pre[i] = g.finish(nd.DType, val{l: LaneF, r: f})
			}
		}
		skip := g.label("skip")
		g.ins("@!%s bra %s", el.in, skip)
		ev, err := g.elementValueFrom(s, el.lvk, ej, el.pre)
		if err != nil {
			return "", "", err
		}
		if s.Reduce == RNone {
			g.store(ev, el.e, out, outOff)
		} else {
			v, err := g.reduceValue(s, ev)
			if err != nil {
				return "", "", err
			}
			if err := g.accumulate(s.Reduce, v, el.e, acc, accI, wn, wm, wq, out, outOff); err != nil {
				return "", "", err
			}
		}
		g.put(skip)
	}
	// The next tile, once every thread has read this one's shared words.
	g.ins("bar.sync 0")
	g.ins("add.u64 %s, %s, 1", tt, tt)
	g.ins("setp.ge.u64 %s, %s, %s", pe, tt, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	g.ins("add.u64 %s, %s, 1", tj, tj)
	pn := g.p()
	g.ins("setp.lt.u64 %s, %s, %s", pn, tj, ntc)
	g.ins("@%s bra %s", pn, loop)
	g.ins("mov.u64 %s, 0", tj)
	g.ins("add.u64 %s, %s, 1", ti, ti)
	g.ins("setp.lt.u64 %s, %s, %s", pn, ti, ntr)
	g.ins("@%s bra %s", pn, loop)
	g.ins("mov.u64 %s, 0", ti)
	g.ins("add.u64 %s, %s, 1", o, o)
	outerBase()
	g.ins("bra %s", loop)
	g.put(loopEnd)

	if err := g.blockReduce(s, out, outOff, sl, acc, accI, wn, wm, wq); err != nil {
		return "", "", err
	}
	g.put(exit)
	g.ins("ret")
	return g.module(s, name), name, nil
}

// MarkTiles makes s a tiled kernel (Spec.Tile) when k reads some input across its rows: the
// input's last (contiguous) source axis walks the iteration's axis Rank-2 (x.T of a stored x),
// so an untiled kernel's warp would read 32 rows for 32 neighbouring elements. Only full
// reductions (but argmin/argmax, whose ties need the element order) and elementwise kernels of
// inputs without random numbers are tiled, over last two axes of at least a tile's side each
// (a skinny tile would leave most of a block's lanes idle); integer and complex reductions
// (reduce_lanes.go) are not.
func MarkTiles(s *Spec, k *plan.Kernel) {
	if s.Kept > 0 || s.Rank < 2 || s.Reduce == RArgMin || s.Reduce == RArgMax || UnrollOf(s) == 1 || s.AccLane() != LaneF {
		return
	}
	if len(k.Shape) != s.Rank || k.Shape[s.Rank-2] < tileSide || k.Shape[s.Rank-1] < tileSide {
		return
	}
	var tr []int
	for i := range k.Instrs {
		in := &k.Instrs[i]
		if in.Code != plan.Input || s.Nodes[i].Kind != NInput || len(in.Map) < 2 {
			continue
		}
		if Words(in.DType) != 1 {
			return
		}
		if m := in.Map[len(in.Map)-1]; m.Axis == s.Rank-2 && (m.Step == 1 || m.Step == -1) {
			tr = append(tr, i)
		}
	}
	if len(tr) == 0 {
		return
	}
	for i := range s.Nodes {
		if s.Nodes[i].Kind == NInput && Words(s.Nodes[i].DType) != 1 {
			return
		}
	}
	for _, i := range tr {
		s.Nodes[i].Transposed = true
	}
	s.Tile = true
}
