package ptx

import "fmt"

// The kernels of the hash join on keys held on the device (package cuda's JoinHeld): the key
// codes encoded there from the held columns, the probe rows put in the order of their hash
// partitions (a stable counting sort in tiles of rows), and the pairs written as int32 rows,
// so that neither the keys nor the pairs cross PCIe. The table's kernels are hashjoin.go's.

// The names of the held join's kernels (JoinCodesName takes the source's element bytes).
const (
	JoinTileCountName = "gpn_join_tile_count"
	JoinTilePlaceName = "gpn_join_tile_place"
	JoinPermuteName   = "gpn_join_permute"
	JoinProbeRowsName = "gpn_join_probe_rows"
)

// JoinCodesName names the code kernel of a source of unit (4 or 8) bytes per element.
func JoinCodesName(unit int) string { return fmt.Sprintf("gpn_join_codes_b%d", unit) }

// optionalPtr converts the pointer parameter in register r to a global address unless it is 0
// (an absent operand), which stays 0.
func (k *joinKernel) optionalPtr(r string) {
	k.ins("setp.ne.u64 %%p7, %s, 0", r)
	k.ins("@%%p7 cvta.to.global.u64 %s, %s", r, r)
}

// JoinCodesPTX writes gpn_join_codes_b4 or _b8(src, n, table, out): the key code of row i of
// a held column, src's element i (unit 4: an int32, sign-extended; unit 8: a word), looked up
// in table when table is not 0 (a categorical's codes in a dictionary of both sides), written
// as a word to out[i].
func JoinCodesPTX(version, target string, unit int) string {
	ps := []string{"src", "n", "table", "out"}
	k := beginJoin(version, target, JoinCodesName(unit), ps, map[string]bool{"src": true, "out": true}, "n")
	// %rd1 src, %rd2 n, %rd3 table, %rd4 out.
	k.optionalPtr("%rd3")
	k.ins("mad.lo.u64 %%rd32, %%rd20, %d, %%rd1", unit)
	if unit == 4 {
		k.ins("ld.global.nc.u32 %%r3, [%%rd32]")
		k.ins("cvt.s64.s32 %%rd33, %%r3")
	} else {
		k.ins("ld.global.nc.u64 %%rd33, [%%rd32]")
	}
	k.ins("setp.eq.u64 %%p5, %%rd3, 0")
	k.ins("@%%p5 bra $Lput")
	k.ins("mad.lo.u64 %%rd34, %%rd33, 8, %%rd3")
	k.ins("ld.global.nc.u64 %%rd33, [%%rd34]")
	k.label("$Lput")
	k.ins("mad.lo.u64 %%rd34, %%rd20, 8, %%rd4")
	k.ins("st.global.u64 [%%rd34], %%rd33")
	return k.end()
}

// tileRange leaves in %rd32 and %rd33 the first and one past the last row of thread %rd20's
// tile (%rd3 rows a tile, %rd2 rows in all).
func (k *joinKernel) tileRange() {
	k.ins("mul.lo.u64 %%rd32, %%rd20, %%rd3")
	k.ins("add.u64 %%rd33, %%rd32, %%rd3")
	k.ins("min.u64 %%rd33, %%rd33, %%rd2")
}

// tileCell leaves in %rd36 the address of counts[q*ntiles + t] for the partition word at row
// %rd34's address (q in %rd35; %rd4 ntiles, %rd5 counts).
func (k *joinKernel) tileCell() {
	k.ins("ld.global.nc.u64 %%rd35, [%%rd34]")
	k.ins("mad.lo.u64 %%rd36, %%rd35, %%rd4, %%rd20")
	k.ins("mad.lo.u64 %%rd36, %%rd36, 8, %%rd5")
}

// JoinTileCountPTX writes gpn_join_tile_count(part, n, tile, ntiles, counts): thread t counts
// the rows of its tile (rows [t*tile, (t+1)*tile) of the n) in each partition, part[i] the
// partition word of row i: counts[q*ntiles + t] (zeroed, parts*ntiles words) is the tile's
// rows in partition q. Scanned, the counts give each (partition, tile) the end of its place in
// the rows ordered by partition, then by row.
func JoinTileCountPTX(version, target string) string {
	ps := []string{"part", "n", "tile", "ntiles", "counts"}
	k := beginJoin(version, target, JoinTileCountName, ps, map[string]bool{"part": true, "counts": true}, "ntiles")
	// %rd1 part, %rd2 n, %rd3 tile, %rd4 ntiles, %rd5 counts.
	k.tileRange()
	k.label("$Lcount")
	k.ins("setp.ge.u64 %%p2, %%rd32, %%rd33")
	k.ins("@%%p2 bra $Ldone")
	k.ins("mad.lo.u64 %%rd34, %%rd32, 8, %%rd1")
	k.tileCell()
	k.ins("ld.global.u64 %%rd37, [%%rd36]")
	k.ins("add.u64 %%rd37, %%rd37, 1")
	k.ins("st.global.u64 [%%rd36], %%rd37")
	k.ins("add.u64 %%rd32, %%rd32, 1")
	k.ins("bra $Lcount")
	return k.end()
}

// JoinTilePlacePTX writes gpn_join_tile_place(part, n, tile, ntiles, cursor, perm): with
// cursor JoinTileCount's counts scanned (running sums), thread t walks its tile's rows from
// the last and puts each at the last free place of its (partition, tile) range: perm[place] =
// row. perm is then the rows ordered by partition and, within one, by row (a stable counting
// sort), and cursor[q*ntiles] where partition q's rows start.
func JoinTilePlacePTX(version, target string) string {
	ps := []string{"part", "n", "tile", "ntiles", "cursor", "perm"}
	k := beginJoin(version, target, JoinTilePlaceName, ps, map[string]bool{"part": true, "cursor": true, "perm": true}, "ntiles")
	// %rd1 part, %rd2 n, %rd3 tile, %rd4 ntiles, %rd5 cursor, %rd6 perm.
	k.tileRange()
	k.label("$Lplace")
	k.ins("setp.ge.u64 %%p2, %%rd32, %%rd33")
	k.ins("@%%p2 bra $Ldone")
	k.ins("sub.u64 %%rd33, %%rd33, 1")
	k.ins("mad.lo.u64 %%rd34, %%rd33, 8, %%rd1")
	k.tileCell()
	k.ins("ld.global.u64 %%rd37, [%%rd36]")
	k.ins("sub.u64 %%rd37, %%rd37, 1")
	k.ins("st.global.u64 [%%rd36], %%rd37")
	k.ins("mad.lo.u64 %%rd38, %%rd37, 8, %%rd6")
	k.ins("st.global.u64 [%%rd38], %%rd33")
	k.ins("bra $Lplace")
	return k.end()
}

// JoinPermutePTX writes gpn_join_permute(perm, n, src, out): out[k] = src[perm[k]] (words).
func JoinPermutePTX(version, target string) string {
	ps := []string{"perm", "n", "src", "out"}
	k := beginJoin(version, target, JoinPermuteName, ps, map[string]bool{"perm": true, "src": true, "out": true}, "n")
	k.ins("mad.lo.u64 %%rd32, %%rd20, 8, %%rd1")
	k.ins("ld.global.nc.u64 %%rd33, [%%rd32]")
	k.ins("mad.lo.u64 %%rd34, %%rd33, 8, %%rd3")
	k.ins("ld.global.nc.u64 %%rd35, [%%rd34]")
	k.ins("mad.lo.u64 %%rd36, %%rd20, 8, %%rd4")
	k.ins("st.global.u64 [%%rd36], %%rd35")
	return k.end()
}

// store32 writes the low 32 bits of register v at element at (a register) of the int32 array
// base (%rd46 the address).
func (k *joinKernel) store32(base, at, v string) {
	k.ins("mad.lo.u64 %%rd46, %s, 4, %s", at, base)
	k.ins("cvt.u32.u64 %%r3, %s", v)
	k.ins("st.global.u32 [%%rd46], %%r3")
}

// JoinProbeRowsPTX writes gpn_join_probe_rows(n, perm, match, emit, starts, ends, rows, outp,
// outb, mode): JoinProbePairs' output as int32 rows, in the order of perm. Thread k takes probe
// row j = perm[k] (j = k when perm is 0), whose match word JoinProbeCount wrote (match[j]),
// and writes its output rows from emit[k-1] to emit[k] (emit: the probe rows' counts in perm's
// order, scanned): (j, each build row of its slot's range in order) to outp and outb, (j, -1)
// for an unmatched row JoinKeep keeps, or j alone for JoinSemi and JoinAnti, with -1 in outb
// when outb is not 0 (an anti join's right rows).
func JoinProbeRowsPTX(version, target string) string {
	ps := []string{"n", "perm", "match", "emit", "starts", "ends", "rows", "outp", "outb", "mode"}
	k := beginJoin(version, target, JoinProbeRowsName, ps, map[string]bool{"match": true, "emit": true, "starts": true, "ends": true, "rows": true, "outp": true}, "n")
	// %rd1 n, %rd2 perm, %rd3 match, %rd4 emit, %rd5 starts, %rd6 ends, %rd7 rows, %rd8 outp,
	// %rd9 outb, %rd10 mode; %rd45 the probe row j.
	k.optionalPtr("%rd2")
	k.optionalPtr("%rd9")
	k.ins("mov.u64 %%rd45, %%rd20")
	k.ins("setp.eq.u64 %%p2, %%rd2, 0")
	k.ins("@%%p2 bra $Lrow")
	k.ins("mad.lo.u64 %%rd33, %%rd20, 8, %%rd2")
	k.ins("ld.global.nc.u64 %%rd45, [%%rd33]")
	k.label("$Lrow")
	k.ins("mov.u64 %%rd32, 0") // the first output row
	k.ins("setp.eq.u64 %%p2, %%rd20, 0")
	k.ins("@%%p2 bra $Lfirst")
	k.ins("mad.lo.u64 %%rd33, %%rd20, 8, %%rd4")
	k.ins("ld.global.u64 %%rd32, [%%rd33+-8]")
	k.label("$Lfirst")
	k.ins("mad.lo.u64 %%rd33, %%rd20, 8, %%rd4")
	k.ins("ld.global.u64 %%rd34, [%%rd33]") // one past the last
	k.ins("setp.ge.u64 %%p2, %%rd32, %%rd34")
	k.ins("@%%p2 bra $Ldone") // nothing to write
	k.ins("setp.ge.u64 %%p3, %%rd10, %d", JoinSemi)
	k.ins("@!%%p3 bra $Lpairs")
	k.store32("%rd8", "%rd32", "%rd45")
	k.ins("setp.eq.u64 %%p4, %%rd9, 0")
	k.ins("@%%p4 bra $Ldone")
	k.store32("%rd9", "%rd32", "%rd19")
	k.ins("bra $Ldone")
	k.label("$Lpairs")
	k.ins("mad.lo.u64 %%rd33, %%rd45, 8, %%rd3")
	k.ins("ld.global.u64 %%rd36, [%%rd33]")
	k.ins("setp.ne.u64 %%p4, %%rd36, 0")
	k.ins("@%%p4 bra $Lmatches")
	k.store32("%rd8", "%rd32", "%rd45")
	k.store32("%rd9", "%rd32", "%rd19")
	k.ins("bra $Ldone")
	k.label("$Lmatches")
	k.ins("sub.u64 %%rd36, %%rd36, 1")
	k.ins("mad.lo.u64 %%rd33, %%rd36, 8, %%rd5")
	k.ins("ld.global.u64 %%rd37, [%%rd33]") // the range's start
	k.label("$Lemit")
	k.ins("setp.ge.u64 %%p5, %%rd32, %%rd34")
	k.ins("@%%p5 bra $Ldone")
	k.ins("mad.lo.u64 %%rd33, %%rd37, 8, %%rd7")
	k.ins("ld.global.u64 %%rd38, [%%rd33]") // the build row
	k.store32("%rd8", "%rd32", "%rd45")
	k.store32("%rd9", "%rd32", "%rd38")
	k.ins("add.u64 %%rd32, %%rd32, 1")
	k.ins("add.u64 %%rd37, %%rd37, 1")
	k.ins("bra $Lemit")
	return k.end()
}
