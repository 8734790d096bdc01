package ptx

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// RareMark is the comment that opens the branch around a group's rests (Options.RareSkip).
const RareMark = "GPUNOTES_PTX_RARE_SKIP"

// inlineSplitMin is the fewest instructions a fast path must hold to be worth splitting.
const inlineSplitMin = 8

// splitForm is the split of one inlinable library body (lines in the library's naming).
type splitForm struct {
	decls []string // the body's own register declarations
	hot   []string // the fast path
	rest  []string // what runs after all fast paths of a group
	// guard, when set, is the predicate register under which hot computed the result: rest is
	// then the whole body, run where guard is false.
	guard string
	// skip ("!"-prefixed where negated), when set, holds in the lanes whose rest runs only
	// rest[skipAt:] (the lines at its first branch's target, nothing for a guarded form): the
	// common case, which Options.RareSkip lets lanes take without entering the rest.
	skip   string
	skipAt int
}

var splitFirstBraRE = regexp.MustCompile(`^@(!?%\w+)\s+bra(?:\.uni)?\s+(\$[\w$]+);$`)

// prefixSkip fills sf.skip and sf.skipAt for a prefix form whose rest starts with a branch
// to a label after which the body only stores its result and returns.
func (sf *splitForm) prefixSkip() {
	i := 0
	for i < len(sf.rest) && sf.rest[i] == "" {
		i++
	}
	if i == len(sf.rest) {
		return
	}
	m := splitFirstBraRE.FindStringSubmatch(sf.rest[i])
	if m == nil {
		return
	}
	at := slices.Index(sf.rest, m[2]+":")
	if at < 0 {
		return
	}
	for _, l := range sf.rest[at+1:] {
		if !straightLine(l) && !inlineStRetRE.MatchString(l) && !inlineRetRE.MatchString(l) {
			return
		}
	}
	sf.skip, sf.skipAt = m[1], at
}

var (
	splitInfRE   = regexp.MustCompile(`^setp\.eq\.f64\s+(%\w+),\s*(%\w+),\s*0d7FF0000000000000;$`)
	splitBraRE   = regexp.MustCompile(`^@(%\w+)\s+bra(?:\.uni)?\s+(\$[\w$]+);$`)
	splitUniRE   = regexp.MustCompile(`^bra(?:\.uni)?\s+(\$[\w$]+);$`)
	splitGuardRE = regexp.MustCompile(`^setp\.ltu\.f64\s+(%\w+),\s*(%\w+),\s*0d([0-9A-F]{16});$`)
)

// straightLine reports whether l is an instruction that neither branches, returns, calls, nor
// stores (a declaration, a label or a block brace is not one).
func straightLine(l string) bool {
	if l == "" || strings.HasPrefix(l, "//") {
		return true
	}
	if strings.HasSuffix(l, ":") || strings.HasPrefix(l, ".") || strings.HasPrefix(l, "{") || strings.HasPrefix(l, "}") {
		return false
	}
	op := strings.Fields(strings.TrimPrefix(l, "@"))[0]
	if strings.HasPrefix(l, "@") {
		op = strings.Fields(l)[1]
	}
	for _, p := range []string{"bra", "ret", "call", "st.", "exit", "bar", "atom", "red"} {
		if strings.HasPrefix(op, p) {
			return false
		}
	}
	return true
}

// splitBody returns the split form of body, or nil where it has none worth having.
func splitBody(body []string) *splitForm {
	sf := &splitForm{}
	i := 0
	for i < len(body) && (body[i] == "" || strings.HasPrefix(body[i], ".reg")) {
		if body[i] != "" {
			sf.decls = append(sf.decls, body[i])
		}
		i++
	}
	// The straight prefix: instructions, and nested blocks of straight instructions (the
	// {.reg .b32 %temp; mov.b64 {…}} halves).
	start := i
	end := i
	for j := i; j < len(body); j++ {
		l := body[j]
		if l == "{" {
			k := j + 1
			for k < len(body) && body[k] != "}" && (straightLine(body[k]) || strings.HasPrefix(body[k], ".reg")) {
				k++
			}
			if k == len(body) || body[k] != "}" {
				break
			}
			j = k
			end = k + 1
			continue
		}
		if !straightLine(l) {
			break
		}
		end = j + 1
	}
	prefix := body[start:end]
	rest := body[end:]
	// sin's infinity test is straight; it starts the pattern sinShaped looks for.
	if n := len(prefix); n > 0 && splitInfRE.MatchString(prefix[n-1]) {
		prefix, rest = prefix[:n-1], body[end-1:]
	}
	if sf.sinShaped(prefix, rest) {
		return sf
	}
	if countInstrs(prefix) < inlineSplitMin {
		return nil
	}
	sf.hot, sf.rest = prefix, rest
	sf.prefixSkip()
	return sf
}

// sinShaped fills sf for a body whose rest (after the straight prefix) is, as gpn_sin's and
// gpn_cos's:
//
//	setp.eq.f64 P1, A, inf; @P1 bra R; bra.uni F;
//	R: (the infinity's lines) bra.uni J;
//	F: (straight lines) setp.ltu.f64 P2, A, C; @P2 bra J;
//	(the slow reduction's call)
//	J: (to the end)
//
// with C finite, so that P2 holds for no infinite A: where P2 holds, the library runs prefix, F
// and J, which are the fast path; elsewhere the whole body runs again.
func (sf *splitForm) sinShaped(prefix, rest []string) bool {
	var ls []string // rest's lines, blank ones dropped
	for _, l := range rest {
		if l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) < 4 {
		return false
	}
	inf := splitInfRE.FindStringSubmatch(ls[0])
	toR := splitBraRE.FindStringSubmatch(ls[1])
	toF := splitUniRE.FindStringSubmatch(ls[2])
	if inf == nil || toR == nil || toF == nil || toR[1] != inf[1] {
		return false
	}
	label := func(name string) int {
		for k, l := range ls {
			if l == name+":" {
				return k
			}
		}
		return -1
	}
	f := label(toF[1])
	if f < 0 {
		return false
	}
	// F's straight lines up to the guard and its branch to J.
	k := f + 1
	for k < len(ls) && straightLine(ls[k]) && !splitGuardRE.MatchString(ls[k]) {
		k++
	}
	if k+1 >= len(ls) {
		return false
	}
	gm := splitGuardRE.FindStringSubmatch(ls[k])
	toJ := splitBraRE.FindStringSubmatch(ls[k+1])
	if gm == nil || toJ == nil || gm[2] != inf[2] || toJ[1] != gm[1] {
		return false
	}
	if c, err := strconv.ParseUint(gm[3], 16, 64); err != nil || math.IsInf(math.Float64frombits(c), 0) || math.IsNaN(math.Float64frombits(c)) {
		return false
	}
	// R must go to J too (its own lines are left to the rest).
	r := label(toR[2])
	j := label(toJ[2])
	if r < 0 || j < 0 || j < k {
		return false
	}
	rEnd := r + 1
	for rEnd < len(ls) && straightLine(ls[rEnd]) {
		rEnd++
	}
	if u := splitUniRE.FindStringSubmatch(ls[rEnd]); rEnd >= len(ls) || u == nil || u[1] != toJ[2] {
		return false
	}
	// What the fast path skips (the infinity test and its lines, the slow call) must leave
	// nothing that J reads but F does not write.
	// (The prefix runs whole: what it names is defined; of F, the unpredicated destinations.)
	written := map[string]bool{}
	for _, l := range prefix {
		for _, t := range inlineTokenRE.FindAllString(l, -1) {
			written[t] = true
		}
	}
	for _, l := range ls[f+1 : k+1] {
		if fs := strings.Fields(strings.ReplaceAll(l, ",", " ")); len(fs) > 1 && !strings.HasPrefix(l, "@") {
			written[fs[1]] = true
		}
	}
	inJ := map[string]bool{}
	for _, l := range ls[j+1:] {
		for _, t := range inlineTokenRE.FindAllString(l, -1) {
			inJ[t] = true
		}
	}
	skipped := append(append([]string{ls[0]}, ls[r:rEnd+1]...), ls[k+2:j]...)
	for _, l := range skipped {
		for _, t := range inlineTokenRE.FindAllString(l, -1) {
			if inJ[t] && !written[t] {
				return false
			}
		}
	}
	hot := append([]string{}, prefix...)
	hot = append(hot, ls[f+1:k+1]...)
	hot = append(hot, ls[j+1:]...)
	if countInstrs(hot) < inlineSplitMin {
		return false
	}
	sf.hot = hot
	sf.guard = gm[1]
	sf.rest = append(append([]string{}, prefix...), rest...)
	sf.skip, sf.skipAt = sf.guard, len(sf.rest)
	return true
}

// countInstrs counts the instructions among lines.
func countInstrs(lines []string) int {
	n := 0
	for _, l := range lines {
		if l != "" && strings.HasSuffix(l, ";") && !strings.HasPrefix(l, ".") && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	return n
}

// splitGroup is the state of a group of split bodies being emitted: the rests still to emit,
// and the result registers they write.
type splitGroup struct {
	open    bool
	rests   strings.Builder
	pending map[string]bool
	// skips are the group's bodies' skip predicates (renamed), common their common tails;
	// noSkip is set when a body of the group has none (then no uniform branch).
	skips  []string
	common strings.Builder
	noSkip bool
}

// splitArmed reports whether node i of s, about to be emitted, may be a split body's fast path
// in the current group: a float64 elementwise op whose table body is one library call that has
// a split form, on a value no rest of the group writes.
func (g *gen) splitArmed(s *Spec, i int, vals []val) bool {
	if !opt.InlineSplit {
		return false
	}
	nd := &s.Nodes[i]
	if nd.Kind != NUnary || nd.DType != dtype.Float64 || s.Nodes[nd.Args[0]].DType != dtype.Float64 {
		return false
	}
	// The body unary emits for float64 values: the generated table's, or the core op's.
	body, ok := corePTX[nd.Op]
	if _, gen := nd.Op.Generated(); gen {
		body, ok = genPTX[nd.Op]
	}
	if !ok || strings.Contains(strings.TrimSpace(body), "\n") {
		return false
	}
	fn, ok := strings.CutPrefix(strings.TrimSpace(body), "call ")
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(fn, " ")
	f := g.inlineFor(name)
	if f == nil || f.split == nil {
		return false
	}
	a := vals[nd.Args[0]]
	return a.l == LaneF && !g.split.pending[a.r]
}

// inlineHot emits the fast path of library function name's split body (see Options.InlineSplit)
// for result register ret and arguments args, and keeps its rest for flushSplit.
func (g *gen) inlineHot(name string, f *inlineFunc, ret string, args ...string) error {
	if len(args) != len(f.params) {
		return fmt.Errorf("device library function %s takes %d parameters, generated code passes %d", name, len(f.params), len(args))
	}
	sf := f.split
	g.labels++
	k := g.labels
	if !g.split.open {
		g.body.WriteString("\t{ // inlined bodies, their fast paths first\n")
		g.split.open = true
		g.split.pending = map[string]bool{}
	}
	prefix := fmt.Sprintf("%%i%d_", k)
	fmt.Fprintf(&g.body, "\t// %s inlined, fast path first: %s = %s(%s)\n", name, ret, name, strings.Join(args, ", "))
	for _, d := range sf.decls {
		g.body.WriteString(renameInline(d, prefix, "", k) + "\n")
	}
	hotEnd := fmt.Sprintf("$L_inl_%s_%dh", name, k)
	if g.renderInline(&g.body, sf.hot, f, prefix, "h", k, hotEnd, ret, args) {
		g.put(hotEnd)
	}
	end := fmt.Sprintf("$L_inl_%s_%d", name, k)
	w := &g.split.rests
	fmt.Fprintf(w, "\t// the rest of the inlined %s: %s = %s(%s)\n", name, ret, name, strings.Join(args, ", "))
	if sf.guard != "" {
		fmt.Fprintf(w, "\t@%s bra %s;\n", renameInline(sf.guard, prefix, "", k), end)
	}
	g.renderInline(w, sf.rest, f, prefix, "", k, end, ret, args)
	w.WriteString(end + ":\n")
	g.split.pending[ret] = true
	if sf.skip == "" {
		g.split.noSkip = true
	} else {
		g.split.skips = append(g.split.skips, renameInline(sf.skip, prefix, "", k))
		if sf.skipAt < len(sf.rest) {
			cend := end + "c"
			if g.renderInline(&g.split.common, sf.rest[sf.skipAt:], f, prefix, "c", k, cend, ret, args) {
				g.split.common.WriteString(cend + ":\n")
			}
		}
	}
	return g.inlineDeps(name, f)
}

// flushSplit emits the rests of the open group, if any, and closes it.
func (g *gen) flushSplit() {
	if !g.split.open {
		return
	}
	if (opt.RareSkip != "1" && opt.RareSkip != "vote") || g.split.noSkip || len(g.split.skips) == 0 {
		g.body.WriteString(g.split.rests.String())
		g.body.WriteString("\t}\n")
		g.split = splitGroup{}
		return
	}
	// rare: the lane's skip predicates are not all true; any: rare in some lane of the warp.
	g.labels++
	k := g.labels
	rare, any, mask := fmt.Sprintf("%%rare%d", k), fmt.Sprintf("%%rany%d", k), fmt.Sprintf("%%rmask%d", k)
	skipTo, join := fmt.Sprintf("$L_rare_%d_common", k), fmt.Sprintf("$L_rare_%d_join", k)
	b := &g.body
	fmt.Fprintf(b, "\t// the rests, where a lane of the warp needs one (%s)\n", RareMark)
	fmt.Fprintf(b, "\t.reg .pred %s, %s, %s_t;\n\t.reg .b32 %s;\n", rare, any, rare, mask)
	for i, p := range g.split.skips {
		neg := !strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		switch {
		case i == 0 && neg:
			fmt.Fprintf(b, "\tnot.pred %s, %s;\n", rare, p)
		case i == 0:
			fmt.Fprintf(b, "\tmov.pred %s, %s;\n", rare, p)
		case neg:
			fmt.Fprintf(b, "\tnot.pred %s_t, %s;\n\tor.pred %s, %s, %s_t;\n", rare, p, rare, rare, rare)
		default:
			fmt.Fprintf(b, "\tor.pred %s, %s, %s;\n", rare, rare, p)
		}
	}
	if opt.RareSkip == "vote" {
		fmt.Fprintf(b, "\tactivemask.b32 %s;\n\tvote.sync.any.pred %s, %s, %s;\n\t@!%s bra.uni %s;\n", mask, any, rare, mask, any, skipTo)
	} else {
		fmt.Fprintf(b, "\t@!%s bra %s;\n", rare, skipTo)
	}
	b.WriteString(g.split.rests.String())
	fmt.Fprintf(b, "\tbra %s;\n%s:\n", join, skipTo)
	b.WriteString(g.split.common.String())
	fmt.Fprintf(b, "%s:\n\t}\n", join)
	g.split = splitGroup{}
}

// renameInline renames the registers of a library line apart (prefix for '%') and its labels
// (suffix _i<k><tag>).
func renameInline(l, prefix, tag string, k int) string {
	l = inlineTokenRE.ReplaceAllStringFunc(l, func(t string) string { return prefix + t[1:] })
	return inlineLabelRE.ReplaceAllStringFunc(l, func(t string) string { return fmt.Sprintf("%s_i%d%s", t, k, tag) })
}
