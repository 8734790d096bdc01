package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// inlineFunc is a library function that generated kernels copy into place: a .visible .func
// of 64-bit scalar parameters and return, with no stack frame and only registers it declares.
type inlineFunc struct {
	params []string // parameter names in order
	body   []string // the lines between its braces, declarations included
	// regs holds the register names its body declares, the parametrized ones ("%fd<47>")
	// by prefix with a trailing '<'.
	regs map[string]bool
	// locals names the module-local library items (functions, variables) the body uses: the
	// kernel module gets copies of them (they have no linkage across modules).
	locals []string
	// calls names the .visible library functions the body calls (declared .extern).
	calls []string
	// externs names the .visible library variables the body reads (see inlineExterns).
	externs []string
	// split is the body's split form (Options.InlineSplit), nil where it has none.
	split *splitForm
}

// inlineLib is what the inliner knows of one library PTX text: its inlinable functions and the
// text of its module-local items, built on first use.
type inlineLib struct {
	once  sync.Once
	fns   map[string]*inlineFunc
	local map[string]string   // module-local item text by name (definitions)
	deps  map[string][]string // the module-local items a module-local item uses
	calls map[string][]string // the .visible functions a module-local item calls
	// noCopy marks module-local items that read .visible variables (not declared in kernels).
	noCopy map[string]bool
	order  []string // the module-local items in the library's order
}

var (
	inlineRegDeclRE = regexp.MustCompile(`^\.reg\s+\.\w+\s+(.+);$`)
	inlineTokenRE   = regexp.MustCompile(`%[A-Za-z_][\w]*`)
	inlineLabelRE   = regexp.MustCompile(`\$[A-Za-z_][\w$]*`)
	inlineLdParamRE = regexp.MustCompile(`^ld\.param\.(\w+)\s+(%\w+),\s*\[(\w+)(?:\+0)?\];$`)
	inlineStRetRE   = regexp.MustCompile(`^st\.param\.(\w+)\s+\[func_retval0(?:\+0)?\],\s*(\S+);$`)
	inlineRetRE     = regexp.MustCompile(`^(@!?%\w+\s+)?ret(\.uni)?;$`)
	inlineHeadRE    = regexp.MustCompile(`(?s)^\s*\.visible\s+\.func\s*\(\s*\.param\s+\.b64\s+func_retval0\s*\)\s*(\w+)\s*\(([^)]*)\)`)
	inlineVarRE     = regexp.MustCompile(`^\s*(?:\.(?:global|const))\s+(?:\.align\s+\d+\s+)?\.\w+\s+([A-Za-z_$][\w$]*)`)
)

// inlineMaxLines bounds the bodies copied into kernels: larger functions stay calls, but for
// those of inlineLarge.
const inlineMaxLines = 160

// inlineExtra names the library functions copied beyond the general rules (longer than
// inlineMaxLines, 32-bit parameters): the ziggurat's slow path (see Options.InlineSlow), about 600
// lines, once or twice per normal leaf.
var inlineExtra = map[string]bool{"gpn_normal_slow": true}

// inlineExterns are the library's .visible variables an inlined body may read, with the
// declaration the kernel module needs ("": the module declares it anyway).
var inlineExterns = map[string]string{
	"gpn_zig_k": "",
	"gpn_zig_w": "",
	"gpn_zig_f": ".extern .global .align 8 .b64 gpn_zig_f[257];",
}

// build reads the inlinable functions and the module-local items of the library PTX.
func (il *inlineLib) build(ptx string) {
	il.fns = map[string]*inlineFunc{}
	il.local = map[string]string{}
	il.deps = map[string][]string{}
	il.calls = map[string][]string{}
	il.noCopy = map[string]bool{}
	parts := SplitLibrary(ptx)
	visible := map[string]bool{} // .visible items: true for functions, false for variables
	for _, it := range parts.items {
		name := it.fn
		if name == "" {
			m := inlineVarRE.FindStringSubmatch(it.text)
			if m == nil {
				continue
			}
			name = m[1]
		}
		head := strings.TrimSpace(it.text)
		if strings.HasPrefix(head, ".visible") || strings.HasPrefix(head, ".extern") || strings.HasPrefix(head, ".weak") {
			visible[name] = it.fn != ""
			continue
		}
		if it.fn != "" && !strings.Contains(it.text, "{") {
			continue // a forward declaration
		}
		il.local[name] = it.text
		il.order = append(il.order, name)
	}
	ident := regexp.MustCompile(`[A-Za-z_$][\w$]*`)
	for _, name := range il.order {
		text := il.local[name]
		if i := strings.Index(text, "{"); i >= 0 {
			text = text[i:]
		} else {
			continue
		}
		seen := map[string]bool{name: true}
		for _, id := range ident.FindAllString(text, -1) {
			if seen[id] {
				continue
			}
			seen[id] = true
			if il.local[id] != "" {
				il.deps[name] = append(il.deps[name], id)
			} else if fn, ok := visible[id]; ok {
				if fn {
					il.calls[name] = append(il.calls[name], id)
				} else {
					il.noCopy[name] = true
				}
			}
		}
	}
	for _, it := range parts.items {
		m := inlineHeadRE.FindStringSubmatch(it.text)
		if m == nil || m[1] != it.fn {
			continue
		}
		if f := il.parse(it.fn, it.text, m[2], visible); f != nil {
			il.fns[it.fn] = f
		}
	}
}

// parse returns the inlinable form of one function definition, or nil when it must stay a call.
func (il *inlineLib) parse(name, text, params string, visible map[string]bool) *inlineFunc {
	f := &inlineFunc{regs: map[string]bool{}}
	for _, p := range strings.Split(params, ",") {
		fs := strings.Fields(p)
		if len(fs) != 3 || fs[0] != ".param" || fs[1] != ".b64" && (fs[1] != ".b32" || !inlineExtra[name]) {
			return nil
		}
		f.params = append(f.params, fs[2])
	}
	open, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if open < 0 || end <= open {
		return nil
	}
	lines := strings.Split(text[open+1:end], "\n")
	if len(lines) > inlineMaxLines && !inlineExtra[name] || strings.Contains(text, ".local") || strings.Contains(text, "%SP") {
		return nil
	}
	ident := regexp.MustCompile(`[A-Za-z_][\w$]*`)
	seen := map[string]bool{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if m := inlineRegDeclRE.FindStringSubmatch(l); m != nil {
			for _, r := range strings.Split(m[1], ",") {
				r = strings.TrimSpace(r)
				if !strings.HasPrefix(r, "%") {
					continue // a name without %: scoped to its own block, left as it is
				}
				if i := strings.Index(r, "<"); i >= 0 {
					f.regs[r[:i+1]] = true
				} else {
					f.regs[r] = true
				}
			}
		}
		f.body = append(f.body, l)
		if strings.HasPrefix(l, "//") {
			continue
		}
		for _, id := range ident.FindAllString(l, -1) {
			if seen[id] {
				continue
			}
			seen[id] = true
			switch {
			case il.local[id] != "":
				f.locals = append(f.locals, id)
			default:
				if _, ok := inlineExterns[id]; ok {
					f.externs = append(f.externs, id) // a .visible table the kernel declares
					continue
				}
				if fn, ok := visible[id]; ok {
					if !fn {
						return nil // a .visible variable: left to the call
					}
					f.calls = append(f.calls, id)
				}
			}
		}
	}
	// The module-local items it uses, and theirs, must be copyable; their calls are the kernel's.
	var walk func(string) bool
	done := map[string]bool{}
	walk = func(n string) bool {
		if done[n] {
			return true
		}
		done[n] = true
		if il.noCopy[n] {
			return false
		}
		f.calls = append(f.calls, il.calls[n]...)
		for _, d := range il.deps[n] {
			if !walk(d) {
				return false
			}
		}
		return true
	}
	for _, l := range f.locals {
		if !walk(l) {
			return nil
		}
	}
	// A result it never stores is a declaration's stand-in (test libraries), not a body.
	stores := false
	for _, l := range f.body {
		stores = stores || inlineStRetRE.MatchString(l)
	}
	if !stores {
		return nil
	}
	// Every register it names must be its own (no special registers).
	for _, l := range f.body {
		if strings.HasPrefix(l, ".reg") {
			continue
		}
		for _, tok := range inlineTokenRE.FindAllString(l, -1) {
			if !f.owns(tok) {
				return nil
			}
		}
	}
	f.split = splitBody(f.body)
	return f
}

// owns reports whether register tok is declared by the function's body.
func (f *inlineFunc) owns(tok string) bool {
	if f.regs[tok] {
		return true
	}
	i := len(tok)
	for i > 1 && tok[i-1] >= '0' && tok[i-1] <= '9' {
		i--
	}
	return i < len(tok) && f.regs[tok[:i]+"<"]
}

// inlineFor returns the inlinable body of library function name, or nil.
func (g *gen) inlineFor(name string) *inlineFunc {
	if !opt.Inline || g.lib == nil || g.lib.anyFunc || g.lib.inline == nil {
		return nil
	}
	il := g.lib.inline
	il.once.Do(func() { il.build(g.lib.text) })
	return il.fns[name]
}

// inline emits the body of library function name in place of a call with arguments args and
// result register ret, inside a block of its own: its registers renamed apart from the
// kernel's, its labels made unique, parameter loads and the result's store turned into moves,
// and each ret a branch to the block's end.
func (g *gen) inline(name string, f *inlineFunc, ret string, args ...string) error {
	if len(args) != len(f.params) {
		return fmt.Errorf("device library function %s takes %d parameters, generated code passes %d", name, len(f.params), len(args))
	}
	g.labels++
	k := g.labels
	end := fmt.Sprintf("$L_inl_%s_%d", name, k)
	// The header names the call it stands for (the PTX interpreter of the tests reads it).
	fmt.Fprintf(&g.body, "\t{ // %s inlined: %s = %s(%s)\n", name, ret, name, strings.Join(args, ", "))
	g.renderInline(&g.body, f.body, f, "%i_", "", k, end, ret, args)
	g.put(end)
	g.body.WriteString("\t}\n")
	return g.inlineDeps(name, f)
}

// renderInline writes lines of f's body to w for the call ret = f(args): registers renamed
// with prefix, labels with renameInline's suffix, parameter loads and the result's store turned
// into moves, and each ret a branch to end. It reports whether any ret was met.
func (g *gen) renderInline(w *strings.Builder, lines []string, f *inlineFunc, prefix, tag string, k int, end, ret string, args []string) bool {
	param := map[string]string{}
	for i, p := range f.params {
		param[p] = args[i]
	}
	rename := func(l string) string { return renameInline(l, prefix, tag, k) }
	ins := func(format string, a ...any) {
		w.WriteString("\t")
		fmt.Fprintf(w, format, a...)
		w.WriteString(";\n")
	}
	rets := false
	for _, l := range lines {
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "//"):
			continue
		}
		if m := inlineLdParamRE.FindStringSubmatch(l); m != nil && param[m[3]] != "" {
			a := param[m[3]]
			ins("mov.%s %s, %s", movType(m[1], a), rename(m[2]), a)
			continue
		}
		if m := inlineStRetRE.FindStringSubmatch(l); m != nil {
			ins("mov.%s %s, %s", movType(m[1], m[2]), ret, rename(m[2]))
			continue
		}
		if m := inlineRetRE.FindStringSubmatch(l); m != nil {
			ins("%sbra %s", rename(m[1]), end)
			rets = true
			continue
		}
		if strings.HasSuffix(l, ":") || strings.HasPrefix(l, "{") || strings.HasPrefix(l, "}") || strings.HasPrefix(l, ".") || !strings.HasSuffix(l, ";") {
			w.WriteString(rename(l) + "\n")
			continue
		}
		w.WriteString("\t" + g.constLine(rename(l)) + "\n")
	}
	return rets
}

// inlineDeps records what an inlined body of name needs in the kernel module: the library
// functions it calls, its module-local items, the library variables it reads.
func (g *gen) inlineDeps(name string, f *inlineFunc) error {
	for _, c := range f.calls {
		if _, ok := g.lib.protos[c]; !ok {
			return fmt.Errorf("inline %s: calls %s, which the library does not declare", name, c)
		}
		if !g.used[c] {
			g.used[c] = true
			g.usedList = append(g.usedList, c)
		}
	}
	for _, l := range f.locals {
		g.addLocal(l)
	}
	for _, e := range f.externs {
		if d := inlineExterns[e]; d != "" && !strings.Contains(g.externDecls, d) {
			g.externDecls += d + "\n"
		}
	}
	return nil
}

// movType is the type of the move that stands for a parameter load or store of type t with
// operand a: a register moves as bits of its size (a .b64 move takes .f64 and .u64 registers
// alike), an immediate keeps the load's type.
func movType(t, a string) string {
	if strings.HasPrefix(a, "%") {
		switch t {
		case "f64", "u64", "s64", "b64":
			return "b64"
		case "f32", "u32", "s32", "b32":
			return "b32"
		}
	}
	return t
}

// addLocal records module-local library item name, and those it uses, for the kernel module.
func (g *gen) addLocal(name string) {
	if g.localSet == nil {
		g.localSet = map[string]bool{}
	}
	if g.localSet[name] {
		return
	}
	g.localSet[name] = true
	for _, d := range g.lib.inline.deps[name] {
		g.addLocal(d)
	}
}

// localItems returns the module-local library items the kernel copies: variables first, then
// the functions' forward declarations and definitions, in the library's order.
func (g *gen) localItems() string {
	if len(g.localSet) == 0 {
		return g.constItems()
	}
	il := g.lib.inline
	var vars, decls, defs strings.Builder
	for _, name := range il.order {
		if !g.localSet[name] {
			continue
		}
		text := il.local[name]
		if m := inlineHeadLocalRE.FindStringSubmatch(text); m != nil {
			decls.WriteString(strings.TrimSpace(m[0]) + ";\n")
			defs.WriteString(text)
			continue
		}
		vars.WriteString(text)
	}
	return vars.String() + g.constItems() + decls.String() + "\n" + defs.String() + "\n"
}

var inlineHeadLocalRE = regexp.MustCompile(`(?s)^\s*\.func\s*(?:\([^)]*\)\s*)?[A-Za-z_$][\w$]*\s*\([^)]*\)`)
