package ptx

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/kernels"
)

// nonBlank returns lines without the empty ones.
func nonBlank(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestInlinedFastPathsAreTheLibrarys: every split form (Options.InlineSplit) is made of the library's
// lines in the library's order: a prefix form is the body cut in two; a guarded form's fast
// path is the body's lines along the path the library takes where its guard holds (its
// infinity test, its slow call left out), and its rest is the whole body. exp, sin and cos of
// the sm_90 library have one.
func TestInlinedFastPathsAreTheLibrarys(t *testing.T) {
	for _, fl := range []string{kernels.SM90, kernels.Generic} {
		_, lib, g := libGen(t, fl)
		for _, name := range []string{"gpn_exp", "gpn_sin", "gpn_cos"} {
			if f := g.inlineFor(name); fl == kernels.SM90 && (f == nil || f.split == nil) {
				t.Errorf("%s: %s has no split form", fl, name)
			}
		}
		guarded := 0
		for name, f := range lib.inline.fns {
			sf := f.split
			if sf == nil {
				continue
			}
			body := nonBlank(f.body)
			n := len(sf.decls)
			if !slices.Equal(sf.decls, body[:n]) || countInstrs(sf.hot) < inlineSplitMin {
				t.Errorf("%s: %s: declarations %q, %d fast instructions", fl, name, sf.decls, countInstrs(sf.hot))
			}
			code := body[n:]
			hot, rest := nonBlank(sf.hot), nonBlank(sf.rest)
			if sf.guard == "" {
				if !slices.Equal(append(append([]string{}, hot...), rest...), code) {
					t.Errorf("%s: %s: fast path and rest are not the body cut in two", fl, name)
				}
				continue
			}
			guarded++
			if !slices.Equal(rest, code) {
				t.Errorf("%s: %s: a guarded rest is not the whole body", fl, name)
			}
			// The fast path: a subsequence of the body, the guard's test in it, no call.
			k := 0
			for _, l := range hot {
				for k < len(code) && code[k] != l {
					k++
				}
				if k == len(code) {
					t.Errorf("%s: %s: fast-path line %q is not the body's next", fl, name, l)
					break
				}
				k++
				if strings.Contains(l, "call") || strings.HasPrefix(l, "{") {
					t.Errorf("%s: %s: the fast path calls (%q)", fl, name, l)
				}
			}
			if !slices.ContainsFunc(hot, func(l string) bool {
				m := splitGuardRE.FindStringSubmatch(l)
				return m != nil && m[1] == sf.guard
			}) {
				t.Errorf("%s: %s: guard %s is not set on the fast path", fl, name, sf.guard)
			}
		}
		if fl == kernels.SM90 && guarded < 2 {
			t.Errorf("%s: %d guarded split forms (sin and cos at least)", fl, guarded)
		}
	}
}

// TestInlinedFastPathsFirst: in the kernel of sum(exp(x) + sin(x)) of normals, each place
// that computes the value emits exp's fast path, then sin's, then exp's rest, then sin's rest,
// then the addition; GPUNOTES_PTX_INLINE_SPLIT=0 gives the whole bodies one after the other.
func TestInlinedFastPathsFirst(t *testing.T) {
	ptx, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	s := expSinOfNormals()
	defer func(on bool, m string) { opt.InlineSplit, opt.Pair = on, m }(opt.InlineSplit, opt.Pair)
	opt.InlineSplit, opt.Pair = true, "auto"
	k, _, err := GeneratePTX(s, string(ptx))
	if err != nil {
		t.Fatal(err)
	}
	copies := 2
	if CoopPays(s) {
		copies = 3
	}
	if strings.Count(k, PairMark) != 1 {
		t.Fatalf("%d paired passes, want 1 (opt.Pair %q)", strings.Count(k, PairMark), opt.Pair)
	}
	copies++ // the paired pass's group holds both elements' bodies
	marks := []string{"// gpn_exp inlined, fast path first: %fd", "// gpn_sin inlined, fast path first: %fd",
		"// the rest of the inlined gpn_exp: %fd", "// the rest of the inlined gpn_sin: %fd", "add.rn.f64 %fd"}
	groups := strings.Split(k, "{ // inlined bodies, their fast paths first")
	if len(groups) != copies+1 {
		t.Fatalf("%d groups of split bodies, want %d", len(groups)-1, copies)
	}
	for gi, grp := range groups[1:] {
		at := -1
		for _, m := range marks {
			i := strings.Index(grp, m)
			if i <= at {
				t.Errorf("group %d: %q not after the previous mark", gi, m)
			}
			at = i
		}
		// Between the fast paths' start and the rests only sin's own branches (its polynomial's
		// two quadrant tests and its end) are taken: no exit to a slow path.
		hot := grp[:strings.Index(grp, marks[2])]
		if n := strings.Count(hot, " bra "); n > 3*strings.Count(hot, "gpn_sin inlined, fast path first") || strings.Contains(hot, "call") {
			t.Errorf("group %d: %d branches or a call among the fast paths", gi, n)
		}
	}
	opt.InlineSplit = false
	k, _, err = GeneratePTX(s, string(ptx))
	if err != nil {
		t.Fatal(err)
	}
	// Without split bodies the kernel takes one element a pass (Options.Pair "auto").
	if strings.Contains(k, "fast path first") || strings.Contains(k, PairMark) || strings.Count(k, "{ // gpn_exp inlined: ") != copies-1 {
		t.Errorf("GPUNOTES_PTX_INLINE_SPLIT=0: the bodies are still split")
	}
}

// TestInlinedConstants: with the constant bank (Options.InlineConst) the exp(x) + sin(x) kernel is
// the one with immediates but for its moves of float64 immediates, which read the same words
// from gpn_fconst, and sin's coefficient loads, which read a constant-bank copy of the same
// table; GPUNOTES_PTX_INLINE_CONST=0 gives no constant bank.
func TestInlinedConstants(t *testing.T) {
	ptx, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	s := expSinOfNormals()
	defer func(on bool) { opt.InlineConst = on }(opt.InlineConst)
	gen := func(on bool) string {
		t.Helper()
		opt.InlineConst = on
		k, _, err := GeneratePTX(s, string(ptx))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	plain, banked := gen(false), gen(true)
	if strings.Contains(plain, ".const") || strings.Contains(plain, "ld.const") {
		t.Fatalf("GPUNOTES_PTX_INLINE_CONST=0: a constant bank")
	}
	table := regexp.MustCompile(`(?m)^\.const \.align 8 \.b64 gpn_fconst\[(\d+)\] = \{([^}]*)\};\n`).FindStringSubmatch(banked)
	if table == nil {
		t.Fatalf("no gpn_fconst in the kernel")
	}
	words := strings.Split(table[2], ", ")
	if n, _ := strconv.Atoi(table[1]); n != len(words) {
		t.Fatalf("gpn_fconst[%s] has %d words", table[1], len(words))
	}
	back := strings.Replace(banked, table[0], "", 1)
	loads := 0
	back = regexp.MustCompile(`ld\.const\.f64 (%\w+), \[gpn_fconst\+(\d+)\];`).ReplaceAllStringFunc(back, func(l string) string {
		m := regexp.MustCompile(`(%\w+), \[gpn_fconst\+(\d+)\]`).FindStringSubmatch(l)
		off, _ := strconv.Atoi(m[2])
		if off%8 != 0 || off/8 >= len(words) {
			t.Fatalf("%q: not a word of gpn_fconst", l)
		}
		w, err := strconv.ParseUint(strings.TrimPrefix(words[off/8], "0x"), 16, 64)
		if err != nil {
			t.Fatalf("%q: word %q", l, words[off/8])
		}
		if w&0xffffffff == 0 {
			t.Errorf("%q: an immediate the instructions take as it is went to the constant bank", l)
		}
		loads++
		return fmt.Sprintf("mov.f64 %s, 0d%016X;", m[1], w)
	})
	// The coefficient table's copy holds the library's bytes.
	tab := regexp.MustCompile(`(?m)^\.const( \.align 16 \.b8 )gpn_c_cudart_sin_cos_coeffs(\[128\] = \{[^}]*\};)\n`).FindStringSubmatch(back)
	if tab == nil || !strings.Contains(plain, ".global"+tab[1]+"__cudart_sin_cos_coeffs"+tab[2]) {
		t.Fatalf("no constant-bank copy of __cudart_sin_cos_coeffs with the library's bytes")
	}
	back = strings.Replace(back, tab[0], "", 1)
	back = strings.ReplaceAll(back, "gpn_c_cudart_sin_cos_coeffs;", "__cudart_sin_cos_coeffs;")
	back = strings.ReplaceAll(back, "ld.const.v2.f64", "ld.global.nc.v2.f64")
	ws := regexp.MustCompile(`[ \t]+`)
	if loads < 20 || ws.ReplaceAllString(back, " ") != ws.ReplaceAllString(plain, " ") {
		t.Errorf("%d constant loads; put back, the kernel is not the one with immediates", loads)
	}
}
