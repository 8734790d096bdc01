package interp

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"sort"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// A func declared in a cell may call one that a later cell declares, as in a Go file, where
// the order of declarations does not matter. yaegi compiles a cell's funcs when it runs the
// cell, and says "undefined: second". Such a cell is kept pending instead: each of its funcs
// becomes a trampoline through a variable (calling it before then panics, saying what it waits
// for), and once a later cell declares the missing names the pending cell compiles, as
// written, and the variables point at its funcs. Callers compiled against a trampoline
// (statements, and the funcs of cells in between) reach the real func through it: yaegi binds
// a call of a cell's func to the declaration it saw, so a plain redeclaration would leave them
// calling the old one.

// pendingDecl is a declaration segment that waits for names a later cell declares.
type pendingDecl struct {
	seg     segment
	src     string   // the rewritten source to compile
	stubs   string   // the trampolines' source
	funcs   []string // the funcs it declares (each has a trampoline)
	missing []string // names it uses that no cell has declared yet
	cell    string   // its cell's label, for notes ("" unknown)
}

// fwdVar is the variable through which func name's trampoline calls it.
func fwdVar(name string) string { return "gnFwd_" + name }

// deferForward makes a declaration segment that failed to compile pending, when what fails is
// only names that no cell declares yet, used in the bodies of its funcs. It reports whether it
// did; then the cell goes on as if the segment had compiled. f is the segment parsed by
// declNames, src its rewritten source, err yaegi's compile error.
func (s *Session) deferForward(ctx context.Context, seg segment, f *ast.File, src string, err error) bool {
	var p interp.Panic
	if errors.As(err, &p) || ctx.Err() != nil || !strings.Contains(err.Error(), "undefined: ") {
		return false
	}
	var funcs []*ast.FuncDecl
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Body == nil || fd.Type.TypeParams != nil || fd.Name.Name == "main" || fd.Name.Name == "_" || fd.Name.Name == "init" {
			return false // only a cell of plain funcs can wait: the rest runs when declared
		}
		funcs = append(funcs, fd)
	}
	missing := s.missingNames(seg, nil)
	if len(missing) == 0 {
		return false
	}
	yaegiName := strings.TrimSpace(err.Error()[strings.LastIndex(err.Error(), "undefined: ")+len("undefined: "):])
	if !hasName(missing, yaegiName) {
		return false // yaegi fails on something else first
	}
	text := func(n ast.Node) string {
		base := int(f.FileStart) + len("package p;")
		return seg.src[int(n.Pos())-base : int(n.End())-base]
	}
	var stubs strings.Builder
	var names []string
	for _, fd := range funcs {
		name := fd.Name.Name
		names = append(names, name)
		stubs.WriteString(trampoline(fd, text, fmt.Sprintf("%s is not defined yet: it uses %s, which no cell has declared; run the cell that declares %s", name, strings.Join(missing, ", "), strings.Join(missing, ", "))))
	}
	if _, err := s.eval(ctx, stubs.String()); err != nil {
		return false // a signature names what is missing: the cell's error stands
	}
	s.declMu.Lock()
	s.pending = append(s.pending, &pendingDecl{seg: seg, src: src, stubs: stubs.String(), funcs: names, missing: missing, cell: s.cell})
	s.declMu.Unlock()
	s.recordDecl(seg, names)
	s.recordFuncTypes(ctx, seg.src, names)
	hint := ""
	if near := nearest(missing[0], append(s.names(), goBuiltinNames()...)); len(missing[0]) > 3 && near != "" && near != missing[0] {
		hint = " (did you mean " + near + "?)"
	}
	fmt.Fprintf(os.Stderr, "note: %s uses %s, which no cell has declared yet%s: %s compiles once a cell declares it\n",
		strings.Join(names, ", "), strings.Join(missing, ", "), hint, plural(names, "it", "they"))
	return true
}

func plural(xs []string, one, many string) string {
	if len(xs) == 1 {
		return one
	}
	return many
}

// goBuiltinNames lists Go's predeclared functions, for the "did you mean" of a missing name.
func goBuiltinNames() []string {
	return []string{"append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make", "max", "min", "new", "panic", "print", "println", "real", "recover"}
}

// missingNames are the names seg uses that nothing declares (go/types' "undefined: x" in the
// segment itself, not a package's member), sorted; nil when it has other errors. The earlier
// declarations of the names in own are left out of the check.
func (s *Session) missingNames(seg segment, own []string) []string {
	c := s.checkExcept(seg, own)
	if c == nil {
		return nil
	}
	set := map[string]bool{}
	for _, e := range c.errs {
		if e.Soft || c.fset.Position(e.Pos).Filename != "cell" {
			continue // unused imports, or an earlier cell's declaration
		}
		name, ok := strings.CutPrefix(e.Msg, "undefined: ")
		if !ok {
			return nil
		}
		if strings.Contains(name, ".") {
			continue // a package's member: packages are empty stand-ins in the check
		}
		if !token.IsIdentifier(name) {
			return nil
		}
		set[name] = true
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// trampoline declares func fd as a call through its variable, which panics with msg while the
// variable is nil.
func trampoline(fd *ast.FuncDecl, text func(ast.Node) string, msg string) string {
	var params, args []string
	variadic := false
	k := 0
	for _, fl := range fd.Type.Params.List {
		for range max(1, len(fl.Names)) {
			p := fmt.Sprintf("gnP%d", k)
			k++
			params = append(params, p+" "+text(fl.Type))
			args = append(args, p)
			_, variadic = fl.Type.(*ast.Ellipsis)
		}
	}
	if variadic {
		args[len(args)-1] += "..."
	}
	results := ""
	if fd.Type.Results != nil {
		results = " " + text(fd.Type.Results)
	}
	sig := "(" + strings.Join(params, ", ") + ")" + results
	ret := "return "
	if fd.Type.Results == nil || len(fd.Type.Results.List) == 0 {
		ret = ""
	}
	v := fwdVar(fd.Name.Name)
	return fmt.Sprintf("var %s func%s\n\nfunc %s%s {\n\tif %s == nil {\n\t\tpanic(%q)\n\t}\n\t%s%s(%s)\n}\n\n",
		v, sig, fd.Name.Name, sig, v, msg, ret, v, strings.Join(args, ", "))
}

// resolvePending compiles the pending segments whose missing names cells now declare, after a
// declaration segment compiled, and points their trampolines at the real funcs.
func (s *Session) resolvePending(ctx context.Context, declared []string) {
	s.declMu.Lock()
	pending := s.pending
	s.declMu.Unlock()
	if len(pending) == 0 {
		return
	}
	var keep []*pendingDecl
	for _, p := range pending {
		// A later cell that declares all of its funcs again replaces it.
		replaced := true
		for _, n := range p.funcs {
			replaced = replaced && hasName(declared, n)
		}
		if replaced {
			continue
		}
		if missing := s.missingNames(p.seg, p.funcs); len(missing) > 0 {
			p.missing = missing
			keep = append(keep, p)
			continue
		}
		var assign []string
		for _, n := range p.funcs {
			assign = append(assign, fwdVar(n)+" = "+n)
		}
		_, err := s.eval(ctx, p.src)
		if err == nil {
			_, err = s.eval(ctx, strings.Join(assign, "; "))
		}
		if err != nil {
			s.eval(ctx, p.stubs) // what yaegi kept of the failed compile calls the trampolines again
			where := ""
			if p.cell != "" {
				where = " of " + p.cell
			}
			fmt.Fprintf(os.Stderr, "note: %s%s still do not compile: %v\n", strings.Join(p.funcs, ", "), where, err)
			continue
		}
		s.recordFuncTypes(ctx, p.seg.src, p.funcs)
	}
	s.declMu.Lock()
	s.pending = keep
	s.declMu.Unlock()
}
