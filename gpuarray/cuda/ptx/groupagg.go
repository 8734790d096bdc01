package ptx

import (
	"fmt"
	"math"
	"strings"
)

// GroupStates is a set of per-group states that a group-aggregate kernel keeps.
type GroupStates uint8

// The states a group-aggregate kernel keeps, each one word per group, in this order in its
// output (the states of a set that it holds, one run of Groups words each).
const (
	// GroupCount counts each group's valid values (not NaN).
	GroupCount GroupStates = 1 << iota
	// GroupSum adds them: int64 (wrapping, as Go's int64) or float64.
	GroupSum
	// GroupSumSq adds their squares, as float64 (variance as sum and sum of squares).
	GroupSumSq
	// GroupMin keeps the smallest: an int64, or a float64 as its ordered key (OrderedKey).
	GroupMin
	// GroupMax keeps the largest, as GroupMin.
	GroupMax
)

var groupStateNames = [...]string{"count", "sum", "sumsq", "min", "max"}

// List returns the states of s in output order.
func (s GroupStates) List() []GroupStates {
	var out []GroupStates
	for b := GroupCount; b <= GroupMax; b <<= 1 {
		if s&b != 0 {
			out = append(out, b)
		}
	}
	return out
}

// Index returns the position of state one in s's output (-1 when s lacks it).
func (s GroupStates) Index(one GroupStates) int {
	for i, b := range s.List() {
		if b == one {
			return i
		}
	}
	return -1
}

// Init returns the word a state's table starts from: 0, or the ordered extreme for Min, Max.
func (s GroupStates) Init() uint64 {
	switch s {
	case GroupMin:
		return math.MaxInt64
	case GroupMax:
		return 1 << 63 // math.MinInt64
	}
	return 0
}

func (s GroupStates) name() string {
	var parts []string
	for i, n := range groupStateNames {
		if s&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, "_")
}

// OrderedKey maps a float64 to an int64 whose signed order is the floats' order (-0 below +0),
// as the group-aggregate kernel keeps float minima and maxima; FromOrderedKey inverts it.
func OrderedKey(f float64) int64 {
	b := int64(math.Float64bits(f))
	return b ^ int64(uint64(b>>63)>>1)
}

// FromOrderedKey is the float64 of an OrderedKey.
func FromOrderedKey(k int64) float64 {
	return math.Float64frombits(uint64(k ^ int64(uint64(k>>63)>>1)))
}

// GroupAgg is one group-aggregate kernel: rows whose group is a dense code in [0, Groups)
// (int64; a code outside, such as -1 for a null key, skips the row), one value column (Float:
// float64, NaN skipped; else int64), the States it keeps. Shared keeps per-block tables in
// shared memory (few groups) and adds them into the output once per block; otherwise every
// row updates the output with a global atomic.
type GroupAgg struct {
	Groups int
	Float  bool
	States GroupStates
	Shared bool
}

// GroupAggSharedMax is the most words of per-block tables the shared form keeps (32 KiB).
const GroupAggSharedMax = 4096

// SharedFits reports whether a's tables fit the shared form.
func (a GroupAgg) SharedFits() bool { return a.Groups*len(a.States.List()) <= GroupAggSharedMax }

// Name is the kernel's entry name.
func (a GroupAgg) Name() string {
	kind, mode := "i", "g"
	if a.Float {
		kind = "f"
	}
	if a.Shared {
		mode = "s"
	}
	return fmt.Sprintf("gpn_groupagg_%s%s_%s_%d", kind, mode, a.States.name(), a.Groups)
}

// PTX generates the kernel. Parameters: codes (n int64 words), vals (n words, int64 or
// float64; read only when a state needs them), n, out (len(States.List())*Groups words,
// initialized by the caller to each state's Init), S (blocks). Block b handles rows
// [n*b/S, n*(b+1)/S), thread t rows lo+t, lo+t+BlockSize, …, as the fused kernels' slices.
// Integer count, sum, min and max are exact in any order; float sums are added in an order
// the atomics decide, so they differ from a sequential sum by at most about n ulp of the sum
// of the group's magnitudes.
func (a GroupAgg) PTX(version, target string) (string, error) {
	states := a.States.List()
	if len(states) == 0 || a.Groups <= 0 {
		return "", fmt.Errorf("ptx: group-aggregate kernel of %d groups and no states", a.Groups)
	}
	if a.Shared && !a.SharedFits() {
		return "", fmt.Errorf("ptx: group-aggregate tables of %d groups × %d states exceed shared memory (%d words)", a.Groups, len(states), GroupAggSharedMax)
	}
	G := int64(a.Groups)
	g := &gen{n: map[string]int{}, used: map[string]bool{}}
	codes, vals, n, out, S := g.rd(), g.rd(), g.rd(), g.rd(), g.rd()
	for _, p := range [][2]string{{codes, "codes"}, {vals, "vals"}, {n, "n"}, {out, "out"}, {S, "S"}} {
		g.ins("ld.param.u64 %s, [%s]", p[0], p[1])
	}
	g.ins("cvta.to.global.u64 %s, %s", codes, codes)
	g.ins("cvta.to.global.u64 %s, %s", vals, vals)
	g.ins("cvta.to.global.u64 %s, %s", out, out)
	b32, tid32 := g.r(), g.r()
	g.ins("mov.u32 %s, %%ctaid.x", b32)
	g.ins("mov.u32 %s, %%tid.x", tid32)
	b, tid := g.rd(), g.rd()
	g.ins("cvt.u64.u32 %s, %s", b, b32)
	g.ins("cvt.u64.u32 %s, %s", tid, tid32)
	lo, hi, t := g.rd(), g.rd(), g.rd()
	g.ins("mul.lo.u64 %s, %s, %s", t, n, b)
	g.ins("div.u64 %s, %s, %s", lo, t, S)
	g.ins("add.u64 %s, %s, %s", t, t, n)
	g.ins("div.u64 %s, %s, %s", hi, t, S)
	p := g.p()
	k, wa := g.rd(), g.rd()
	// The table rows update: shared (32-bit addresses) or the output itself.
	space, tab := "global", out
	if a.Shared {
		space = "shared"
		sh := g.r()
		g.ins("mov.u32 %s, gpn_gtab", sh)
		tab = g.rd()
		g.ins("cvt.u64.u32 %s, %s", tab, sh)
		for j, st := range states {
			l, d := g.label("ginit"), g.label("ginited")
			g.ins("mov.u64 %s, %s", k, tid)
			g.put(l)
			g.ins("setp.ge.u64 %s, %s, %d", p, k, G)
			g.ins("@%s bra %s", p, d)
			g.ins("add.u64 %s, %s, %d", wa, k, int64(j)*G)
			g.ins("mad.lo.u64 %s, %s, 8, %s", wa, wa, tab)
			g.ins("st.shared.u64 [%s], %d", wa, int64(st.Init()))
			g.ins("add.u64 %s, %s, %d", k, k, BlockSize)
			g.ins("bra %s", l)
			g.put(d)
		}
		g.ins("bar.sync 0")
	}
	needVals := a.States&^GroupCount != 0 || a.Float
	e := g.rd()
	g.ins("add.u64 %s, %s, %s", e, lo, tid)
	loop, done, next := g.label("gloop"), g.label("gdone"), g.label("gnext")
	g.put(loop)
	g.ins("setp.ge.u64 %s, %s, %s", p, e, hi)
	g.ins("@%s bra %s", p, done)
	ra := g.rd()
	g.ins("mad.lo.u64 %s, %s, 8, %s", ra, e, codes)
	g.ins("ld.global.nc.u64 %s, [%s]", k, ra)
	g.ins("setp.ge.u64 %s, %s, %d", p, k, G) // negative codes too, as unsigned
	g.ins("@%s bra %s", p, next)
	var vi, vf string
	if needVals {
		g.ins("mad.lo.u64 %s, %s, 8, %s", ra, e, vals)
		if a.Float {
			vf = g.fd()
			g.ins("ld.global.nc.f64 %s, [%s]", vf, ra)
			g.ins("setp.nan.f64 %s, %s, %s", p, vf, vf)
			g.ins("@%s bra %s", p, next)
		} else {
			vi = g.rd()
			g.ins("ld.global.nc.u64 %s, [%s]", vi, ra)
		}
	}
	// The ordered key of a float (min, max) and the square as a float64 (sum of squares; an
	// int64 is converted first).
	var key, sq string
	if a.States&(GroupMin|GroupMax) != 0 {
		key = vi
		if a.Float {
			key = g.rd()
			t2 := g.rd()
			g.ins("mov.b64 %s, %s", key, vf)
			g.ins("shr.s64 %s, %s, 63", t2, key)
			g.ins("shr.u64 %s, %s, 1", t2, t2)
			g.ins("xor.b64 %s, %s, %s", key, key, t2)
		}
	}
	if a.States&GroupSumSq != 0 {
		sq = g.fd()
		if a.Float {
			g.ins("mul.rn.f64 %s, %s, %s", sq, vf, vf)
		} else {
			g.ins("cvt.rn.f64.s64 %s, %s", sq, vi)
			g.ins("mul.rn.f64 %s, %s, %s", sq, sq, sq)
		}
	}
	for j, st := range states {
		g.ins("add.u64 %s, %s, %d", wa, k, int64(j)*G)
		g.ins("mad.lo.u64 %s, %s, 8, %s", wa, wa, tab)
		switch st {
		case GroupCount:
			g.ins("red.%s.add.u64 [%s], 1", space, wa)
		case GroupSum:
			if a.Float {
				g.ins("red.%s.add.f64 [%s], %s", space, wa, vf)
			} else {
				g.ins("red.%s.add.u64 [%s], %s", space, wa, vi)
			}
		case GroupSumSq:
			g.ins("red.%s.add.f64 [%s], %s", space, wa, sq)
		case GroupMin:
			g.ins("red.%s.min.s64 [%s], %s", space, wa, key)
		case GroupMax:
			g.ins("red.%s.max.s64 [%s], %s", space, wa, key)
		}
	}
	g.put(next)
	g.ins("add.u64 %s, %s, %d", e, e, BlockSize)
	g.ins("bra %s", loop)
	g.put(done)
	if a.Shared {
		// The block's tables into the output, one global atomic per word.
		g.ins("bar.sync 0")
		x, oa, xf := g.rd(), g.rd(), g.fd()
		for j, st := range states {
			l, d := g.label("gflush"), g.label("gflushed")
			g.ins("mov.u64 %s, %s", k, tid)
			g.put(l)
			g.ins("setp.ge.u64 %s, %s, %d", p, k, G)
			g.ins("@%s bra %s", p, d)
			g.ins("add.u64 %s, %s, %d", wa, k, int64(j)*G)
			g.ins("mad.lo.u64 %s, %s, 8, %s", oa, wa, out)
			g.ins("mad.lo.u64 %s, %s, 8, %s", wa, wa, tab)
			switch {
			case st == GroupSumSq || (st == GroupSum && a.Float):
				g.ins("ld.shared.f64 %s, [%s]", xf, wa)
				g.ins("red.global.add.f64 [%s], %s", oa, xf)
			default:
				g.ins("ld.shared.u64 %s, [%s]", x, wa)
				op := map[GroupStates]string{GroupCount: "add.u64", GroupSum: "add.u64", GroupMin: "min.s64", GroupMax: "max.s64"}[st]
				g.ins("red.global.%s [%s], %s", op, oa, x)
			}
			g.ins("add.u64 %s, %s, %d", k, k, BlockSize)
			g.ins("bra %s", l)
			g.put(d)
		}
	}
	g.ins("ret")

	var m strings.Builder
	fmt.Fprintf(&m, "// Generated by gpunotes (gpuarray/cuda/ptx/groupagg.go).\n.version %s\n.target %s\n.address_size 64\n\n", version, target)
	fmt.Fprintf(&m, ".visible .entry %s(\n\t.param .u64 codes,\n\t.param .u64 vals,\n\t.param .u64 n,\n\t.param .u64 out,\n\t.param .u64 S\n)\n.maxntid %d, 1, 1\n{\n", a.Name(), BlockSize)
	for _, pre := range []string{"p", "r", "rd", "fd"} {
		if c := g.n[pre]; c > 0 {
			typ := map[string]string{"p": ".pred", "r": ".b32", "rd": ".b64", "fd": ".f64"}[pre]
			fmt.Fprintf(&m, "\t.reg %s %%%s<%d>;\n", typ, pre, c+1)
		}
	}
	if a.Shared {
		fmt.Fprintf(&m, "\t.shared .align 8 .b8 gpn_gtab[%d];\n", 8*a.Groups*len(states))
	}
	m.WriteString(g.body.String())
	m.WriteString("}\n")
	return m.String(), nil
}
