package ptx

import (
	"regexp"
	"strings"
)

// Bools in element code are f64 words, 1 or 0 (every node's value is a word): a comparison
// sets a predicate and selects 1 or 0 from it, and a where or a logical op tests the word
// against 0 again. ptxas keeps both steps, so each such test costs an fp64 comparison (the
// fp64 pipe is what a histogram's bin arithmetic is bound by). predBools rewrites those tests
// into uses of the predicate the word was selected from.

var (
	// selp.f64 %fdN, 1, 0, %pM: a bool word selected from a predicate.
	boolSel = regexp.MustCompile(`^\tselp\.f64 (%fd\d+), 0d3FF0000000000000, 0d0000000000000000, (%p\d+);$`)
	// A test of a word against 0, maybe combined with a predicate; guard kept.
	boolTest = regexp.MustCompile(`^\t(@!?%p\d+ )?setp\.(neu|eq)(\.and|\.or|\.xor)?\.f64 (%p\d+), (%fd\d+), 0d0000000000000000(, (%p\d+))?;$`)
	regName  = regexp.MustCompile(`%[a-z_]+\d+`)
)

// PredBools rewrites, in a kernel body, each test of a bool word against 0 into an operation
// on the predicate the word was selected from, where that is the same value: the word has one
// definition (the selp), and every definition of the predicate lies in the straight run of
// instructions just before it (no label, branch or call), so wherever the word is read after
// the selp the predicate still holds what was selected. Tests inside that run are left alone.
func PredBools(body string) string {
	if !opt.Pred {
		return body
	}
	lines := strings.Split(body, "\n")
	defs := map[string][]int{} // register -> lines that may write it
	for i, l := range lines {
		for _, r := range writes(l) {
			defs[r] = append(defs[r], i)
		}
	}
	type src struct {
		pred       string
		start, sel int // the run before the selp, and the selp's line
	}
	words := map[string]src{}
	for i, l := range lines {
		m := boolSel.FindStringSubmatch(l)
		if m == nil || len(defs[m[1]]) != 1 {
			continue
		}
		start := i
		for start > 0 && straight(lines[start-1]) {
			start--
		}
		ok := len(defs[m[2]]) > 0
		for _, d := range defs[m[2]] {
			ok = ok && d >= start && d < i
		}
		if ok {
			words[m[1]] = src{m[2], start, i}
		}
	}
	if len(words) == 0 {
		return body
	}
	for i, l := range lines {
		m := boolTest.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		w, ok := words[m[5]]
		if !ok || (i >= w.start && i <= w.sel) {
			continue
		}
		guard, eq, comb, dst, other := m[1], m[2] == "eq", m[3], m[4], m[7]
		p := w.pred
		if eq { // word == 0: the predicate's negation
			if comb != "" {
				continue
			}
			lines[i] = "\t" + guard + "not.pred " + dst + ", " + p + ";"
			continue
		}
		if comb == "" {
			lines[i] = "\t" + guard + "mov.pred " + dst + ", " + p + ";"
		} else {
			lines[i] = "\t" + guard + comb[1:] + ".pred " + dst + ", " + p + ", " + other + ";"
		}
	}
	return strings.Join(lines, "\n")
}

// writes returns the registers an instruction line may write: its first operand (both
// predicates of a setp with two, each word of a vector); every register of a call, a brace or
// an unknown shape, to stay on the safe side. Stores, reductions and branches write none.
func writes(l string) []string {
	t := strings.TrimSpace(l)
	if t == "" || strings.HasPrefix(t, "//") || strings.HasSuffix(t, ":") || strings.HasPrefix(t, ".") {
		return nil
	}
	if strings.HasPrefix(t, "@") {
		if sp := strings.IndexByte(t, ' '); sp > 0 {
			t = strings.TrimSpace(t[sp+1:])
		}
	}
	op, rest, found := strings.Cut(t, " ")
	if !found || strings.HasPrefix(op, "call") || strings.ContainsAny(t, "{}()") && !strings.HasPrefix(op, "mov") {
		return regName.FindAllString(t, -1)
	}
	for _, p := range []string{"st.", "red.", "bra", "bar.", "ret", "exit", "membar", "fence", "prefetch", "trap"} {
		if strings.HasPrefix(op, p) {
			return nil
		}
	}
	first := rest
	if strings.HasPrefix(first, "{") { // mov.b64 {%r1, %r2}, %rd3
		if end := strings.IndexByte(first, '}'); end > 0 {
			return regName.FindAllString(first[:end], -1)
		}
		return regName.FindAllString(t, -1)
	}
	first, _, _ = strings.Cut(first, ",")
	return regName.FindAllString(first, -1)
}

// straight reports whether a line is an instruction after which control goes to the next line
// (no label, branch, call, return or block brace).
func straight(l string) bool {
	t := strings.TrimSpace(l)
	if t == "" || strings.HasSuffix(t, ":") || strings.ContainsAny(t, "{}") && !strings.HasPrefix(t, "mov") {
		return false
	}
	if strings.HasPrefix(t, "@") {
		if sp := strings.IndexByte(t, ' '); sp > 0 {
			t = strings.TrimSpace(t[sp+1:])
		}
	}
	for _, p := range []string{"bra", "call", "ret", "exit", "trap", "bar.", "//", "."} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}
