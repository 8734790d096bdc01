package ptx

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// libProto is the prototype of a device library function, as nvcc wrote it in the library PTX.
type libProto struct {
	ret    string   // the return parameter's declaration without its name ("" for void)
	params []string // each parameter's type, e.g. ".b64"
	decl   string   // the .extern declaration for generated modules
}

var (
	protoRE   = regexp.MustCompile(`(?s)\.visible\s+\.func\s*(\(([^)]*)\))?\s*(\w+)\s*\(([^)]*)\)`)
	paramRE   = regexp.MustCompile(`\.param\s+((?:\.align\s+\d+\s+)?\.\w+)\s+(\w+)(\[\d+\])?`)
	versionRE = regexp.MustCompile(`(?m)^\s*\.version\s+(\S+)`)
	targetRE  = regexp.MustCompile(`(?m)^\s*\.target\s+(\S+)`)
)

// Library is what generated kernels need to know about the device library PTX.
type Library struct {
	version, target string
	protos          map[string]libProto
	// anyFunc accepts a call of any function: a dry run that only checks that the generator
	// expresses a spec (Lower).
	anyFunc bool
	// text is the library PTX, and inline what the inliner reads of it (see Options.Inline).
	text   string
	inline *inlineLib
}

// Version returns the PTX version of the device library (its .version line).
func (l *Library) Version() string { return l.version }

// Target returns the target of the device library (its .target line).
func (l *Library) Target() string { return l.target }

// DryRunLibrary returns a library that accepts a call of any function, for a dry run that
// only checks that the generator expresses a spec.
func DryRunLibrary() *Library {
	return &Library{version: "0", target: "0", anyFunc: true}
}

// ParseLibrary reads the PTX version, target and the .visible function prototypes of the
// device library.
func ParseLibrary(ptx string) (*Library, error) {
	lib := &Library{protos: map[string]libProto{}, text: ptx, inline: &inlineLib{}}
	if m := versionRE.FindStringSubmatch(ptx); m != nil {
		lib.version = m[1]
	} else {
		return nil, fmt.Errorf("device library PTX has no .version")
	}
	if m := targetRE.FindStringSubmatch(ptx); m != nil {
		lib.target = m[1]
	} else {
		return nil, fmt.Errorf("device library PTX has no .target")
	}
	for _, m := range protoRE.FindAllStringSubmatch(ptx, -1) {
		var p libProto
		if m[2] != "" {
			pm := paramRE.FindStringSubmatch(m[2])
			if pm == nil {
				return nil, fmt.Errorf("device library: cannot read the return of %s: %q", m[3], m[2])
			}
			p.ret = ".param " + pm[1] + " %s" + pm[3]
		}
		for _, pm := range paramRE.FindAllStringSubmatch(m[4], -1) {
			p.params = append(p.params, pm[1])
		}
		ret := ""
		if m[1] != "" {
			ret = strings.Join(strings.Fields(m[1]), " ") + " "
		}
		p.decl = ".extern .func " + ret + m[3] + "(" + strings.Join(strings.Fields(m[4]), " ") + ");"
		lib.protos[m[3]] = p
	}
	return lib, nil
}

// gen writes the PTX of one fused kernel.
type gen struct {
	lib      *Library
	body     strings.Builder
	n        map[string]int // register counts by prefix
	labels   int
	used     map[string]bool
	usedList []string
	rank     int
	leaves   int
	leafPtrs []string
	// roundKeys holds, per random leaf, the ten Philox round keys (k0, k1) in registers,
	// computed once per thread from the key in the leaf's descriptor.
	roundKeys map[int][10][2]string
	// shared declares the kernel's shared memory, if any.
	shared string
	// locals declares the kernel's per-thread local arrays, if any (the deferred queue).
	locals string
	// deferPred, while the element loop is emitted, is the predicate that a normal draw which
	// leaves the ziggurat's fast path sets (see Options.Defer); "" calls the slow path in place.
	deferPred string
	// keyParams names the kernel parameter that holds a random leaf's Philox key, by leaf
	// (keyLeaves); other leaves read theirs from the descriptor.
	keyParams map[int]string
	// deferring marks a kernel whose elements may be reduced out of order (argmin/argmax then
	// break ties by index).
	deferring bool
	// welfordRcp makes Welford updates multiply by the count's reciprocal (welfordMode).
	welfordRcp bool
	// localSet names the module-local library items that inlined bodies use (copied into the
	// kernel module).
	localSet map[string]bool
	// narrowOut makes store write elements of their own size (Spec.NarrowOut), of dtype outDT.
	narrowOut bool
	outDT     expr.DType
	// boolBits maps the f64 register of a bool loaded narrow (loadNarrow) to the 16-bit
	// register of its byte.
	boolBits map[string]string
	// externDecls declares the library variables that inlined bodies read, beyond the
	// ziggurat tables every module declares.
	externDecls string
	// slowInlined marks a kernel with the ziggurat's slow path copied in (Options.InlineSlow): its
	// registers are its own, so a cap (Options.MaxNReg) applies.
	slowInlined bool
	// split is the open group of split inlined bodies (Options.InlineSplit); splitArm lets the node
	// being emitted join it.
	split    splitGroup
	splitArm bool
	// consts is the constant bank of inlined bodies (Options.InlineConst).
	consts inlineConsts
	// zigKW marks a kernel that reads its own copy of the ziggurat tables (Options.NormalFold).
	zigKW bool
}

func (g *gen) reg(prefix string) string {
	g.n[prefix]++
	return fmt.Sprintf("%%%s%d", prefix, g.n[prefix])
}

func (g *gen) rd() string { return g.reg("rd") }
func (g *gen) r() string  { return g.reg("r") }
func (g *gen) rs() string { return g.reg("rs") }
func (g *gen) fd() string { return g.reg("fd") }
func (g *gen) f() string  { return g.reg("f") }
func (g *gen) p() string  { return g.reg("p") }

func (g *gen) label(what string) string {
	g.labels++
	return fmt.Sprintf("$L_%s_%d", what, g.labels)
}

func (g *gen) ins(format string, args ...any) {
	g.body.WriteString("\t")
	fmt.Fprintf(&g.body, format, args...)
	g.body.WriteString(";\n")
}

func (g *gen) put(label string) { g.body.WriteString(label + ":\n") }

func f64imm(v float64) string { return fmt.Sprintf("0d%016X", math.Float64bits(v)) }

// call emits a call of a library function; args are registers or immediates, ret a register
// (or "" for void functions).
func (g *gen) call(name, ret string, args ...string) error {
	if g.lib.anyFunc {
		g.ins("// call %s", name)
		return nil
	}
	p, ok := g.lib.protos[name]
	if !ok {
		return fmt.Errorf("device library lacks function %s", name)
	}
	if len(p.params) != len(args) {
		return fmt.Errorf("device library function %s takes %d parameters, generated code passes %d", name, len(p.params), len(args))
	}
	if (p.ret == "") != (ret == "") {
		return fmt.Errorf("device library function %s: return mismatch", name)
	}
	if !g.used[name] {
		g.used[name] = true
		g.usedList = append(g.usedList, name)
	}
	g.body.WriteString("\t{\n")
	var names []string
	for i, a := range args {
		pn := fmt.Sprintf("param%d", i)
		names = append(names, pn)
		g.body.WriteString(fmt.Sprintf("\t.param %s %s;\n", p.params[i], pn))
		g.ins("st.param%s [%s], %s", sizeType(p.params[i]), pn, a)
	}
	if ret != "" {
		g.body.WriteString("\t" + fmt.Sprintf(p.ret, "retval0") + ";\n")
		g.ins("call (retval0), %s, (%s)", name, strings.Join(names, ", "))
		g.ins("ld.param.b64 %s, [retval0]", ret)
	} else {
		g.ins("call %s, (%s)", name, strings.Join(names, ", "))
	}
	g.body.WriteString("\t}\n")
	return nil
}

// sizeType maps a parameter type (".b64", ".align 8 .b8", ".u32", …) to the store's type.
func sizeType(t string) string {
	f := strings.Fields(t)
	last := f[len(f)-1]
	switch last[len(last)-2:] {
	case "64":
		return ".b64"
	case "32":
		return ".b32"
	}
	return last
}

// GeneratePTX returns the PTX module of the fused kernel for s, to be linked with the device
// Library libPTX, and the kernel's name.
//
// The kernel takes (descriptors, out): blockIdx.y picks a task of the launch, blockIdx.x one of
// its slices (see Slices); each thread walks its slice's elements with a stride of BlockSize,
// keeping the iteration index as (row, column of the last dimension) so that leaf indices cost a
// multiply-add per element and a division only when a thread passes to another row. Random
// leaves run Philox4x32-10 and the ziggurat's fast path inline; the rare slow path, transcendental
// functions and block reductions are calls into the library. In element kernels that draw
// normals, an element whose draw leaves the fast path is queued and computed later (Options.Defer).
func GeneratePTX(s *Spec, libPTX string) (ptx, name string, err error) {
	if err := s.Validate(); err != nil {
		return "", "", err
	}
	lib, err := ParseLibrary(libPTX)
	if err != nil {
		return "", "", err
	}
	return Generate(s, lib)
}

func Generate(s *Spec, lib *Library) (string, string, error) {
	if s.Kept > 0 {
		return generateAxes(s, lib)
	}
	if s.Tile {
		return generateTiled(s, lib)
	}
	g := &gen{lib: lib, n: map[string]int{}, used: map[string]bool{}, rank: s.Rank, leaves: s.Leaves(), narrowOut: s.NarrowOut, outDT: s.Nodes[len(s.Nodes)-1].DType}
	name := "gpn_fused_" + s.Key()
	R, L := s.Rank, g.leaves
	words := SpecDescWords(s)

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
	pExit := g.p()
	exit := g.label("exit")
	g.ins("setp.ge.u64 %s, %s, %s", pExit, sl, S)
	g.ins("@%s bra %s", pExit, exit)
	M := g.rd()
	g.ins("mov.u64 %s, %s", M, dims[0])
	for k := 1; k < R; k++ {
		g.ins("mul.lo.u64 %s, %s, %s", M, M, dims[k])
	}
	lo, hi, sl1 := g.rd(), g.rd(), g.rd()
	g.ins("mul.lo.u64 %s, %s, %s", t, M, sl)
	g.ins("div.u64 %s, %s, %s", lo, t, S)
	g.ins("add.u64 %s, %s, 1", sl1, sl)
	g.ins("mul.lo.u64 %s, %s, %s", t, M, sl1)
	g.ins("div.u64 %s, %s, %s", hi, t, S)

	g.keyParams = map[int]string{}
	for i, l := range KeyLeaves(s) {
		g.keyParams[l] = fmt.Sprintf("key%d", i)
	}
	lv := g.loadLeaves(s, d, 8*(R+2))
	if s.StoredMirror() {
		lv = append(lv, g.mirrorPosition(d, dims, DescWords(R, L)))
	}
	acc, accI, wn, wm, wq := g.accumulators(s.Reduce)
	var cnt *counter // counting kernels (ptxgen_count.go)
	if s.Reduce == RCount {
		cnt = g.countInit(s, tid32, out, outOff)
	}
	var ia accum // integer and complex reductions (reduce_lanes.go)
	if s.AccLane() != LaneF {
		var err error
		if ia, err = g.newAccum(s); err != nil {
			return "", "", err
		}
	}
	var dq *deferQueue
	if opt.Defer && DrawsNormals(s) {
		dq = g.newDeferQueue(s)
	}

	e, c, row, tid := g.rd(), g.rd(), g.rd(), g.rd()
	g.ins("cvt.u64.u32 %s, %s", tid, tid32)
	g.ins("add.u64 %s, %s, %s", e, lo, tid)
	loopEnd, loop := g.label("loopend"), g.label("loop")
	pe := g.p()
	g.ins("setp.ge.u64 %s, %s, %s", pe, e, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	dl := dims[R-1]
	g.ins("div.u64 %s, %s, %s", row, e, dl)
	g.ins("mul.lo.u64 %s, %s, %s", t, row, dl)
	g.ins("sub.u64 %s, %s, %s", c, e, t)
	rowBase := func(lv []leafRegs, row string) {
		// Decompose row into the indices of dims 0..R-2 and set each leaf's row base.
		for l := range lv {
			g.ins("mov.u64 %s, %s", lv[l].rb, lv[l].off)
		}
		rem := g.rd()
		g.ins("mov.u64 %s, %s", rem, row)
		for k := R - 2; k >= 0; k-- {
			ik, q := g.rd(), g.rd()
			if k == 0 {
				g.ins("mov.u64 %s, %s", ik, rem)
			} else {
				g.ins("div.u64 %s, %s, %s", q, rem, dims[k])
				g.ins("mul.lo.u64 %s, %s, %s", t, q, dims[k])
				g.ins("sub.u64 %s, %s, %s", ik, rem, t)
				g.ins("mov.u64 %s, %s", rem, q)
			}
			for l := range lv {
				g.ins("mad.lo.s64 %s, %s, %s, %s", lv[l].rb, ik, lv[l].str[k], lv[l].rb)
			}
		}
	}
	rowBase(lv, row)
	each := func(ev val, e string) error {
		if cnt != nil {
			g.countAdd(cnt, ev.r)
			return nil
		}
		if s.Reduce == RNone {
			g.store(ev, e, out, outOff)
			return nil
		}
		if ia.l != LaneF {
			return g.accAdd(ia, ev, e)
		}
		v, err := g.reduceValue(s, ev)
		if err != nil {
			return err
		}
		return g.accumulate(s.Reduce, v, e, acc, accI, wn, wm, wq, out, outOff)
	}
	if dq != nil {
		g.deferStart(dq, e, hi, BlockSize)
	}
	g.put(loop)
	check := g.label("check")
	if u := UnrollOf(s); u > 1 {
		single := g.label("single")
		if err := g.unrolled(s, lv, e, c, hi, dl, BlockSize, u, single, each); err != nil {
			return "", "", err
		}
		g.ins("bra %s", check)
		g.put(single)
	} else if g.pairs(s, dq) {
		single := g.label("single")
		if err := g.pairedInOrder(s, dq, lv, e, c, dl, BlockSize, single); err != nil {
			return "", "", err
		}
		g.put(single)
	}
	if dq == nil {
		vals, skip, end, err := g.elementValues(s, lv, c)
		if err != nil {
			return "", "", err
		}
		if err := g.foldValues(vals, skip, end, "", e, each); err != nil {
			return "", "", err
		}
	} else if err := g.deferredLoopBody(s, dq, lv, e, c, hi, dl, t, BlockSize, rowBase, each); err != nil {
		return "", "", err
	}
	g.ins("add.u64 %s, %s, %d", e, e, BlockSize)
	g.ins("add.u64 %s, %s, %d", c, c, BlockSize)
	g.put(check)
	g.ins("setp.ge.u64 %s, %s, %s", pe, e, hi)
	g.ins("@%s bra %s", pe, loopEnd)
	pc := g.p()
	g.ins("setp.lt.u64 %s, %s, %s", pc, c, dl)
	g.ins("@%s bra %s", pc, loop)
	q := g.rd()
	g.ins("div.u64 %s, %s, %s", q, c, dl)
	g.ins("mul.lo.u64 %s, %s, %s", t, q, dl)
	g.ins("sub.u64 %s, %s, %s", c, c, t)
	g.ins("add.u64 %s, %s, %s", row, row, q)
	rowBase(lv, row)
	g.ins("bra %s", loop)
	g.put(loopEnd)

	if cnt != nil {
		g.countFlush(cnt, tid32)
	} else if ia.l != LaneF {
		ptr := g.rd()
		g.ins("add.u64 %s, %s, %s", t, outOff, sl)
		g.ins("mul.lo.u64 %s, %s, %d", t, t, 8*s.PartialWords())
		g.ins("add.u64 %s, %s, %s", ptr, out, t)
		g.laneBlockReduce(ia, tid, ptr, s.PartialWords())
	} else if err := g.blockReduce(s, out, outOff, sl, acc, accI, wn, wm, wq); err != nil {
		return "", "", err
	}
	g.put(exit)
	g.ins("ret")

	return g.module(s, name), name, nil
}

// blockReduce emits the end of a full reduction's block: the block's threads' accumulators
// combined by the library in a fixed order into partial slot outOff + sl.
func (g *gen) blockReduce(s *Spec, out, outOff, sl, acc, accI, wn, wm, wq string) error {
	if s.Reduce == RNone {
		return nil
	}
	t, ptr := g.rd(), g.rd()
	g.ins("add.u64 %s, %s, %s", t, outOff, sl)
	g.ins("mul.lo.u64 %s, %s, %d", t, t, 8*s.Reduce.words())
	g.ins("add.u64 %s, %s, %s", ptr, out, t)
	// The library takes generic pointers.
	g.ins("cvta.global.u64 %s, %s", ptr, ptr)
	switch s.Reduce {
	case RSum:
		return g.call("gpn_block_sum", "", acc, ptr)
	case RMin:
		return g.call("gpn_block_minmax", "", acc, "0", ptr)
	case RMax:
		return g.call("gpn_block_minmax", "", acc, "1", ptr)
	case RArgMin, RArgMax:
		p2 := g.rd()
		g.ins("add.u64 %s, %s, 8", p2, ptr)
		isMax := "0"
		if s.Reduce == RArgMax {
			isMax = "1"
		}
		return g.call("gpn_block_arg", "", acc, accI, isMax, ptr, p2)
	case RWelford:
		return g.call("gpn_block_welford", "", wn, wm, wq, ptr)
	}
	return fmt.Errorf("kernel spec: unknown reduction %d", s.Reduce)
}

// leafRegs are a leaf's registers: buffer address (a random leaf's Philox key), offset,
// strides per axis, and the current row's base index.
type leafRegs struct {
	ptr, off, rb string
	str          []string
}

// elementValue emits the expression's nodes at the current element: each leaf's source index
// is its row base plus c times its innermost stride. It returns the result's value.
func (g *gen) elementValue(s *Spec, lv []leafRegs, c string) (val, error) {
	return g.elementValueFrom(s, lv, c, nil)
}

// leafIndices emits each leaf's source index at column c of the current row.
func (g *gen) leafIndices(lv []leafRegs, c string) []string {
	idx := make([]string, len(lv))
	for l := range lv {
		idx[l] = g.rd()
		g.ins("mad.lo.s64 %s, %s, %s, %s", idx[l], c, lv[l].str[len(lv[l].str)-1], lv[l].rb)
	}
	return idx
}

// elementValueFrom is elementValue with the values of input nodes already loaded (pre, by node
// index; nil: load them here).
func (g *gen) elementValueFrom(s *Spec, lv []leafRegs, c string, pre map[int]val) (val, error) {
	return g.valueAt(s, g.leafIndices(lv, c), pre)
}

// valueAt emits the expression's nodes at the element whose leaves' source indices are idx
// (pre as in elementValueFrom) and returns the result's value.
func (g *gen) valueAt(s *Spec, idx []string, pre map[int]val) (val, error) {
	vals := make([]val, len(s.Nodes))
	for i := range s.Nodes {
		if v, ok := pre[i]; ok {
			vals[i] = v
			continue
		}
		g.splitArm = g.splitArmed(s, i, vals)
		if !g.splitArm {
			g.flushSplit()
		}
		v, err := g.node(s, i, vals, idx)
		g.splitArm = false
		if err != nil {
			return val{}, err
		}
		if v.l != LaneOf(s.Nodes[i].DType) {
			return val{}, fmt.Errorf("kernel spec: node %d of %v computed in lane %d (internal)", i, s.Nodes[i].DType, v.l)
		}
		vals[i] = v
	}
	g.flushSplit()
	return vals[len(vals)-1], nil
}

// loadLeaves loads each leaf's descriptor words, which start at byte first of the task's
// descriptor d, and the Philox round keys of random leaves, once per thread.
func (g *gen) loadLeaves(s *Spec, d string, first int) []leafRegs {
	R, L := s.Rank, g.leaves
	lv := make([]leafRegs, L)
	for l := range lv {
		base := first + 8*l*(R+2)
		lv[l].ptr, lv[l].off, lv[l].rb = g.rd(), g.rd(), g.rd()
		g.leafPtrs = append(g.leafPtrs, lv[l].ptr)
		g.ins("ld.global.nc.u64 %s, [%s+%d]", lv[l].ptr, d, base)
		g.ins("ld.global.nc.u64 %s, [%s+%d]", lv[l].off, d, base+8)
		for k := 0; k < R; k++ {
			sr := g.rd()
			g.ins("ld.global.nc.u64 %s, [%s+%d]", sr, d, base+16+8*k)
			lv[l].str = append(lv[l].str, sr)
		}
	}
	g.roundKeys = map[int][10][2]string{}
	for _, nd := range s.Nodes {
		if nd.Kind != NRandom || nd.Leaf < 0 || nd.Leaf >= L {
			continue
		}
		if _, ok := g.roundKeys[nd.Leaf]; ok {
			continue
		}
		if rk, ok := g.roundKeys[nd.SameKey-1]; ok && nd.SameKey > 0 {
			g.roundKeys[nd.Leaf] = rk // the same Philox key: share the registers
			continue
		}
		var rk [10][2]string
		rk[0] = [2]string{g.r(), g.r()}
		key := lv[nd.Leaf].ptr
		if pn, ok := g.keyParams[nd.Leaf]; ok {
			key = g.rd()
			g.ins("ld.param.u64 %s, [%s]", key, pn)
		}
		g.ins("mov.b64 {%s, %s}, %s", rk[0][0], rk[0][1], key)
		for r := 1; r < 10 && !opt.RoundKeysInLoop; r++ {
			rk[r] = [2]string{g.r(), g.r()}
			g.ins("add.u32 %s, %s, -1640531527", rk[r][0], rk[r-1][0]) // 0x9E3779B9
			g.ins("add.u32 %s, %s, -1150833019", rk[r][1], rk[r-1][1]) // 0xBB67AE85
		}
		g.roundKeys[nd.Leaf] = rk
	}
	return lv
}

// accumulators declares and initializes a thread's accumulators for reduction r.
func (g *gen) accumulators(r Reduce) (acc, accI, wn, wm, wq string) {
	switch r {
	case RSum:
		acc = g.fd()
		g.ins("mov.f64 %s, %s", acc, f64imm(0))
	case RMin, RArgMin:
		acc = g.fd()
		g.ins("mov.f64 %s, %s", acc, f64imm(math.Inf(1)))
	case RMax, RArgMax:
		acc = g.fd()
		g.ins("mov.f64 %s, %s", acc, f64imm(math.Inf(-1)))
	case RWelford:
		wn, wm, wq = g.fd(), g.fd(), g.fd()
		for _, r := range []string{wn, wm, wq} {
			g.ins("mov.f64 %s, %s", r, f64imm(0))
		}
	}
	if r == RArgMin || r == RArgMax {
		accI = g.rd()
		g.ins("mov.s64 %s, -1", accI)
	}
	return acc, accI, wn, wm, wq
}

// MaxNReg caps the registers per thread of linked fused kernels (GPUNOTES_JIT_MAXREG; 0: the
// JIT's choice), for measuring occupancy against spills. Measured, it binds the library
// functions a kernel calls but not the kernel itself (with the slow path inlined, a cap of 80
// left 112 registers; likely the entry's .maxntid, which takes precedence over the option):
// Options.MaxNReg caps a kernel.
var MaxNReg = func() int {
	n, _ := strconv.Atoi(os.Getenv("GPUNOTES_JIT_MAXREG"))
	return max(n, 0)
}()

// EnvCount reads a non-negative integer setting, def when unset or not a number.
func EnvCount(name string, def int) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil || n < 0 {
		return def
	}
	return n
}

// capDirectives returns the register directives of the kernel's entry: none unless its slow
// path is inlined and the library functions it still calls are the block reductions (small,
// compiled apart: an entry may not cap below a callee's count, see Device.kernel).
func (g *gen) capDirectives() string {
	if !g.slowInlined || opt.MaxNReg == 0 && opt.MinBlocks == 0 {
		return ""
	}
	for _, fn := range g.usedList {
		if !strings.HasPrefix(fn, "gpn_block_") {
			return ""
		}
	}
	if opt.MaxNReg > 0 {
		return fmt.Sprintf(".maxnreg %d\n", opt.MaxNReg)
	}
	return fmt.Sprintf(".minnctapersm %d\n", opt.MinBlocks)
}

// module wraps the generated body into a PTX module with entry name.
func (g *gen) module(s *Spec, name string) string {
	lib := g.lib
	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by gpunotes (gpuarray/cuda) for kernel spec %s; links with the gpunotes device library.\n", s.Key())
	fmt.Fprintf(&b, ".version %s\n.target %s\n.address_size 64\n\n", lib.version, lib.target)
	b.WriteString(".extern .global .align 8 .b64 gpn_zig_k[256];\n")
	b.WriteString(".extern .global .align 8 .b64 gpn_zig_w[256];\n")
	b.WriteString(g.externDecls)
	if g.zigKW {
		b.WriteString(zigKWDecl)
	}
	for _, fn := range g.usedList {
		b.WriteString(lib.protos[fn].decl + "\n")
	}
	b.WriteString(g.localItems())
	fmt.Fprintf(&b, "\n.visible .entry %s(\n\t.param .u64 desc,\n\t.param .u64 out", name)
	for i := range len(g.keyParams) {
		fmt.Fprintf(&b, ",\n\t.param .u64 key%d", i)
	}
	fmt.Fprintf(&b, "\n)\n.maxntid %d, 1, 1\n%s{\n", BlockSize, g.capDirectives())
	for _, pre := range []string{"p", "rs", "r", "rd", "f", "fd"} {
		if n := g.n[pre]; n > 0 {
			typ := map[string]string{"p": ".pred", "rs": ".b16", "r": ".b32", "rd": ".b64", "f": ".f32", "fd": ".f64"}[pre]
			fmt.Fprintf(&b, "\t.reg %s %%%s<%d>;\n", typ, pre, n+1)
		}
	}
	b.WriteString(g.shared)
	b.WriteString(g.locals)
	b.WriteString(PredBools(g.body.String()))
	b.WriteString("}\n")
	return b.String()
}

// philox emits Philox4x32-10 of counter (lo32(idx), hi32(idx), s, 0) under the round keys rk
// (registers, see gen.roundKeys) and returns the four output words.
func (g *gen) philox(idx string, s uint32, rk [10][2]string) [4]string {
	c := [4]string{g.r(), g.r(), g.r(), g.r()}
	g.ins("mov.b64 {%s, %s}, %s", c[0], c[1], idx)
	g.ins("mov.u32 %s, %d", c[2], s)
	g.ins("mov.u32 %s, 0", c[3])
	for r := 0; r < 10; r++ {
		k0, k1 := rk[r][0], rk[r][1]
		if k0 == "" {
			// Round keys derived here (Options.RoundKeysInLoop): two additions instead of two registers.
			k0, k1 = g.r(), g.r()
			g.ins("add.u32 %s, %s, %d", k0, rk[0][0], int32(uint32(r)*0x9E3779B9))
			g.ins("add.u32 %s, %s, %d", k1, rk[0][1], int32(uint32(r)*0xBB67AE85))
		}
		hi0, lo0, hi1, lo1 := g.r(), g.r(), g.r(), g.r()
		g.ins("mul.hi.u32 %s, %s, -766435501", hi0, c[0]) // 0xD2511F53
		g.ins("mul.lo.u32 %s, %s, -766435501", lo0, c[0])
		g.ins("mul.hi.u32 %s, %s, -845247145", hi1, c[2]) // 0xCD9E8D57
		g.ins("mul.lo.u32 %s, %s, -845247145", lo1, c[2])
		n0, n2 := g.r(), g.r()
		g.ins("xor.b32 %s, %s, %s", n0, hi1, c[1])
		g.ins("xor.b32 %s, %s, %s", n0, n0, k0)
		g.ins("xor.b32 %s, %s, %s", n2, hi0, c[3])
		g.ins("xor.b32 %s, %s, %s", n2, n2, k1)
		c = [4]string{n0, lo1, n2, lo0}
	}
	return c
}

// zigKWDecl declares gpn_zig_kw, a kernel module's own copy of the ziggurat tables K and W of
// package rng (the library's gpn_zig_k and gpn_zig_w, which kernels.TablesHeader writes from
// the same tables), interleaved: K[j], W[j] bits, for j in 0..255.
var zigKWDecl = func() string {
	t := rng.ZigguratTables()
	var b strings.Builder
	fmt.Fprintf(&b, ".global .align 16 .b64 gpn_zig_kw[%d] = {", 2*rng.ZigLayers)
	for j := range rng.ZigLayers {
		if j > 0 {
			b.WriteString(",")
		}
		if j%4 == 0 {
			b.WriteString("\n\t")
		}
		fmt.Fprintf(&b, "%d, %d", t.K[j], math.Float64bits(t.W[j]))
	}
	b.WriteString("};\n")
	return b.String()
}()

// random emits the value of a random leaf at linear index idx into o (see package gpuarray/rng).
// The leaf's Philox key is the first word of its descriptor (k0 low, k1 high).
func (g *gen) random(nd *Node, idx, o string) error {
	rk, ok := g.roundKeys[nd.Leaf]
	if !ok {
		return fmt.Errorf("kernel spec: random node without a leaf descriptor (leaf %d)", nd.Leaf)
	}
	k0, k1 := rk[0][0], rk[0][1]
	if d := nd.Rand.Dist; d > expr.Integers {
		return g.randomLib(nd, idx, o, k0, k1)
	}
	x := g.philox(idx, 0, rk)
	w := g.rd()
	g.ins("mov.b64 %s, {%s, %s}", w, x[0], x[1])
	switch nd.Rand.Dist {
	case expr.Uniform:
		u, uf := g.rd(), g.fd()
		g.ins("shr.u64 %s, %s, 11", u, w)
		g.ins("cvt.rn.f64.u64 %s, %s", uf, u)
		g.ins("mul.rn.f64 %s, %s, %s", uf, uf, f64imm(1.0/(1<<53)))
		g.ins("mul.rn.f64 %s, %s, %s", uf, uf, f64imm(nd.Rand.P1-nd.Rand.P0))
		g.ins("add.rn.f64 %s, %s, %s", o, uf, f64imm(nd.Rand.P0))
	case expr.Integers:
		lo := int64(nd.Rand.P0)
		n := uint64(int64(nd.Rand.P1) - lo)
		h := g.rd()
		g.ins("mul.hi.u64 %s, %s, %d", h, w, n)
		g.ins("add.s64 %s, %s, %d", h, h, lo)
		g.ins("cvt.rn.f64.s64 %s, %s", o, h)
	case expr.Normal:
		u, j, jo, kb, kv := g.rd(), g.r(), g.rd(), g.rd(), g.rd()
		z := g.fd()
		g.ins("shr.u64 %s, %s, 11", u, w)
		g.ins("and.b32 %s, %s, 255", j, x[2])
		wv := ""
		if opt.NormalFold {
			// Layer j's k and w in one 16-byte load from the kernel's own copy of the tables.
			g.zigKW = true
			wv = g.fd()
			wbits := g.rd()
			g.ins("mul.wide.u32 %s, %s, 16", jo, j)
			g.ins("mov.u64 %s, gpn_zig_kw", kb)
			g.ins("add.u64 %s, %s, %s", kb, kb, jo)
			g.ins("ld.global.nc.v2.u64 {%s, %s}, [%s]", kv, wbits, kb)
			g.ins("mov.b64 %s, %s", wv, wbits)
		} else {
			g.ins("mul.wide.u32 %s, %s, 8", jo, j)
			g.ins("mov.u64 %s, gpn_zig_k", kb)
			g.ins("add.u64 %s, %s, %s", kb, kb, jo)
			g.ins("ld.global.nc.u64 %s, [%s]", kv, kb)
		}
		pf := g.p()
		slow, done := g.label("slow"), g.label("done")
		g.ins("setp.ge.u64 %s, %s, %s", pf, u, kv)
		if g.deferPred != "" {
			// The whole element is computed later, with the slow path (deferElement); the
			// value below is not used. No branch: the warp stays together.
			g.ins("or.pred %s, %s, %s", g.deferPred, g.deferPred, pf)
		} else {
			g.ins("@%s bra %s", pf, slow)
		}
		zf := g.fd()
		if wv == "" {
			wb := g.rd()
			wv = g.fd()
			g.ins("mov.u64 %s, gpn_zig_w", wb)
			g.ins("add.u64 %s, %s, %s", wb, wb, jo)
			g.ins("ld.global.nc.f64 %s, [%s]", wv, wb)
		}
		g.ins("cvt.rn.f64.u64 %s, %s", zf, u)
		g.ins("mul.rn.f64 %s, %s, %s", z, zf, wv)
		sg := g.r()
		g.ins("and.b32 %s, %s, 256", sg, x[2])
		if opt.NormalFold {
			// The sign bit set by an integer xor: neg.f64 is an FP64 add and two selects.
			lo, hi := g.r(), g.r()
			g.ins("shl.b32 %s, %s, 23", sg, sg)
			g.ins("mov.b64 {%s, %s}, %s", lo, hi, z)
			g.ins("xor.b32 %s, %s, %s", hi, hi, sg)
			g.ins("mov.b64 %s, {%s, %s}", z, lo, hi)
		} else {
			ps := g.p()
			g.ins("setp.ne.u32 %s, %s, 0", ps, sg)
			g.ins("@%s neg.f64 %s, %s", ps, z, z)
		}
		if g.deferPred == "" {
			g.ins("bra %s", done)
			g.put(slow)
			if err := g.slowPath(z, idx, k0, k1, x); err != nil {
				return err
			}
			g.put(done)
		}
		t := z
		if !opt.NormalFold || nd.Rand.P1 != 1 {
			t = g.fd()
			g.ins("mul.rn.f64 %s, %s, %s", t, z, f64imm(nd.Rand.P1))
		} // z * 1 is z, bit for bit (z is never NaN)
		g.ins("add.rn.f64 %s, %s, %s", o, t, f64imm(nd.Rand.P0))
	default:
		return fmt.Errorf("kernel spec: distribution %v not supported on the GPU", nd.Rand.Dist)
	}
	return nil
}

// slowPath finishes normal draw z of element idx whose first Philox block x left the
// ziggurat's fast path: the library's gpn_normal_slow, copied in (Options.InlineSlow) or called.
func (g *gen) slowPath(z, idx, k0, k1 string, x [4]string) error {
	if opt.InlineSlow {
		if f := g.inlineFor("gpn_normal_slow"); f != nil {
			g.slowInlined = true
			return g.inline("gpn_normal_slow", f, z, idx, k0, k1, x[0], x[1], x[2], x[3])
		}
	}
	return g.call("gpn_normal_slow", z, idx, k0, k1, x[0], x[1], x[2], x[3])
}

// randomLib emits a draw of the distributions that kernels/random.cu implements (the
// rejection samplers and their kin): a call for the standard draw, then the scale.
func (g *gen) randomLib(nd *Node, idx, o, k0, k1 string) error {
	imm := func(v float64) string {
		r := g.fd()
		g.ins("mov.f64 %s, %s", r, f64imm(v))
		return r
	}
	p0, p1 := nd.Rand.P0, nd.Rand.P1
	switch nd.Rand.Dist {
	case expr.Exponential:
		t := g.fd()
		if err := g.call("gpn_exponential", t, idx, k0, k1); err != nil {
			return err
		}
		g.ins("mul.rn.f64 %s, %s, %s", o, t, f64imm(p0))
	case expr.Gamma:
		t := g.fd()
		if err := g.call("gpn_gamma", t, idx, k0, k1, imm(p0)); err != nil {
			return err
		}
		g.ins("mul.rn.f64 %s, %s, %s", o, t, f64imm(p1))
	case expr.Poisson:
		return g.call("gpn_poisson", o, idx, k0, k1, imm(p0))
	case expr.Binomial:
		return g.call("gpn_binomial", o, idx, k0, k1, imm(p0), imm(p1))
	case expr.Beta:
		return g.call("gpn_beta", o, idx, k0, k1, imm(p0), imm(p1))
	default:
		return fmt.Errorf("kernel spec: distribution %v not supported on the GPU", nd.Rand.Dist)
	}
	return nil
}

// accumulate folds value v of element e into the thread's accumulators (elementwise kernels
// store their values instead: store).
func (g *gen) accumulate(r Reduce, v, e, acc, accI, wn, wm, wq, out, outOff string) error {
	switch r {
	case RSum:
		g.ins("add.rn.f64 %s, %s, %s", acc, acc, v)
	case RMin, RMax:
		op := "min"
		if r == RMax {
			op = "max"
		}
		t, p := g.fd(), g.p()
		g.ins("%s.f64 %s, %s, %s", op, t, acc, v)
		g.ins("setp.nan.f64 %s, %s, %s", p, acc, v)
		g.ins("@%s add.f64 %s, %s, %s", p, t, acc, v)
		g.ins("mov.f64 %s, %s", acc, t)
	case RArgMin, RArgMax:
		// take = no element yet || (v is NaN && acc is not) || v strictly better (ordered).
		p0, pvn, pan, pb, take := g.p(), g.p(), g.p(), g.p(), g.p()
		cmp := "lt"
		if r == RArgMax {
			cmp = "gt"
		}
		g.ins("setp.lt.s64 %s, %s, 0", p0, accI)
		g.ins("setp.nan.f64 %s, %s, %s", pvn, v, v)
		g.ins("setp.num.f64 %s, %s, %s", pan, acc, acc)
		g.ins("and.pred %s, %s, %s", pvn, pvn, pan)
		g.ins("setp.%s.f64 %s, %s, %s", cmp, pb, v, acc)
		g.ins("or.pred %s, %s, %s", take, p0, pvn)
		g.ins("or.pred %s, %s, %s", take, take, pb)
		if g.deferring {
			// Elements may come out of order: an equal value (or a NaN after a NaN) with a
			// smaller index wins, as it would in order.
			pt, pn, pl := g.p(), g.p(), g.p()
			g.ins("setp.eq.f64 %s, %s, %s", pt, v, acc)
			g.ins("setp.nan.f64 %s, %s, %s", pn, v, v)
			g.ins("setp.nan.f64 %s, %s, %s", pl, acc, acc)
			g.ins("and.pred %s, %s, %s", pn, pn, pl)
			g.ins("or.pred %s, %s, %s", pt, pt, pn)
			g.ins("setp.lt.s64 %s, %s, %s", pl, e, accI)
			g.ins("and.pred %s, %s, %s", pt, pt, pl)
			g.ins("or.pred %s, %s, %s", take, take, pt)
		}
		g.ins("@%s mov.f64 %s, %s", take, acc, v)
		g.ins("@%s mov.u64 %s, %s", take, accI, e)
	case RWelford:
		g.welfordStep(v, wn, wm, wq, g.welfordRcp)
	default:
		return fmt.Errorf("kernel spec: unknown reduction %d", r)
	}
	return nil
}
