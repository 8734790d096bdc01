package interp

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// yaegi gives a value of a named non-struct cell type (type Celsius float64) its underlying
// reflect type, so at run time %T cannot tell a Celsius from a float64. Its static type is
// known before the cell runs, though: typedFormatArgs type-checks the segment (with the
// session's earlier declarations) and hands each argument that a %T of a fmt call prints, and
// whose static type names such a type, to fmt with that name (gnrt.Typed).

// typeVerbRE finds a %T verb.
var typeVerbRE = regexp.MustCompile(`%[-+# 0-9.\[\]*]*T`)

// formatArg is the index of the format argument of fmt's functions that take one.
var formatArg = map[string]int{"Printf": 0, "Sprintf": 0, "Errorf": 0, "Fprintf": 1, "Appendf": 1}

// typedArg is an argument of a fmt call with the Go name of its static type, for %T.
type typedArg struct {
	v    any
	name string
}

// typed is gnrt.Typed: the rewritten %T argument.
func typed(v any, name string) any { return typedArg{v: v, name: name} }

// typedFormatArgs returns seg's source with the %T arguments of fmt calls whose static type
// names a non-struct cell type wrapped in gnrt.Typed(x, "main.Celsius"), on their own lines.
// Anything it cannot type leaves the source as it is.
func (s *Session) typedFormatArgs(seg segment) string {
	src := seg.src
	hasT := strings.Contains(src, "fmt.") && typeVerbRE.MatchString(src)
	if !hasT && !s.callsCellGeneric(src) && (seg.kind != segStmt || !s.types.mentionsNamed(src)) {
		return src
	}
	c := s.check(seg)
	if c == nil {
		return src
	}
	f, info, pkg, fset, prefix := c.file, c.info, c.pkg, c.fset, c.prefix
	if seg.kind == segStmt {
		s.recordVarTypes(f, info, pkg)
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset - prefix }
	var edits []edit
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if e, ok := explicitTypeArgs(call, info, pkg, off, len(src)); ok {
			edits = append(edits, e)
		}
		if call.Ellipsis.IsValid() {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		fi, ok := formatArg[sel.Sel.Name]
		if pn, isPkg := info.Uses[id].(*types.PkgName); !ok || !isPkg || pn.Imported().Path() != "fmt" || len(call.Args) <= fi {
			return true
		}
		tv := info.Types[call.Args[fi]]
		if tv.Value == nil || tv.Value.Kind() != constant.String {
			return true
		}
		args := call.Args[fi+1:]
		for _, d := range scanFormat(constant.StringVal(tv.Value), len(args)) {
			if d.verb != 'T' || d.arg < 0 || d.arg >= len(args) {
				continue
			}
			a := args[d.arg]
			t := info.Types[a].Type
			if t == nil || types.IsInterface(t) || !namesCellNonStruct(t, pkg, map[types.Type]bool{}) {
				continue
			}
			name := types.TypeString(t, func(p *types.Package) string { return p.Name() })
			if off(a.Pos()) < 0 || off(a.End()) > len(src) {
				continue
			}
			edits = append(edits, edit{off(a.Pos()), 0, "gnrt.Typed("}, edit{off(a.End()), 0, ", " + strconv.Quote(name) + ")"})
		}
		return true
	})
	if len(edits) == 0 {
		return src
	}
	return applyEdits(src, dedupEdits(edits))
}

// checked is a segment type-checked with go/types: the session's earlier declarations and
// variables beside it, imported packages as empty stand-ins (what they export is unknown).
type checked struct {
	file   *ast.File // the segment's file (a statement segment is the body of func _)
	info   *types.Info
	pkg    *types.Package
	fset   *token.FileSet
	prefix int           // bytes before the segment's source in file
	errs   []types.Error // what the checker reported, references into packages included
}

// check type-checks seg, or returns nil when it does not parse.
func (s *Session) check(seg segment) *checked { return s.checkExcept(seg, nil) }

// checkExcept is check without the earlier declarations of names in except (a pending
// segment's own, forward.go).
func (s *Session) checkExcept(seg segment, except []string) *checked {
	src := seg.src
	s.declMu.RLock()
	var earlier []string
	names := make([]string, 0, len(s.decls))
	for n := range s.decls {
		if !hasName(except, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		earlier = append(earlier, s.decls[n])
	}
	for _, n := range sortedKeys(s.varType) {
		earlier = append(earlier, "var "+n+" "+s.varType[n])
	}
	for n := range s.vars {
		if _, typed := s.varType[n]; !typed && s.decls[n] == "" {
			earlier = append(earlier, "var "+n+" any") // its type is unknown here
		}
	}
	imports := map[string]string{}
	for local, path := range s.imported {
		imports[local] = path
	}
	s.declMu.RUnlock()
	var head strings.Builder
	head.WriteString("package main;")
	for _, local := range sortedKeys(imports) {
		fmt.Fprintf(&head, "import %s %q;", local, imports[local])
	}
	if _, ok := imports["fmt"]; !ok {
		head.WriteString(` import fmt "fmt";`)
	}
	head.WriteString(` import gnrt "gpunotes.internal/rt";`)
	prefix := head.String()
	if seg.kind == segStmt {
		prefix += "func _() {"
	}
	body := prefix + src
	if seg.kind == segStmt {
		body += "\n}"
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", body, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	files := []*ast.File{f}
	for _, d := range earlier {
		// Earlier cells' declarations; one that fails to parse is left out.
		if ef, err := parser.ParseFile(fset, "earlier", head.String()+d, parser.SkipObjectResolution); err == nil {
			files = append(files, ef)
		}
	}
	c := &checked{file: f, fset: fset, prefix: len(prefix), pkg: types.NewPackage("main", "main"),
		info: &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{},
			Instances: map[*ast.Ident]types.Instance{}}}
	conf := types.Config{
		// Packages are empty: what the checks need is the cell's own names and types.
		Importer: importerFunc(func(path string) (*types.Package, error) {
			p := types.NewPackage(path, pkgName(path))
			p.MarkComplete()
			return p, nil
		}),
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				c.errs = append(c.errs, te)
			}
		},
	}
	_ = types.NewChecker(&conf, fset, c.pkg, c.info).Files(files)
	return c
}

// genericDeclRE finds the generic funcs a source declares.
var genericDeclRE = regexp.MustCompile(`func\s+(\w+)\s*\[`)

// callsCellGeneric reports whether src calls a generic func declared in it or in a cell.
func (s *Session) callsCellGeneric(src string) bool {
	var names []string
	for _, m := range genericDeclRE.FindAllStringSubmatch(src, -1) {
		names = append(names, m[1])
	}
	s.declMu.RLock()
	for n, d := range s.decls {
		if strings.Contains(d, "func "+n+"[") {
			names = append(names, n)
		}
	}
	s.declMu.RUnlock()
	for _, n := range names {
		if strings.Contains(src, n+"(") {
			return true
		}
	}
	return false
}

// explicitTypeArgs writes out the type arguments that go/types inferred for a call of a
// generic func declared in a cell, `Equal(a, b)` -> `Equal[IDs, int](a, b)`: yaegi does not
// infer through constraints (`S ~[]E` said "undefined type for E"). Calls whose inferred types
// come from packages (unknown to the check) stay as written.
func explicitTypeArgs(call *ast.CallExpr, info *types.Info, pkg *types.Package, off func(token.Pos) int, n int) (edit, bool) {
	id, ok := call.Fun.(*ast.Ident)
	if !ok {
		return edit{}, false
	}
	fn, ok := info.Uses[id].(*types.Func)
	inst, has := info.Instances[id]
	if !ok || !has || fn.Pkg() != pkg || fn.Parent() != pkg.Scope() || inst.TypeArgs == nil {
		return edit{}, false
	}
	var args []string
	for i := 0; i < inst.TypeArgs.Len(); i++ {
		t := inst.TypeArgs.At(i)
		str := types.TypeString(t, func(p *types.Package) string {
			if p == pkg {
				return ""
			}
			return p.Name()
		})
		if strings.Contains(str, "invalid type") || strings.Contains(str, "untyped") {
			return edit{}, false
		}
		if nm, ok := t.(*types.Named); ok && nm.Obj().Parent() != pkg.Scope() && nm.Obj().Pkg() == pkg {
			return edit{}, false // a type local to a func: its name may not reach the call
		}
		args = append(args, str)
	}
	at := off(id.End())
	if at < 0 || at > n {
		return edit{}, false
	}
	return edit{at, 0, "[" + strings.Join(args, ", ") + "]"}, true
}

// recordVarTypes keeps the static types of the variables that the statements at f's top
// level define, where they name non-struct cell types, for later cells' checks.
func (s *Session) recordVarTypes(f *ast.File, info *types.Info, pkg *types.Package) {
	fn, ok := f.Decls[len(f.Decls)-1].(*ast.FuncDecl)
	if !ok || fn.Body == nil {
		return
	}
	var ids []*ast.Ident
	for _, st := range fn.Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, l := range st.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						ids = append(ids, id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					ids = append(ids, sp.(*ast.ValueSpec).Names...)
				}
			}
		}
	}
	s.declMu.Lock()
	defer s.declMu.Unlock()
	for _, id := range ids {
		obj, ok := info.Defs[id].(*types.Var)
		if !ok || id.Name == "_" {
			continue
		}
		if t := obj.Type(); !types.IsInterface(t) && namesCellNonStruct(t, pkg, map[types.Type]bool{}) {
			s.varType[id.Name] = types.TypeString(t, func(p *types.Package) string {
				if p == pkg {
					return ""
				}
				return p.Name()
			})
		} else {
			delete(s.varType, id.Name)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// dedupEdits drops repeated edits (an argument that two %T verbs print).
func dedupEdits(edits []edit) []edit {
	seen := map[edit]bool{}
	out := edits[:0]
	for _, e := range edits {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// namesCellNonStruct reports whether t is, or is built from, a named non-struct type declared
// in pkg (the cells).
func namesCellNonStruct(t types.Type, pkg *types.Package, seen map[types.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if t.Obj().Pkg() == pkg {
			if _, isStruct := t.Underlying().(*types.Struct); !isStruct {
				return true
			}
		}
		if ta := t.TypeArgs(); ta != nil {
			for i := 0; i < ta.Len(); i++ {
				if namesCellNonStruct(ta.At(i), pkg, seen) {
					return true
				}
			}
		}
		return false
	case *types.Pointer:
		return namesCellNonStruct(t.Elem(), pkg, seen)
	case *types.Slice:
		return namesCellNonStruct(t.Elem(), pkg, seen)
	case *types.Array:
		return namesCellNonStruct(t.Elem(), pkg, seen)
	case *types.Chan:
		return namesCellNonStruct(t.Elem(), pkg, seen)
	case *types.Map:
		return namesCellNonStruct(t.Key(), pkg, seen) || namesCellNonStruct(t.Elem(), pkg, seen)
	}
	return false
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
