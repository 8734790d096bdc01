package cuda

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/kernels"
)

// TestInlinedBodiesAreTheLibrarys: every library function the inliner copies into kernels
// (exp and sin among them) comes out as the library's own instructions, in order, with only
// its registers and labels renamed, its parameter loads and result store turned into moves
// from the arguments and into the result, and each ret a branch to the block's end; a kernel of
// exp(x) + sin(x) of a normal x then calls neither.
func TestInlinedBodiesAreTheLibrarys(t *testing.T) {
	for _, fl := range []string{kernels.SM90, kernels.Generic} {
		ptx, err := kernels.LibPTX(fl)
		if err != nil {
			t.Fatal(err)
		}
		lib, err := parseLibrary(string(ptx))
		if err != nil {
			t.Fatal(err)
		}
		g := &gen{lib: lib, n: map[string]int{}, used: map[string]bool{}}
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
			if got[0] != "{ // "+name+" inlined" || got[len(got)-1] != "}" || !strings.HasPrefix(got[len(got)-2], "$L_inl_"+name+"_") {
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
					if gl != "mov.b64 %i_"+m[2][1:]+", "+params[m[3]]+";" {
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
		normal := Node{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{42, 7}}}
		s := &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{normal, {Kind: NUnary, Op: expr.OpExp, Args: [3]int{0}},
			{Kind: NUnary, Op: expr.OpSin, Args: [3]int{0}}, {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{1, 2}}}}
		k, _, err := GeneratePTX(s, string(ptx))
		if err != nil {
			t.Fatal(err)
		}
		// Once each in the element loop and where deferred elements are computed: by each lane
		// for its own, and by the warp together where coopPays.
		copies := 2
		if coopPays(s) {
			copies = 3
		}
		if strings.Contains(k, "gpn_exp,") || strings.Contains(k, "gpn_sin,") || strings.Count(k, "gpn_exp inlined") != copies || strings.Count(k, "gpn_sin inlined") != copies {
			t.Errorf("%s: exp(x) + sin(x): calls or inlined bodies not as expected", fl)
		}
		inlineOn = false
		k, _, err = GeneratePTX(s, string(ptx))
		inlineOn = true
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(k, "call (retval0), gpn_exp,") != copies || strings.Contains(k, "inlined") {
			t.Errorf("%s: with GPUNOTES_PTX_INLINE=0 the kernel does not call gpn_exp", fl)
		}
	}
}
