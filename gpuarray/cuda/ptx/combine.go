package ptx

import (
	"fmt"
	"math"
	"strings"
)

func CombineName(sl []int64, divisor float64, f32 bool) string {
	var b strings.Builder
	b.WriteString("gpn_combine")
	for _, s := range sl {
		fmt.Fprintf(&b, "_%d", s)
	}
	fmt.Fprintf(&b, "_d%016x", math.Float64bits(divisor))
	if f32 {
		b.WriteString("_f32")
	}
	return b.String()
}

// CombinePTX writes the kernel that combines a group's partial sums: thread q of group
// blockIdx.y (descriptor words K, result address, then the first slot of each of its
// len(sl) tasks) sums task j's sl[j] slices (slot off_j + b*K + q) pairwise, then the tasks
// pairwise (left half, right half, then the two), divides by divisor (unless 0), rounds to
// float32 if f32, and stores element q of the result.
func CombinePTX(version, target, name string, sl []int64, divisor float64, f32 bool) string {
	g := &gen{n: map[string]int{}}
	c := g.combineHead(len(sl))
	vals := make([][]string, len(sl))
	for j, n := range sl {
		for b := range n {
			v := g.fd()
			g.ins("ld.global.nc.f64 %s, [%s]", v, g.combineSlot(c, j, b, 1))
			vals[j] = append(vals[j], v)
		}
	}
	var pairwise func(xs []string) string
	pairwise = func(xs []string) string {
		if len(xs) == 1 {
			return xs[0]
		}
		h := len(xs) / 2
		a, b := pairwise(xs[:h]), pairwise(xs[h:])
		o := g.fd()
		g.ins("add.rn.f64 %s, %s, %s", o, a, b)
		return o
	}
	tasks := make([]string, len(sl))
	for j := range sl {
		tasks[j] = pairwise(vals[j])
	}
	v := pairwise(tasks)
	if divisor != 0 {
		o := g.fd()
		g.ins("div.rn.f64 %s, %s, %s", o, v, f64imm(divisor))
		v = o
	}
	return g.combineTail(c, v, f32, version, target, name, "combine of partial sums")
}

func WelfordCombineName(sl []int64, std, f32 bool) string {
	var b strings.Builder
	b.WriteString("gpn_combine_welford")
	for _, s := range sl {
		fmt.Fprintf(&b, "_%d", s)
	}
	if std {
		b.WriteString("_std")
	}
	if f32 {
		b.WriteString("_f32")
	}
	return b.String()
}

// WelfordCombinePTX writes the kernel that combines a group's Welford partials (count, mean,
// M2 in three words per slot) for element q as the host does: task j's sl[j] slices merged in
// slice order (collectAxes, MergeWelford), the tasks merged pairwise (plan.Stage.Assemble's
// tree, plan.Chan), then M2 / count, its square root for a standard deviation (std), rounded
// to float32 if f32.
func WelfordCombinePTX(version, target, name string, sl []int64, std, f32 bool) string {
	g := &gen{n: map[string]int{}}
	c := g.combineHead(len(sl))
	type acc struct{ n, m, q string }
	tasks := make([]acc, len(sl))
	for j, ns := range sl {
		a := acc{g.fd(), g.fd(), g.fd()}
		for _, r := range []string{a.n, a.m, a.q} {
			g.ins("mov.f64 %s, %s", r, f64imm(0))
		}
		for b := range ns {
			ad := g.combineSlot(c, j, b, 3)
			n2, m2, q2 := g.fd(), g.fd(), g.fd()
			g.ins("ld.global.nc.f64 %s, [%s]", n2, ad)
			g.ins("ld.global.nc.f64 %s, [%s+8]", m2, ad)
			g.ins("ld.global.nc.f64 %s, [%s+16]", q2, ad)
			g.merge(RWelford, "", "", "", a.n, a.m, a.q, "", "", n2, m2, q2)
		}
		tasks[j] = a
	}
	var tree func(xs []acc) acc
	tree = func(xs []acc) acc {
		if len(xs) == 1 {
			return xs[0]
		}
		h := len(xs) / 2
		a, b := tree(xs[:h]), tree(xs[h:])
		g.merge(RWelford, "", "", "", a.n, a.m, a.q, "", "", b.n, b.m, b.q)
		return a
	}
	a := tree(tasks)
	v := g.fd()
	g.ins("div.rn.f64 %s, %s, %s", v, a.q, a.n)
	if std {
		g.ins("sqrt.rn.f64 %s, %s", v, v)
	}
	return g.combineTail(c, v, f32, version, target, name, "combine of Welford partials")
}

// combineRegs are the registers of a combine kernel's head: the group's descriptor, the
// partials, the element q, the group's K and its result's address.
type combineRegs struct{ d, parts, q, K, out, exit string }

// combineHead emits a combine kernel's start: thread q of group blockIdx.y, descriptor words
// K, result address, then the first slot of each of its tasks tasks; threads past K exit.
func (g *gen) combineHead(tasks int) combineRegs {
	W := 2 + tasks
	desc, parts := g.rd(), g.rd()
	g.ins("ld.param.u64 %s, [desc]", desc)
	g.ins("ld.param.u64 %s, [parts]", parts)
	g.ins("cvta.to.global.u64 %s, %s", desc, desc)
	g.ins("cvta.to.global.u64 %s, %s", parts, parts)
	ty, bx, tx := g.r(), g.r(), g.r()
	g.ins("mov.u32 %s, %%ctaid.y", ty)
	g.ins("mov.u32 %s, %%ctaid.x", bx)
	g.ins("mov.u32 %s, %%tid.x", tx)
	c := combineRegs{d: g.rd(), parts: parts, q: g.rd(), K: g.rd(), out: g.rd(), exit: g.label("exit")}
	t := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", t, ty, W*8)
	g.ins("add.u64 %s, %s, %s", c.d, desc, t)
	g.ins("ld.global.nc.u64 %s, [%s]", c.K, c.d)
	g.ins("ld.global.nc.u64 %s, [%s+8]", c.out, c.d)
	g.ins("cvta.to.global.u64 %s, %s", c.out, c.out)
	g.ins("mul.wide.u32 %s, %s, %d", c.q, bx, BlockSize)
	g.ins("cvt.u64.u32 %s, %s", t, tx)
	g.ins("add.u64 %s, %s, %s", c.q, c.q, t)
	pe := g.p()
	g.ins("setp.ge.u64 %s, %s, %s", pe, c.q, c.K)
	g.ins("@%s bra %s", pe, c.exit)
	return c
}

// combineSlot returns the address of slice b of task j's partial for element q (slot
// off_j + b*K + q, of words words).
func (g *gen) combineSlot(c combineRegs, j int, b int64, words int) string {
	off, t, ad := g.rd(), g.rd(), g.rd()
	g.ins("ld.global.nc.u64 %s, [%s+%d]", off, c.d, 16+8*j)
	g.ins("add.u64 %s, %s, %s", off, off, c.q)
	if b > 0 {
		g.ins("mul.lo.u64 %s, %s, %d", t, c.K, b)
		g.ins("add.u64 %s, %s, %s", off, off, t)
	}
	g.ins("mul.lo.u64 %s, %s, %d", ad, off, 8*words)
	g.ins("add.u64 %s, %s, %s", ad, ad, c.parts)
	return ad
}

// combineTail emits a combine kernel's end (v rounded to float32 if f32, stored as element q
// of the result) and returns the module.
func (g *gen) combineTail(c combineRegs, v string, f32 bool, version, target, name, what string) string {
	if f32 {
		f, o := g.f(), g.fd()
		g.ins("cvt.rn.f32.f64 %s, %s", f, v)
		g.ins("cvt.f64.f32 %s, %s", o, f)
		v = o
	}
	ad := g.rd()
	g.ins("shl.b64 %s, %s, 3", ad, c.q)
	g.ins("add.u64 %s, %s, %s", ad, ad, c.out)
	g.ins("st.global.f64 [%s], %s", ad, v)
	g.put(c.exit)
	g.ins("ret")

	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by gpunotes (gpuarray/cuda): %s.\n.version %s\n.target %s\n.address_size 64\n\n", what, version, target)
	fmt.Fprintf(&b, ".visible .entry %s(\n\t.param .u64 desc,\n\t.param .u64 parts\n)\n.maxntid %d, 1, 1\n{\n", name, BlockSize)
	for _, pre := range []string{"p", "r", "rd", "f", "fd"} {
		if n := g.n[pre]; n > 0 {
			typ := map[string]string{"p": ".pred", "r": ".b32", "rd": ".b64", "f": ".f32", "fd": ".f64"}[pre]
			fmt.Fprintf(&b, "\t.reg %s %%%s<%d>;\n", typ, pre, n+1)
		}
	}
	b.WriteString(g.body.String())
	b.WriteString("}\n")
	return b.String()
}
