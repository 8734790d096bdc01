package ptx

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// libItem is one top-level item of the device library's PTX: a variable, or a function's
// declaration or definition.
type libItem struct {
	text string
	fn   string   // the function's name ("" for a variable)
	deps []string // the library functions a definition's body names
}

// LibParts is the library PTX cut into items, so that a generated kernel links with only the
// functions it calls (and theirs), not the whole library: the driver compiles everything it is
// given at each link, and most of the library (the BLAS kernels, the block reductions a kernel
// does not use) is not needed by any one fused kernel.
type LibParts struct {
	header string
	items  []libItem

	mu     sync.Mutex
	shaken map[string][]byte // by the sorted names of the functions asked for
}

var (
	itemFuncRE = regexp.MustCompile(`(?s)^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:func|entry)\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)`)
	identRE    = regexp.MustCompile(`[A-Za-z_$%][\w$]*`)
	externRE   = regexp.MustCompile(`\.extern\s+\.func\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\s*\(`)
)

// SplitLibrary cuts library PTX into its header (up to the first item) and top-level items.
// An item ends with a ';' outside braces (variables, declarations) or with the brace that
// closes a function body.
func SplitLibrary(ptx string) *LibParts {
	p := &LibParts{shaken: map[string][]byte{}}
	var cur strings.Builder
	depth, inItem, opened := 0, false, false
	var header strings.Builder
	for _, line := range strings.SplitAfter(ptx, "\n") {
		trim := strings.TrimSpace(line)
		if !inItem {
			if trim == "" || strings.HasPrefix(trim, "//") || (!strings.HasPrefix(trim, ".func") && !strings.HasPrefix(trim, ".entry") &&
				!strings.HasPrefix(trim, ".visible") && !strings.HasPrefix(trim, ".global") && !strings.HasPrefix(trim, ".shared") &&
				!strings.HasPrefix(trim, ".const") && !strings.HasPrefix(trim, ".weak") && !strings.HasPrefix(trim, ".extern")) {
				if len(p.items) == 0 {
					header.WriteString(line)
				}
				continue
			}
			inItem, opened = true, false
			cur.Reset()
		}
		cur.WriteString(line)
		code := trim
		if i := strings.Index(code, "//"); i >= 0 {
			code = code[:i]
		}
		depth += strings.Count(code, "{") - strings.Count(code, "}")
		if strings.Contains(code, "{") {
			opened = true
		}
		if depth == 0 && ((opened && strings.Contains(code, "}")) || (!opened && strings.HasSuffix(code, ";"))) {
			p.items = append(p.items, libItem{text: cur.String()})
			inItem = false
		}
	}
	if inItem { // an unterminated item: keep it, the driver reports it
		p.items = append(p.items, libItem{text: cur.String()})
	}
	p.header = header.String()
	names := map[string]bool{}
	for i := range p.items {
		if m := itemFuncRE.FindStringSubmatch(p.items[i].text); m != nil {
			p.items[i].fn = m[1]
			names[m[1]] = true
		}
	}
	for i := range p.items {
		it := &p.items[i]
		body := strings.Index(it.text, "{")
		if it.fn == "" || body < 0 {
			continue
		}
		seen := map[string]bool{}
		for _, id := range identRE.FindAllString(it.text[body:], -1) {
			if names[id] && id != it.fn && !seen[id] {
				seen[id] = true
				it.deps = append(it.deps, id)
			}
		}
	}
	return p
}

// ForKernel returns the library PTX a kernel needs: the header, every variable, and the
// functions that kernelPTX declares .extern with those they call, in the library's order.
func (p *LibParts) ForKernel(kernelPTX string) []byte {
	var roots []string
	for _, m := range externRE.FindAllStringSubmatch(kernelPTX, -1) {
		roots = append(roots, m[1])
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	key := strings.Join(roots, ",")
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.shaken[key]; ok {
		return b
	}
	deps := map[string][]string{}
	for _, it := range p.items {
		if it.fn != "" {
			deps[it.fn] = append(deps[it.fn], it.deps...)
		}
	}
	need := map[string]bool{}
	var visit func(string)
	visit = func(f string) {
		if need[f] {
			return
		}
		need[f] = true
		for _, d := range deps[f] {
			visit(d)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	var b strings.Builder
	b.WriteString(p.header)
	for _, it := range p.items {
		if it.fn == "" || need[it.fn] {
			b.WriteString(it.text)
		}
	}
	out := []byte(b.String())
	p.shaken[key] = out
	return out
}
