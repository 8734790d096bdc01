package interp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// wrapPrefix is what a segment is wrapped in to parse it as a Go file.
func wrapPrefix(k segKind) string {
	if k == segStmt {
		return "package p; func _() {"
	}
	return "package p;"
}

// parseSegment reports a segment's syntax errors (positions relative to the wrapped source).
func parseSegment(seg segment) error {
	src := wrapPrefix(seg.kind) + seg.src
	if seg.kind == segStmt {
		src += "\n}"
	}
	_, err := parser.ParseFile(token.NewFileSet(), "cell", src, parser.SkipObjectResolution)
	return err
}

// lastStatement returns the source of the last statement of a statement segment.
func lastStatement(src string) string {
	const prefix = "package p; func _() {"
	full := prefix + src + "\n}"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", full, parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return ""
	}
	fn, ok := f.Decls[0].(*ast.FuncDecl)
	if !ok || len(fn.Body.List) == 0 {
		return ""
	}
	last := fn.Body.List[len(fn.Body.List)-1]
	if _, ok := last.(*ast.ExprStmt); !ok {
		return ""
	}
	return full[fset.Position(last.Pos()).Offset:fset.Position(last.End()).Offset]
}

// isExpr reports whether src parses as a single expression.
func isExpr(src string) bool {
	_, err := parser.ParseExpr(src)
	return err == nil
}

// wrapResult rewrites a statement segment so that its trailing expression E becomes
// gnrt.Result(E), which hands the session every value E has (a call with several results
// included). A call that returns nothing fails to compile wrapped, and then runs as written.
func wrapResult(src string) (string, bool) {
	const prefix = "package p; func _() {"
	full := prefix + src + "\n}"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", full, parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return "", false
	}
	fn, ok := f.Decls[0].(*ast.FuncDecl)
	if !ok || len(fn.Body.List) == 0 {
		return "", false
	}
	last, ok := fn.Body.List[len(fn.Body.List)-1].(*ast.ExprStmt)
	if !ok {
		return "", false
	}
	start := fset.Position(last.Pos()).Offset - len(prefix)
	end := fset.Position(last.End()).Offset - len(prefix)
	return src[:start] + "gnrt.Result(" + src[start:end] + ")" + src[end:], true
}

// wrapBlocks runs the compound statements at the top level of a statement segment (if, for,
// switch, select, plain blocks) inside func() { ... }(). Their variables are local to them in Go
// anyway, and yaegi v0.16.1 loses variables declared by "a, err := f()" inside such blocks when
// they sit at a cell's top level ("undefined: a"); inside a function it scopes them correctly.
func wrapBlocks(src string) string {
	const prefix = "package p; func _() {"
	full := prefix + src + "\n}"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", full, parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return src
	}
	fn, ok := f.Decls[0].(*ast.FuncDecl)
	if !ok {
		return src
	}
	type span struct{ start, end int }
	var spans []span
	for _, st := range fn.Body.List {
		switch st.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt,
			*ast.SelectStmt, *ast.BlockStmt, *ast.LabeledStmt:
			// Only blocks with the failing form: yaegi's interrupt reaches loops at a cell's
			// top level but not inside a called func, so other blocks stay as written.
			if b, ok := st.(*ast.BlockStmt); (ok && hasDefine(b)) || initDefines(st) || hasMultiDefine(st) {
				spans = append(spans, span{fset.Position(st.Pos()).Offset - len(prefix), fset.Position(st.End()).Offset - len(prefix)})
			}
		}
	}
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		src = src[:sp.start] + "(func() { " + src[sp.start:sp.end] + " })()" + src[sp.end:]
	}
	return src
}

// initDefines reports whether an if or switch declares variables in its init statement, which
// yaegi would otherwise make the cell's own (if x := 2; ... changes the cell's x).
func initDefines(st ast.Stmt) bool {
	var init ast.Stmt
	switch st := st.(type) {
	case *ast.IfStmt:
		init = st.Init
	case *ast.SwitchStmt:
		init = st.Init
	case *ast.TypeSwitchStmt:
		init = st.Init
	}
	a, ok := init.(*ast.AssignStmt)
	return ok && a.Tok == token.DEFINE
}

// hasDefine reports whether a plain block declares a variable: at a cell's top level yaegi would
// make it the cell's variable of that name, not a new one.
func hasDefine(b *ast.BlockStmt) bool {
	for _, st := range b.List {
		if a, ok := st.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
			return true
		}
		if d, ok := st.(*ast.DeclStmt); ok {
			if g, ok := d.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				return true
			}
		}
	}
	return false
}

func hasMultiDefine(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && a.Tok == token.DEFINE && len(a.Lhs) > 1 {
			found = true
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		return !found
	})
	return found
}

// guardLeadingFunc parenthesizes a func literal that opens a statement segment. yaegi picks its
// mode from a source's first token: "func" makes it parse the segment as declarations, and the
// literal's call then runs again with every later cell.
func guardLeadingFunc(src string) string {
	const prefix = "package p; func _() {"
	lead := strings.TrimLeft(src, " \t\r\n")
	if !strings.HasPrefix(lead, "func") {
		return src
	}
	full := prefix + src + "\n}"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", full, parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return src
	}
	fn, ok := f.Decls[0].(*ast.FuncDecl)
	if !ok || len(fn.Body.List) == 0 {
		return src
	}
	var lit *ast.FuncLit
	ast.Inspect(fn.Body.List[0], func(n ast.Node) bool {
		if l, ok := n.(*ast.FuncLit); ok && lit == nil && fset.Position(l.Pos()).Offset-len(prefix) == len(src)-len(lead) {
			lit = l
		}
		return lit == nil
	})
	if lit == nil {
		return src
	}
	start := fset.Position(lit.Pos()).Offset - len(prefix)
	end := fset.Position(lit.End()).Offset - len(prefix)
	return src[:start] + "(" + src[start:end] + ")" + src[end:]
}
