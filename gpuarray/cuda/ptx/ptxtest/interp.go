// Package ptxtest interprets generated PTX on the host, for tests: the instructions that the
// fused kernels, the op-specific kernels and the device library's pieces they copy in use, one
// block of ptx.BlockSize threads at a time, warps' collectives and barriers taken together as
// the GPU takes them. Tests of package ptx run a spec's kernel through it with no GPU (Fused:
// the descriptors written as a launch writes them); the runtime's tests (package cuda) run
// the kernels of its own launch geometry through it.
//
// The interpreter is slow and keeps global counters (Executed, ActiveMasks): tests that use it
// do not run in parallel.
package ptxtest

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// Program is a generated kernel's body parsed for Run: instructions and label positions.
type Program struct {
	lines  []string
	labels map[string]int
	shared map[string]uint64 // shared arrays' base addresses (in their own space)
	local  map[string]uint64 // per-thread local arrays' base addresses (in each thread's space)
}

// The device library's ziggurat tables as the interpreter places them in global memory
// (ZigTables writes them there).
const (
	ZigKAddr = 1 << 40
	ZigWAddr = ZigKAddr + 8*rng.ZigLayers
	// ZigKWAddr is where a kernel's own interleaved copy (gpn_zig_kw, normalFold) lies.
	ZigKWAddr = ZigWAddr + 8*rng.ZigLayers
)

// ZigTables writes the ziggurat tables (gpn_zig_k, gpn_zig_w) into mem.
func ZigTables(mem map[uint64]uint64) {
	z := rng.ZigguratTables()
	for j := range rng.ZigLayers {
		mem[ZigKAddr+uint64(8*j)] = z.K[j]
		mem[ZigWAddr+uint64(8*j)] = math.Float64bits(z.W[j])
		mem[ZigKWAddr+uint64(16*j)] = z.K[j]
		mem[ZigKWAddr+uint64(16*j+8)] = math.Float64bits(z.W[j])
	}
}

func Parse(tb testing.TB, text string) *Program {
	tb.Helper()
	p := &Program{labels: map[string]int{}, shared: map[string]uint64{}, local: map[string]uint64{}}
	text = ptx.CollapseInlinedSlow(text)
	body := text[strings.Index(text, "\n{\n")+3 : strings.LastIndex(text, "}")]
	var next, nextLocal uint64
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), ";"))
		if !strings.HasPrefix(l, "//") {
			l = strings.Join(strings.Fields(l), " ") // the library's lines (inlined bodies) hold tabs
		}
		switch {
		case l == "" || l == "{" || strings.HasPrefix(l, "{ //") || l == "}" || strings.HasPrefix(l, ".reg") || strings.HasPrefix(l, ".param") || strings.HasPrefix(l, ".pragma") || strings.HasPrefix(l, "//"):
		case strings.HasPrefix(l, ".shared"):
			f := strings.Fields(l) // .shared .align 8 .b8 name[elements of .bN]
			name, size, _ := strings.Cut(strings.TrimSuffix(f[len(f)-1], "]"), "[")
			n, _ := strconv.Atoi(size)
			bits, _ := strconv.Atoi(strings.TrimPrefix(f[len(f)-2], ".b"))
			p.shared[name] = next
			next += uint64(n * max(bits/8, 1))
		case strings.HasPrefix(l, ".local"):
			f := strings.Fields(l) // .local .align 8 .b8 name[bytes]
			name, size, _ := strings.Cut(strings.TrimSuffix(f[len(f)-1], "]"), "[")
			n, _ := strconv.Atoi(size)
			p.local[name] = nextLocal
			nextLocal += uint64(n)
		case strings.HasSuffix(l, ":"):
			p.labels[strings.TrimSuffix(l, ":")] = len(p.lines)
		default:
			p.lines = append(p.lines, l)
		}
	}
	return p
}

// thread is one thread's state: its registers, program counter, and the parameters it
// stored for a call.
type thread struct {
	reg   map[string]uint64
	pc    int
	done  bool
	param map[string]uint64 // .param values stored before a call, and a call's retval0
	local map[uint64]uint64 // the thread's local memory (byte address -> 64-bit word)
	coll  bool              // stopped at a warp collective (shfl.sync, activemask, bar.warp.sync)
	bar   bool              // stopped at bar.sync
}

// Executed, where a test sets it, counts the instructions the interpreter runs by opcode
// (those a false predicate skips left out; a warp collective counted once per lane).
var Executed map[string]int

// Run interprets one block (ctaid x, y) of 256 threads of p over global memory mem (byte
// address -> 64-bit word) with kernel parameters params. Each thread runs until it stops at a
// barrier or a warp collective; then the lanes of a warp stopped at the same collective take
// it together (the group: an activemask's result, and a shuffle or bar.warp.sync must name
// only lanes of it), and when every thread left waits at a barrier, all go on. call is run for
// each library call (name, the thread's stored parameters in order). It supports the
// instructions the fused kernels of input leaves, the integer and complex reductions, the
// scans and the deferral of slow normal draws use.
func Run(tb testing.TB, p *Program, bx, by int, params map[string]uint64, mem map[uint64]uint64, call func(tid int, name string, args []uint64)) {
	tb.Helper()
	shared := map[uint64]uint64{}
	th := make([]*thread, ptx.BlockSize)
	for i := range th {
		th[i] = &thread{reg: map[string]uint64{}, param: map[string]uint64{}, local: map[uint64]uint64{}}
	}
	for {
		for tid, x := range th {
			if !x.done && !x.coll && !x.bar {
				p.step(tb, x, tid, bx, by, params, mem, shared, call)
			}
		}
		moved := false
		for w := 0; w < ptx.BlockSize; w += 32 {
			if p.collectives(tb, th[w:w+32]) {
				moved = true
			}
		}
		if moved {
			continue
		}
		live := 0
		for _, x := range th {
			if !x.done {
				live++
				if !x.bar {
					tb.Fatalf("block (%d, %d) is stuck: a thread neither returns nor waits at a barrier", bx, by)
				}
			}
		}
		if live == 0 {
			return
		}
		for _, x := range th {
			x.bar = false
		}
	}
}

// ActiveMasks counts the groups of lanes that ran an activemask.b32, by whether the group
// was a whole warp (tests read it to see which path a kernel took).
var ActiveMasks = map[bool]int{}

// collectives runs the warp collectives at which lanes of a warp stopped, each group of lanes
// stopped at the same one together, and reports whether any ran. A shuffle or bar.warp.sync
// waits until every lane it names is in its group. A shuffle reads, in each lane, its source
// lane's operand before any lane writes its result.
func (p *Program) collectives(tb testing.TB, lanes []*thread) bool {
	tb.Helper()
	groups := map[int]uint32{}
	for i, x := range lanes {
		if x.coll {
			groups[x.pc] |= 1 << i
		}
	}
	ran := false
	for pc, gm := range groups {
		l0 := p.lines[pc]
		op, rest, _ := strings.Cut(l0, " ")
		a := strings.Split(rest, ", ")
		if op != "activemask.b32" {
			ms := a[len(a)-1]
			m, err := strconv.ParseInt(ms, 0, 64)
			if strings.HasPrefix(ms, "%") {
				// A register mask (an activemask's): the same in every lane of the group.
				m, err = int64(lanes[bits.TrailingZeros32(gm)].reg[ms]), nil
				for i, x := range lanes {
					if gm&(1<<i) != 0 && x.reg[ms] != uint64(m) {
						tb.Fatalf("%q: lanes of one group name different member masks", l0)
					}
				}
			}
			if err != nil {
				tb.Fatalf("%q: member mask %q is no immediate", l0, ms)
			}
			if uint32(m)&^gm != 0 {
				continue // named lanes are elsewhere: wait for them
			}
			if strings.HasPrefix(op, "vote.") && uint32(m) != gm {
				tb.Fatalf("%q: a vote of lanes %#x among the group %#x", l0, uint32(m), gm)
			}
		}
		ran = true
		res := make([]uint64, len(lanes))
		for i, x := range lanes {
			if gm&(1<<i) == 0 {
				continue
			}
			v := func(s string) int {
				if strings.HasPrefix(s, "%") {
					return int(x.reg[s])
				}
				n, _ := strconv.Atoi(s)
				return n
			}
			src := i
			switch op {
			case "activemask.b32":
				res[i] = uint64(gm)
				if i == bits.TrailingZeros32(gm) {
					ActiveMasks[gm == math.MaxUint32]++
				}
				continue
			case "bar.warp.sync":
				continue
			case "vote.sync.any.pred":
				for j, y := range lanes {
					if gm&(1<<j) != 0 && y.reg[a[1]] != 0 {
						res[i] = 1
					}
				}
				continue
			case "shfl.sync.down.b32":
				if j := i + v(a[2]); j < 32 {
					src = j
				}
			case "shfl.sync.up.b32":
				if j := i - v(a[2]); j >= 0 {
					src = j
				}
			case "shfl.sync.idx.b32":
				src = v(a[2]) & 31
			default:
				tb.Fatalf("warp collective %q", l0)
			}
			if gm&(1<<src) == 0 {
				tb.Fatalf("%q: lane %d reads lane %d, which is elsewhere", l0, i, src)
			}
			res[i] = lanes[src].reg[a[1]] & math.MaxUint32
		}
		for i, x := range lanes {
			if gm&(1<<i) == 0 {
				continue
			}
			if op != "bar.warp.sync" {
				x.reg[a[0]] = res[i]
			}
			x.pc++
			x.coll = false
		}
	}
	return ran
}

// step runs thread x until it stops at a barrier (x.bar, past it) or a warp collective
// (x.coll, at it), or returns (x.done).
func (p *Program) step(tb testing.TB, x *thread, tid, bx, by int, params map[string]uint64, mem, shared map[uint64]uint64, call func(int, string, []uint64)) {
	val := func(s string) uint64 {
		switch s {
		case "%ctaid.x":
			return uint64(bx)
		case "%ctaid.y":
			return uint64(by)
		case "%tid.x":
			return uint64(tid)
		case "%laneid":
			return uint64(tid & 31)
		case "%ntid.x":
			return ptx.BlockSize
		case "%nctaid.x": // the grid's width, where a test gives it
			return params["nctaid.x"]
		}
		if strings.HasPrefix(s, "%") {
			return x.reg[s]
		}
		if strings.HasPrefix(s, "0d") || strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0f") {
			v, _ := strconv.ParseUint(s[2:], 16, 64)
			return v
		}
		if b, ok := p.shared[s]; ok {
			return b
		}
		if b, ok := p.local[s]; ok {
			return b
		}
		switch s {
		case "gpn_zig_k":
			return ZigKAddr
		case "gpn_zig_w":
			return ZigWAddr
		case "gpn_zig_kw":
			return ZigKWAddr
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatalf("operand %q", s)
		}
		return uint64(v)
	}
	addr := func(s string) uint64 {
		s = strings.Trim(s, "[]")
		if i := strings.Index(s, "+"); i >= 0 {
			return val(s[:i]) + val(s[i+1:])
		}
		return val(s)
	}
	f, b := math.Float64frombits, math.Float64bits
	for steps := 0; ; steps++ {
		if steps > 1<<24 || x.pc >= len(p.lines) {
			tb.Fatalf("thread %d ran away at %d", tid, x.pc)
		}
		l := p.lines[x.pc]
		x.pc++
		if strings.HasPrefix(l, "@") {
			sp := strings.Index(l, " ")
			pr, neg := l[1:sp], false
			if strings.HasPrefix(pr, "!") {
				pr, neg = pr[1:], true
			}
			if (x.reg[pr] != 0) == neg {
				continue
			}
			l = l[sp+1:]
		}
		op, rest, _ := strings.Cut(l, " ")
		if Executed != nil {
			Executed[op]++
		}
		if strings.HasPrefix(op, "shfl.sync.") || strings.HasPrefix(op, "vote.sync.") || op == "activemask.b32" || op == "bar.warp.sync" {
			if strings.HasPrefix(p.lines[x.pc-1], "@") {
				tb.Fatalf("a predicated warp collective %q", l)
			}
			x.pc--
			x.coll = true
			return
		}
		if op == "ld.global.nc.v2.u64" {
			// {k, w} of a ziggurat layer: two words at a 16-byte aligned address.
			halves, src, _ := strings.Cut(strings.TrimPrefix(rest, "{"), "}, ")
			lo, hi, _ := strings.Cut(halves, ", ")
			at := addr(src)
			w0, ok0 := mem[at]
			w1, ok1 := mem[at+8]
			if !ok0 || !ok1 || at%16 != 0 {
				tb.Fatalf("thread %d of block (%d, %d): %q reads unwritten or misaligned memory at %#x", tid, bx, by, l, at)
			}
			x.reg[lo], x.reg[hi] = w0, w1
			continue
		}
		if op == "mov.b64" && strings.Contains(rest, "{") {
			// {lo, hi} from a 64-bit value, or a 64-bit value from {lo, hi}.
			if strings.HasPrefix(rest, "{") {
				halves, src, _ := strings.Cut(strings.TrimPrefix(rest, "{"), "}, ")
				lo, hi, _ := strings.Cut(halves, ", ")
				v := val(src)
				x.reg[lo], x.reg[hi] = v&math.MaxUint32, v>>32
			} else {
				dst, halves, _ := strings.Cut(rest, ", {")
				lo, hi, _ := strings.Cut(strings.TrimSuffix(halves, "}"), ", ")
				x.reg[dst] = val(lo)&math.MaxUint32 | val(hi)<<32
			}
			continue
		}
		a := strings.Split(rest, ", ")
		set := func(v uint64) { x.reg[a[0]] = v }
		pred := func(c bool) {
			if c {
				set(1)
			} else {
				set(0)
			}
		}
		i64 := func(k int) int64 { return int64(val(a[k])) }
		switch op {
		case "ret":
			x.done = true
			return
		case "bar.sync":
			x.bar = true
			return
		case "bra", "bra.uni":
			x.pc = p.labels[a[0]]
		case "ld.param.u64":
			v, ok := params[strings.Trim(a[1], "[]")]
			if !ok {
				tb.Fatalf("parameter %s", a[1])
			}
			set(v)
		case "cvta.to.global.u64", "cvta.global.u64", "mov.u32", "mov.u64", "mov.s64", "mov.f64", "mov.b64", "cvt.u64.u32", "mov.f32", "mov.b32", "mov.b16":
			set(val(a[1]))
		case "mul.wide.u32", "mul.lo.u64":
			set(val(a[1]) * val(a[2]))
		case "add.u64":
			set(val(a[1]) + val(a[2]))
		case "sub.u64":
			set(val(a[1]) - val(a[2]))
		case "div.u64":
			set(val(a[1]) / val(a[2]))
		case "rem.u64":
			set(val(a[1]) % val(a[2]))
		case "mad.lo.s64", "mad.lo.u64":
			set(val(a[1])*val(a[2]) + val(a[3]))
		case "shl.b64":
			set(val(a[1]) << val(a[2]))
		case "shr.u64":
			set(val(a[1]) >> val(a[2]))
		case "and.b64":
			set(val(a[1]) & val(a[2]))
		case "or.b64":
			set(val(a[1]) | val(a[2]))
		case "setp.ge.u64":
			set(map[bool]uint64{true: 1}[val(a[1]) >= val(a[2])])
		case "setp.lt.u64":
			set(map[bool]uint64{true: 1}[val(a[1]) < val(a[2])])
		case "setp.lt.and.u64":
			set(map[bool]uint64{true: 1}[val(a[1]) < val(a[2]) && val(a[3]) != 0])
		case "ld.global.nc.u64", "ld.global.nc.f64":
			w, ok := mem[addr(a[1])]
			if !ok {
				tb.Fatalf("thread %d of block (%d, %d): %q reads unwritten memory at %#x", tid, bx, by, l, addr(a[1]))
			}
			set(w)
		case "ld.global.nc.f32": // from the aligned word that holds the element, as st.global.u32 writes it
			at := addr(a[1])
			w, ok := mem[at&^7]
			if !ok || at%4 != 0 {
				tb.Fatalf("thread %d of block (%d, %d): %q reads unwritten or misaligned memory at %#x", tid, bx, by, l, at)
			}
			set(w >> (8 * (at & 7)) & math.MaxUint32)
		case "ld.global.nc.u8", "ld.global.nc.u16", "ld.global.nc.u32":
			// From the aligned word that holds the element, zero-extended (as st.global.u8..u32
			// write it); the register's width is at least the element's.
			bits := map[string]uint64{"ld.global.nc.u8": 8, "ld.global.nc.u16": 16, "ld.global.nc.u32": 32}[op]
			at := addr(a[1])
			w, ok := mem[at&^7]
			if !ok || at%(bits/8) != 0 {
				tb.Fatalf("thread %d of block (%d, %d): %q reads unwritten or misaligned memory at %#x", tid, bx, by, l, at)
			}
			set(w >> (8 * (at & 7)) & (1<<bits - 1))
		case "cvt.s64.s8", "cvt.s64.s16", "cvt.s64.s32": // sign extension of the low bits
			sh := 64 - map[string]uint64{"cvt.s64.s8": 8, "cvt.s64.s16": 16, "cvt.s64.s32": 32}[op]
			set(uint64(int64(val(a[1])<<sh) >> sh))
		case "cvt.u64.u8", "cvt.u64.u16": // zero extension of the low bits
			set(val(a[1]) & (1<<map[string]uint64{"cvt.u64.u8": 8, "cvt.u64.u16": 16}[op] - 1))
		case "cvt.rn.f64.u16":
			set(b(float64(val(a[1]) & math.MaxUint16)))
		case "cvt.rzi.u16.f64":
			set(uint64(uint16(f(val(a[1])))))
		case "st.global.f64", "st.global.u64":
			mem[addr(a[0])] = val(a[1])
		case "st.global.u8", "st.global.u16", "st.global.u32", "st.global.f32":
			// Into the aligned word that holds the element.
			bits := map[string]uint64{"st.global.u8": 8, "st.global.u16": 16, "st.global.u32": 32, "st.global.f32": 32}[op]
			at := addr(a[0])
			if at%(bits/8) != 0 {
				tb.Fatalf("%q: misaligned address %#x", l, at)
			}
			w, sh, m := at&^7, 8*(at&7), uint64(1)<<bits-1
			mem[w] = mem[w]&^(m<<sh) | (val(a[1])&m)<<sh
		case "cvt.u16.u64":
			set(val(a[1]) & math.MaxUint16)
		case "ld.global.u64", "ld.global.f64":
			w, ok := mem[addr(a[1])]
			if !ok {
				tb.Fatalf("thread %d of block (%d, %d): %q reads unwritten memory at %#x", tid, bx, by, l, addr(a[1]))
			}
			set(w)
		case "ld.shared.u64", "ld.shared.f64":
			set(shared[addr(a[1])])
		case "st.shared.u64", "st.shared.f64":
			shared[addr(a[0])] = val(a[1])
		case "cvt.rn.f32.f64": // f32 registers hold the float32's bits
			set(uint64(math.Float32bits(float32(f(val(a[1]))))))
		case "cvt.f64.f32":
			set(b(float64(math.Float32frombits(uint32(val(a[1]))))))
		case "cvt.u32.u64":
			set(val(a[1]) & math.MaxUint32)
		case "add.s64":
			set(val(a[1]) + val(a[2]))
		case "mul.lo.s64":
			set(val(a[1]) * val(a[2]))
		case "shr.s64":
			set(uint64(i64(1) >> val(a[2])))
		case "min.s64":
			set(uint64(min(i64(1), i64(2))))
		case "max.s64":
			set(uint64(max(i64(1), i64(2))))
		case "min.u64":
			set(min(val(a[1]), val(a[2])))
		case "max.u64":
			set(max(val(a[1]), val(a[2])))
		case "setp.lt.s64":
			pred(i64(1) < i64(2))
		case "setp.gt.s64":
			pred(i64(1) > i64(2))
		case "setp.ge.s64":
			pred(i64(1) >= i64(2))
		case "setp.eq.s64", "setp.eq.u64":
			pred(val(a[1]) == val(a[2]))
		case "setp.ne.u64":
			pred(val(a[1]) != val(a[2]))
		case "setp.gt.u64":
			pred(val(a[1]) > val(a[2]))
		case "and.pred":
			pred(val(a[1]) != 0 && val(a[2]) != 0)
		case "or.pred":
			pred(val(a[1]) != 0 || val(a[2]) != 0)
		case "xor.pred":
			pred((val(a[1]) != 0) != (val(a[2]) != 0))
		case "not.pred":
			pred(val(a[1]) == 0)
		case "setp.nan.f64":
			pred(math.IsNaN(f(val(a[1]))) || math.IsNaN(f(val(a[2]))))
		case "max.f64", "min.f64": // PTX's: NaN only when both are
			x, y := f(val(a[1])), f(val(a[2]))
			switch {
			case math.IsNaN(x):
				set(b(y))
			case math.IsNaN(y), op == "max.f64" && x > y, op == "min.f64" && x < y:
				set(b(x))
			default:
				set(b(y))
			}
		case "setp.num.f64":
			pred(!math.IsNaN(f(val(a[1]))) && !math.IsNaN(f(val(a[2]))))
		case "setp.lt.f64":
			pred(f(val(a[1])) < f(val(a[2])))
		case "setp.lt.and.f64":
			pred(f(val(a[1])) < f(val(a[2])) && val(a[3]) != 0)
		case "selp.f64", "selp.b64":
			if val(a[3]) != 0 {
				set(val(a[1]))
			} else {
				set(val(a[2]))
			}
		case "setp.ge.f64": // ordered: false with a NaN
			pred(f(val(a[1])) >= f(val(a[2])))
		case "setp.gt.f64":
			pred(f(val(a[1])) > f(val(a[2])))
		// Bin arithmetic (histograms): comparisons (neu: true with a NaN), their bools
		// combined, truncation.
		case "setp.le.f64":
			pred(f(val(a[1])) <= f(val(a[2])))
		case "setp.neu.and.f64":
			pred(!(f(val(a[1])) == f(val(a[2]))) && val(a[3]) != 0)
		case "setp.neu.or.f64":
			pred(!(f(val(a[1])) == f(val(a[2]))) || val(a[3]) != 0)
		case "setp.neu.xor.f64":
			pred(!(f(val(a[1])) == f(val(a[2]))) != (val(a[3]) != 0))
		case "cvt.rzi.f64.f64":
			set(b(math.Trunc(f(val(a[1])))))
		case "cvt.rn.f64.s64":
			set(b(float64(i64(1))))
		case "cvt.rn.f64.u64":
			set(b(float64(val(a[1]))))
		case "cvt.rzi.u64.f64":
			set(uint64(f(val(a[1]))))
		case "add.rn.f64", "add.f64": // add.f64 rounds to nearest too
			set(b(f(val(a[1])) + f(val(a[2]))))
		case "sub.rn.f64":
			set(b(f(val(a[1])) - f(val(a[2]))))
		case "mul.rn.f64", "mul.f64": // mul.f64 rounds to nearest too
			set(b(f(val(a[1])) * f(val(a[2]))))
		case "div.rn.f64":
			set(b(f(val(a[1])) / f(val(a[2]))))
		case "rcp.rn.f64":
			set(b(1 / f(val(a[1]))))
		// The inlined fast path of exp (the library's, constants as immediates): f32 registers
		// hold the float32's bits.
		case "fma.rn.f64":
			set(b(math.FMA(f(val(a[1])), f(val(a[2])), f(val(a[3])))))
		case "add.s32":
			set((val(a[1]) + val(a[2])) & math.MaxUint32)
		case "abs.f32":
			set(val(a[1]) & (math.MaxUint32 >> 1))
		case "setp.lt.f32":
			pred(math.Float32frombits(uint32(val(a[1]))) < math.Float32frombits(uint32(val(a[2]))))
		case "setp.geu.f32": // unordered: true with a NaN
			pred(!(math.Float32frombits(uint32(val(a[1]))) < math.Float32frombits(uint32(val(a[2])))))
		// The counting kernels' (ptxgen_count.go): 32-bit shared counters, atomics, and the
		// integer test of a value.
		case "shr.u32":
			set(uint64(uint32(val(a[1])) >> val(a[2])))
		case "shr.s32": // exp's rest (the scale split in two halves)
			set(uint64(uint32(int32(uint32(val(a[1]))) >> val(a[2]))))
		case "sub.s32":
			set((val(a[1]) - val(a[2])) & math.MaxUint32)
		case "st.shared.u32":
			shared[addr(a[0])] = val(a[1]) & math.MaxUint32
		case "ld.shared.u32":
			set(shared[addr(a[1])] & math.MaxUint32)
		case "red.shared.add.u32":
			shared[addr(a[0])] = (shared[addr(a[0])] + val(a[1])) & math.MaxUint32
		case "red.global.add.u64":
			mem[addr(a[0])] += val(a[1])
		case "atom.global.cas.b64": // one thread at a time: the old word, the new one where it was a[2]
			at := addr(a[1])
			w, ok := mem[at]
			if !ok {
				tb.Fatalf("thread %d of block (%d, %d): %q reads unwritten memory at %#x", tid, bx, by, l, at)
			}
			if w == val(a[2]) {
				mem[at] = val(a[3])
			}
			set(w)
		case "atom.global.add.u64": // one thread at a time: the old word, the sum stored (the hash join's)
			at := addr(a[1])
			w, ok := mem[at]
			if !ok {
				tb.Fatalf("thread %d of block (%d, %d): %q reads unwritten memory at %#x", tid, bx, by, l, at)
			}
			mem[at] = w + val(a[2])
			set(w)
		case "mul.hi.u64": // the high word of the 128-bit product (the hash join's partitions)
			hi, _ := bits.Mul64(val(a[1]), val(a[2]))
			set(hi)
		// The group-aggregate kernels' (ptx/groupagg.go): 64-bit reductions in shared and
		// global memory (one thread at a time, so atomic), and the ordered key of a float.
		case "red.global.add.f64", "red.shared.add.f64", "red.shared.add.u64", "red.global.min.s64", "red.shared.min.s64", "red.global.max.s64", "red.shared.max.s64":
			m := mem
			if strings.Contains(op, ".shared.") {
				m = shared
			}
			w, v := m[addr(a[0])], val(a[1])
			switch op[strings.LastIndex(op[:len(op)-4], ".")+1:] {
			case "add.f64":
				w = b(f(w) + f(v))
			case "add.u64":
				w += v
			case "min.s64":
				w = uint64(min(int64(w), int64(v)))
			case "max.s64":
				w = uint64(max(int64(w), int64(v)))
			}
			m[addr(a[0])] = w
		case "xor.b64":
			set(val(a[1]) ^ val(a[2]))
		case "cvt.rzi.s64.f64":
			v := f(val(a[1]))
			switch {
			case math.IsNaN(v):
				set(0)
			case v >= math.MaxInt64:
				set(math.MaxInt64)
			case v <= math.MinInt64:
				set(1 << 63)
			default:
				set(uint64(int64(v)))
			}
		case "st.param.b64":
			x.param[strings.Trim(a[0], "[]")] = val(a[1])
		case "st.param.b32":
			x.param[strings.Trim(a[0], "[]")] = val(a[1]) & math.MaxUint32
		case "ld.param.b64":
			set(x.param[strings.Trim(a[1], "[]")])
		case "call":
			if a[0] == "(retval0)" {
				// A library function with a result: the interpreter knows gpn_normal_slow,
				// which finishes the normal draw of element idx (its result: rng's Normal).
				if name := a[1]; name != "gpn_normal_slow" {
					tb.Fatalf("call %q: no result known", l)
				}
				k := rng.Key{K0: uint32(x.param["param1"]), K1: uint32(x.param["param2"])}
				x.param["retval0"] = b(k.Normal(x.param["param0"]))
				continue
			}
			name := strings.TrimSuffix(a[0], ",")
			var args []uint64
			for _, pn := range a[1:] {
				args = append(args, x.param[strings.Trim(pn, "()")])
			}
			if name == "call" || len(a) < 2 {
				tb.Fatalf("call %q", l)
			}
			call(tid, name, args)
		case "mov.pred":
			set(val(a[1]))
		case "add.u32":
			set((val(a[1]) + val(a[2])) & math.MaxUint32)
		case "mul.lo.u32":
			set((val(a[1]) * val(a[2])) & math.MaxUint32)
		case "mul.hi.u32":
			set((val(a[1]) & math.MaxUint32) * (val(a[2]) & math.MaxUint32) >> 32)
		case "mad.lo.u32":
			set((val(a[1])*val(a[2]) + val(a[3])) & math.MaxUint32)
		case "div.u32":
			set((val(a[1]) & math.MaxUint32) / (val(a[2]) & math.MaxUint32))
		case "xor.b32":
			set((val(a[1]) ^ val(a[2])) & math.MaxUint32)
		case "and.b32":
			set(val(a[1]) & val(a[2]) & math.MaxUint32)
		case "or.b32":
			set((val(a[1]) | val(a[2])) & math.MaxUint32)
		case "shl.b32":
			set((val(a[1]) << val(a[2])) & math.MaxUint32)
		case "sub.u32":
			set((val(a[1]) - val(a[2])) & math.MaxUint32)
		case "min.s32":
			set(uint64(uint32(min(int32(val(a[1])), int32(val(a[2]))))))
		case "max.s32":
			set(uint64(uint32(max(int32(val(a[1])), int32(val(a[2]))))))
		case "setp.ge.s32":
			pred(int32(val(a[1])) >= int32(val(a[2])))
		case "shr.b32":
			set((val(a[1]) & math.MaxUint32) >> val(a[2]))
		case "setp.eq.u32":
			pred(uint32(val(a[1])) == uint32(val(a[2])))
		case "setp.ne.u32":
			pred(uint32(val(a[1])) != uint32(val(a[2])))
		case "setp.lt.u32":
			pred(uint32(val(a[1])) < uint32(val(a[2])))
		case "setp.ge.u32":
			pred(uint32(val(a[1])) >= uint32(val(a[2])))
		case "neg.f64":
			set(b(-f(val(a[1]))))
		case "setp.eq.f64":
			pred(f(val(a[1])) == f(val(a[2])))
		case "setp.neu.f64":
			pred(!(f(val(a[1])) == f(val(a[2]))))
		case "ld.local.u64", "ld.local.f64", "ld.local.u32":
			// Unwritten local memory holds garbage: a NaN, which shows if it is used.
			w, ok := x.local[addr(a[1])]
			if !ok {
				w = math.MaxUint64
			}
			set(w)
		case "st.local.u64", "st.local.f64":
			x.local[addr(a[0])] = val(a[1])
		case "st.local.u32":
			x.local[addr(a[0])] = val(a[1]) & math.MaxUint32
		default:
			tb.Fatalf("instruction %q not interpreted", l)
		}
	}
}
