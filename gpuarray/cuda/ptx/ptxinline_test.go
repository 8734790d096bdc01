package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/kernels"
)

// libGen returns the device library of flavour fl (kernels.LibPTX), parsed, and a generator
// over it.
func libGen(t *testing.T, fl string) ([]byte, *Library, *gen) {
	t.Helper()
	ptx, err := kernels.LibPTX(fl)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := ParseLibrary(string(ptx))
	if err != nil {
		t.Fatal(err)
	}
	return ptx, lib, &gen{lib: lib, n: map[string]int{}, used: map[string]bool{}}
}

// expSinOfNormals is the kernel of sum(exp(x) + sin(x)) of normals x, whose exp and sin the
// Library has inlined.
func expSinOfNormals() *Spec {
	normal := Node{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{42, 7}}}
	return &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{normal, {Kind: NUnary, Op: expr.OpExp, Args: [3]int{0}},
		{Kind: NUnary, Op: expr.OpSin, Args: [3]int{0}}, {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{1, 2}}}}
}

// TestInlinedBodiesAreTheLibrarys: every library function the inliner copies into kernels
// (exp and sin among them) comes out as the library's own instructions, in order, with only
// its registers and labels renamed, its parameter loads and result store turned into moves
// from the arguments and into the result, and each ret a branch to the block's end; a kernel of
// exp(x) + sin(x) of a normal x then calls neither.
func TestInlinedBodiesAreTheLibrarys(t *testing.T) {
	for _, fl := range []string{kernels.SM90, kernels.Generic} {
		ptx, lib, g := libGen(t, fl)
		// Line for line with the immediates as the library has them (TestInlinedConstants
		// checks the constant bank's words).
		defer func(c bool) { opt.InlineConst = c }(opt.InlineConst)
		opt.InlineConst = false
		for _, name := range []string{"gpn_exp", "gpn_sin", "gpn_cos", "gpn_log", "gpn_tanh", "gpn_pow"} {
			if g.inlineFor(name) == nil {
				t.Errorf("%s: %s is not inlined", fl, name)
			}
		}
		undo := regexp.MustCompile(`_i\d+\b`)
		for name, f := range lib.inline.fns {
			g.body.Reset()
			var args []string
			for i := range f.params {
				args = append(args, fmt.Sprintf("%%fd%d", 901+i))
			}
			if err := g.inline(name, f, "%fd900", args...); err != nil {
				t.Fatalf("%s: %s: %v", fl, name, err)
			}
			var got []string
			for _, l := range strings.Split(g.body.String(), "\n") {
				l = strings.TrimSpace(l)
				if l == "" {
					continue
				}
				got = append(got, l)
			}
			if got[0] != "{ // "+name+" inlined: %fd900 = "+name+"("+strings.Join(args, ", ")+")" || got[len(got)-1] != "}" || !strings.HasPrefix(got[len(got)-2], "$L_inl_"+name+"_") {
				t.Fatalf("%s: %s: not one block ending in its own label: %q … %q", fl, name, got[0], got[len(got)-2:])
			}
			end := strings.TrimSuffix(got[len(got)-2], ":")
			got = got[1 : len(got)-2]
			var want []string
			for _, l := range f.body {
				if l != "" && !strings.HasPrefix(l, "//") {
					want = append(want, l)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %s: %d lines inlined, the library has %d", fl, name, len(got), len(want))
			}
			params := map[string]string{}
			for i, p := range f.params {
				params[p] = args[i]
			}
			for i, w := range want {
				gl := got[i]
				switch {
				case inlineLdParamRE.MatchString(w) && params[inlineLdParamRE.FindStringSubmatch(w)[3]] != "":
					m := inlineLdParamRE.FindStringSubmatch(w)
					if gl != "mov."+movType(m[1], params[m[3]])+" %i_"+m[2][1:]+", "+params[m[3]]+";" {
						t.Errorf("%s: %s: parameter load %q became %q", fl, name, w, gl)
					}
				case inlineStRetRE.MatchString(w):
					m := inlineStRetRE.FindStringSubmatch(w)
					if gl != "mov.b64 %fd900, %i_"+m[2][1:]+";" {
						t.Errorf("%s: %s: result store %q became %q", fl, name, w, gl)
					}
				case inlineRetRE.MatchString(w):
					if !strings.HasSuffix(gl, "bra "+end+";") {
						t.Errorf("%s: %s: %q became %q, not a branch to %s", fl, name, w, gl, end)
					}
				default:
					back := undo.ReplaceAllString(strings.ReplaceAll(gl, "%i_", "%"), "")
					if back != w {
						t.Errorf("%s: %s: line %d %q became %q", fl, name, i, w, gl)
					}
				}
			}
		}
		s := expSinOfNormals()
		k, _, err := GeneratePTX(s, string(ptx))
		if err != nil {
			t.Fatal(err)
		}
		// Once each in the element loop and where deferred elements are computed: by each lane
		// for its own, and by the warp together where coopPays.
		copies := 2
		if CoopPays(s) {
			copies = 3
		}
		// And twice in a paired pass (pairedInOrder).
		paired := strings.Count(k, PairMark)
		copies += 2 * paired
		if strings.Contains(k, "gpn_exp,") || strings.Contains(k, "gpn_sin,") || strings.Count(k, "gpn_exp inlined") != copies || strings.Count(k, "gpn_sin inlined") != copies {
			t.Errorf("%s: exp(x) + sin(x): calls or inlined bodies not as expected", fl)
		}
		opt.Inline = false
		k, _, err = GeneratePTX(s, string(ptx))
		opt.Inline = true
		if err != nil {
			t.Fatal(err)
		}
		copies += 2 * (strings.Count(k, PairMark) - paired)
		if strings.Count(k, "call (retval0), gpn_exp,") != copies || strings.Contains(k, "inlined") {
			t.Errorf("%s: with GPUNOTES_PTX_INLINE=0 the kernel does not call gpn_exp", fl)
		}
	}
}

// TestSlowPathInlined: a kernel drawing normals copies the library's gpn_normal_slow where it
// called it (GPUNOTES_PTX_INLINE_SLOW=0: the call), declares the table its body reads, and
// takes a register cap (GPUNOTES_PTX_MAXNREG, GPUNOTES_PTX_MINBLOCKS) only then, and only
// while the library functions it calls are the block reductions; collapsed for the
// interpreter, the kernel is the calling one.
func TestSlowPathInlined(t *testing.T) {
	lib, err := kernelsLib()
	if err != nil {
		t.Fatal(err)
	}
	normal := Node{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{42, 7}}}
	sum := &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{normal}}
	gamma := &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{normal, {Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Gamma, P0: 2, P1: 1, Key: [2]uint32{1, 2}}},
		{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}}}}
	defer func(on bool, n, b int) { opt.InlineSlow, opt.MaxNReg, opt.MinBlocks = on, n, b }(opt.InlineSlow, opt.MaxNReg, opt.MinBlocks)
	gen := func(s *Spec) string {
		t.Helper()
		k, _, err := GeneratePTX(s, lib)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	opt.InlineSlow, opt.MaxNReg, opt.MinBlocks = false, 0, 0
	calling := gen(sum)
	calls := strings.Count(calling, "call (retval0), gpn_normal_slow,")
	if calls == 0 || strings.Contains(calling, "inlined") {
		t.Fatalf("GPUNOTES_PTX_INLINE_SLOW=0: %d calls of gpn_normal_slow, inlined bodies %v", calls, strings.Contains(calling, "inlined"))
	}
	opt.InlineSlow = true
	k := gen(sum)
	if strings.Contains(k, "gpn_normal_slow,") || strings.Count(k, "gpn_normal_slow inlined") != calls || !strings.Contains(k, ".extern .global .align 8 .b64 gpn_zig_f[257];") {
		t.Fatalf("the slow path is not copied in place of its %d calls, or gpn_zig_f is not declared", calls)
	}
	if strings.Contains(k, ".maxnreg") || strings.Contains(k, ".minnctapersm") {
		t.Errorf("a register directive without a cap set")
	}
	// The same entry but for the labels' numbers (an inlined body takes one).
	entry := func(k string) string {
		k = k[strings.Index(k, ".visible .entry"):]
		seen := map[string]string{}
		return regexp.MustCompile(`\$L_[A-Za-z]+_\d+`).ReplaceAllStringFunc(k, func(l string) string {
			if seen[l] == "" {
				seen[l] = fmt.Sprintf("$L_%d", len(seen))
			}
			return seen[l]
		})
	}
	if got := entry(CollapseInlinedSlow(k)); got != entry(calling) {
		t.Errorf("collapsed, the inlined kernel is not the calling one")
	}
	opt.MaxNReg = 80
	if k := gen(sum); !strings.Contains(k, "\n.maxntid 256, 1, 1\n.maxnreg 80\n{\n") {
		t.Errorf("GPUNOTES_PTX_MAXNREG=80: no cap on the entry")
	}
	if k := gen(gamma); strings.Contains(k, ".maxnreg") || !strings.Contains(k, "gpn_normal_slow inlined") {
		t.Errorf("a kernel calling the library's gamma draw took a cap, or lost its inlined slow path")
	}
	opt.InlineSlow = false
	if k := gen(sum); strings.Contains(k, ".maxnreg") {
		t.Errorf("a kernel calling gpn_normal_slow took a cap")
	}
	opt.InlineSlow, opt.MaxNReg, opt.MinBlocks = true, 0, 3
	if k := gen(sum); !strings.Contains(k, "\n.maxntid 256, 1, 1\n.minnctapersm 3\n{\n") {
		t.Errorf("GPUNOTES_PTX_MINBLOCKS=3: no .minnctapersm on the entry")
	}
}
