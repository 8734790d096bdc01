package ptx

import (
	"fmt"
	"regexp"
	"strings"
)

// Helpers for tests that read or interpret generated kernels (this package's and the
// runtime's).

// inlinedSlowRE matches a copied gpn_normal_slow (its header, which names the call, to its
// end label and the block's close).
var inlinedSlowRE = regexp.MustCompile(`(?s)\t\{ // gpn_normal_slow inlined: (%\w+) = gpn_normal_slow\(([^)]*)\)\n(?:.*?\n)?\$L_inl_gpn_normal_slow_\d+:\n\t\}\n`)

// CollapseInlinedSlow turns each copied gpn_normal_slow back into the call it stands for, as
// gen.call writes it: the PTX interpreter runs the slow path as rng's Normal (it knows the
// function, not the double-precision approximations of its log and exp), and
// TestInlinedBodiesAreTheLibrarys proves the copy is the library's body.
func CollapseInlinedSlow(ptx string) string {
	return inlinedSlowRE.ReplaceAllStringFunc(ptx, func(block string) string {
		m := inlinedSlowRE.FindStringSubmatch(block)
		args := strings.Split(m[2], ", ")
		var b strings.Builder
		b.WriteString("\t{\n")
		var names []string
		for i, a := range args {
			typ := ".b32"
			if i == 0 {
				typ = ".b64"
			}
			names = append(names, fmt.Sprintf("param%d", i))
			fmt.Fprintf(&b, "\t.param %s param%d;\n\tst.param%s [param%d], %s;\n", typ, i, typ, i, a)
		}
		fmt.Fprintf(&b, "\t.param .b64 retval0;\n\tcall (retval0), gpn_normal_slow, (%s);\n\tld.param.b64 %s, [retval0];\n\t}\n", strings.Join(names, ", "), m[1])
		return b.String()
	})
}

// LoopBody returns a generated reduction's element loop up to the end of a batch (the branch
// past its slow elements' computation and fold).
func LoopBody(ptx string) string {
	return ptx[strings.Index(ptx, "\n$L_loop_"):strings.Index(ptx, "bra $L_dend_")]
}
