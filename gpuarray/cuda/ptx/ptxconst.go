package ptx

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	constMovRE  = regexp.MustCompile(`^mov\.f64\s+(%\w+),\s*0d([0-9A-F]{16});$`)
	constSymRE  = regexp.MustCompile(`^mov\.u64\s+(%\w+),\s*([A-Za-z_$][\w$]*);$`)
	constAddRE  = regexp.MustCompile(`^add\.s64\s+(%\w+),\s*(%\w+),\s*(%\w+);$`)
	constLoadRE = regexp.MustCompile(`^ld\.global\.nc\.((?:v[24]\.)?f64)(\s+.*\[)(%\w+)((?:\+\d+)?\];)$`)
	constDstRE  = regexp.MustCompile(`^(?:@!?%\w+\s+)?[a-z][\w.]*\s+(%\w+)`)
)

// inlineConsts is a kernel's constant bank of inlined bodies' float64 constants and table copies.
type inlineConsts struct {
	words  []uint64
	index  map[uint64]int
	tables map[string]string // library table name -> its constant-bank copy's name
	order  []string
	// derived marks the (renamed) registers that hold an address in a table's copy.
	derived map[string]bool
}

// constTableName is the name of the constant-bank copy of library table name.
func constTableName(name string) string { return "gpn_c_" + strings.TrimLeft(name, "_$") }

// constLine rewrites one renamed instruction line of an inlined body to read the constant bank
// (see Options.InlineConst), and returns it.
func (g *gen) constLine(line string) string {
	if !opt.InlineConst || g.lib == nil || g.lib.inline == nil {
		return line
	}
	c := &g.consts
	if c.derived == nil {
		c.derived = map[string]bool{}
		c.index = map[uint64]int{}
		c.tables = map[string]string{}
	}
	if m := constMovRE.FindStringSubmatch(line); m != nil {
		w, _ := strconv.ParseUint(m[2], 16, 64)
		delete(c.derived, m[1])
		if w&0xffffffff == 0 {
			return line // an immediate the instructions take as it is
		}
		i, ok := c.index[w]
		if !ok {
			i = len(c.words)
			c.index[w] = i
			c.words = append(c.words, w)
		}
		return fmt.Sprintf("ld.const.f64 %s, [gpn_fconst+%d];", m[1], 8*i)
	}
	if m := constSymRE.FindStringSubmatch(line); m != nil {
		if t := g.lib.inline.local[m[2]]; strings.HasPrefix(strings.TrimSpace(t), ".global") && strings.Contains(t, "=") {
			name := constTableName(m[2])
			if _, ok := c.tables[m[2]]; !ok {
				c.tables[m[2]] = name
				c.order = append(c.order, m[2])
			}
			c.derived[m[1]] = true
			return fmt.Sprintf("mov.u64 %s, %s;", m[1], name)
		}
	}
	if m := constAddRE.FindStringSubmatch(line); m != nil {
		c.derived[m[1]] = c.derived[m[2]] || c.derived[m[3]]
		return line
	}
	if m := constLoadRE.FindStringSubmatch(line); m != nil && c.derived[m[3]] {
		return "ld.const." + m[1] + m[2] + m[3] + m[4]
	}
	if m := constDstRE.FindStringSubmatch(line); m != nil {
		delete(c.derived, m[1])
	}
	return line
}

// constItems declares the kernel's constant bank of inlined constants and table copies.
func (g *gen) constItems() string {
	c := &g.consts
	var b strings.Builder
	if len(c.words) > 0 {
		ws := make([]string, len(c.words))
		for i, w := range c.words {
			ws[i] = fmt.Sprintf("0x%016X", w)
		}
		fmt.Fprintf(&b, ".const .align 8 .b64 gpn_fconst[%d] = {%s};\n", len(ws), strings.Join(ws, ", "))
	}
	for _, t := range c.order {
		text := strings.TrimSpace(g.lib.inline.local[t])
		text = strings.Replace(strings.TrimPrefix(text, ".global"), t, c.tables[t], 1)
		b.WriteString(".const" + text + "\n")
	}
	return b.String()
}
