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
	if !hasT && (seg.kind != segStmt || !s.types.mentionsNamed(src)) {
		return src
	}
	s.declMu.RLock()
	var earlier []string
	names := make([]string, 0, len(s.decls))
	for n := range s.decls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		earlier = append(earlier, s.decls[n])
	}
	for _, n := range sortedKeys(s.varType) {
		earlier = append(earlier, "var "+n+" "+s.varType[n])
	}
	imports := map[string]string{}
	for local, path := range s.imported {
		imports[local] = path
	}
	s.declMu.RUnlock()
	var head strings.Builder
	head.WriteString("package main;")
	for local, path := range imports {
		fmt.Fprintf(&head, "import %s %q;", local, path)
	}
	head.WriteString(` import fmt "fmt";`)
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
		return src
	}
	files := []*ast.File{f}
	if len(earlier) > 0 {
		// Earlier cells' declarations; one that fails to parse is left out.
		for _, d := range earlier {
			if ef, err := parser.ParseFile(fset, "earlier", head.String()+d, parser.SkipObjectResolution); err == nil {
				files = append(files, ef)
			}
		}
	}
	pkg := types.NewPackage("main", "main")
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{
		// Packages are empty: what the check needs is the cell's own types.
		Importer: importerFunc(func(path string) (*types.Package, error) {
			p := types.NewPackage(path, path[strings.LastIndexByte(path, '/')+1:])
			p.MarkComplete()
			return p, nil
		}),
		Error: func(error) {}, // keep going: references to packages do not type
	}
	_ = types.NewChecker(&conf, fset, pkg, info).Files(files)
	if seg.kind == segStmt {
		s.recordVarTypes(f, info, pkg)
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset - len(prefix) }
	var edits []edit
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || call.Ellipsis.IsValid() {
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
