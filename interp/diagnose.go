package interp

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// diagnosis is what a cell has that yaegi cannot compile, found from the source after yaegi
// gave a compile error or crashed compiling it.
type diagnosis struct {
	line, col int    // in the cell
	msg       string // what is wrong
	hint      string // what to do
}

// diagnose looks in seg for what makes yaegi fail: a method its receiver's type lacks (yaegi
// crashes with a nil pointer on `y := f().Missing()`), a comma-ok receive at a cell's top
// level, a range over a value the rewriting pass could not prove to be an int. only, when not
// empty, restricts method checks to that name. It runs with s.mu held.
func (s *Session) diagnose(seg segment, only string) *diagnosis {
	prefix := wrapPrefix(seg.kind)
	full := prefix + seg.src
	if seg.kind == segStmt {
		full += "\n}"
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", full, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	at := func(p token.Pos) (int, int) {
		pos := fset.Position(p)
		c := pos.Column
		if pos.Line == 1 {
			c -= len(prefix)
		}
		return cellPos(seg, pos.Line, c)
	}
	var d *diagnosis
	ast.Inspect(f, func(n ast.Node) bool {
		if d != nil {
			return false
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || (only != "" && sel.Sel.Name != only) {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && s.imported[id.Name] != "" && !s.isUserNameLocked(id.Name) {
			return true
		}
		t := s.typeOf(sel.X, 0)
		if t == nil || hasMember(t, sel.Sel.Name) {
			return true
		}
		l, c := at(sel.Sel.Pos())
		d = &diagnosis{line: l, col: c, msg: fmt.Sprintf("%s has no method or field %s", t, sel.Sel.Name)}
		if near := nearest(sel.Sel.Name, memberNames(t)); near != "" {
			d.hint = "did you mean " + near + "?"
		}
		return false
	})
	if d != nil || only != "" {
		return d
	}
	if seg.kind == segStmt {
		fn := f.Decls[0].(*ast.FuncDecl)
		for _, st := range fn.Body.List {
			a, ok := st.(*ast.AssignStmt)
			if !ok || a.Tok != token.DEFINE || len(a.Lhs) != 2 || len(a.Rhs) != 1 {
				continue
			}
			if u, ok := a.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.ARROW {
				l, c := at(a.Pos())
				return &diagnosis{line: l, col: c, msg: "the Go interpreter (yaegi) cannot define `v, ok := <-ch` at a cell's top level",
					hint: "declare the variables first (var v T; var ok bool; v, ok = <-ch) or receive inside a func"}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok && d == nil {
			if !isRangeable(r.X) {
				l, c := at(r.For)
				d = &diagnosis{line: l, col: c, msg: "the Go interpreter (yaegi) could not compile this range loop: ranging over an integer (Go 1.22) is supported when the cell shows the value is an int, ranging over a function (Go 1.23 iterators) is not",
					hint: "for an int n write `for i := 0; i < n; i++`; for an iterator seq call it: seq(func(v T) bool { ...; return true })"}
			}
		}
		return d == nil
	})
	return d
}

// isRangeable reports whether a range expression surely is a slice, array, map, string or
// channel by its form (composite literal, make, string literal).
func isRangeable(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.CompositeLit:
		return true
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.CallExpr:
		if id, ok := e.Fun.(*ast.Ident); ok && (id.Name == "make" || id.Name == "append") {
			return true
		}
	case *ast.SliceExpr:
		return true
	}
	return false
}

func (s *Session) isUserNameLocked(n string) bool {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	_, d := s.decls[n]
	return d || s.vars[n]
}

// typeOf finds the static type of a receiver expression without running anything but the
// lookup of names: a variable, a package function's result, a method's result.
func (s *Session) typeOf(e ast.Expr, depth int) reflect.Type {
	if depth > 8 {
		return nil
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return s.typeOf(e.X, depth+1)
	case *ast.Ident:
		if !s.isUserNameLocked(e.Name) {
			return nil
		}
		v, err := s.i.Eval(e.Name)
		if err != nil || !v.IsValid() {
			return nil
		}
		return v.Type()
	case *ast.CallExpr:
		ft := s.calledType(e.Fun, depth)
		if ft == nil || ft.Kind() != reflect.Func || ft.NumOut() == 0 {
			return nil
		}
		return ft.Out(0)
	case *ast.SelectorExpr:
		t := s.typeOf(e.X, depth+1)
		if t == nil {
			return nil
		}
		st := t
		if st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		if st.Kind() == reflect.Struct {
			if f, ok := st.FieldByName(e.Sel.Name); ok {
				return f.Type
			}
		}
	}
	return nil
}

// calledType is the type of a called expression: pkg.F, recv.M, or a cell's func.
func (s *Session) calledType(fun ast.Expr, depth int) reflect.Type {
	switch fun := fun.(type) {
	case *ast.SelectorExpr:
		if id, ok := fun.X.(*ast.Ident); ok && !s.isUserNameLocked(id.Name) {
			path := s.imported[id.Name]
			if path == "" {
				return nil
			}
			syms := s.symbols[path+"/"+pkgName(path)]
			v, ok := syms[fun.Sel.Name]
			if !ok || !v.IsValid() || v.Kind() != reflect.Func {
				return nil
			}
			return v.Type()
		}
		t := s.typeOf(fun.X, depth+1)
		if t == nil {
			return nil
		}
		if m, ok := t.MethodByName(fun.Sel.Name); ok {
			if t.Kind() == reflect.Interface {
				return m.Type
			}
			return methodType(m.Type)
		}
		if m, ok := reflect.PointerTo(t).MethodByName(fun.Sel.Name); ok && t.Kind() != reflect.Pointer {
			return methodType(m.Type)
		}
	case *ast.Ident:
		return s.typeOf(fun, depth+1)
	}
	return nil
}

// methodType drops the receiver from a method's func type.
func methodType(t reflect.Type) reflect.Type {
	in := make([]reflect.Type, 0, t.NumIn()-1)
	for i := 1; i < t.NumIn(); i++ {
		in = append(in, t.In(i))
	}
	out := make([]reflect.Type, t.NumOut())
	for i := range out {
		out[i] = t.Out(i)
	}
	return reflect.FuncOf(in, out, t.IsVariadic())
}

// hasMember reports whether t has a method or field name, or whether it cannot tell: only
// named types of compiled packages are checked (reflect does not see the methods of types that
// cells declare, and yaegi gives those no package path).
func hasMember(t reflect.Type, name string) bool {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.PkgPath() == "" {
		return true
	}
	if _, ok := t.MethodByName(name); ok {
		return true
	}
	if _, ok := reflect.PointerTo(base).MethodByName(name); ok {
		return true
	}
	if base.Kind() == reflect.Struct {
		if _, ok := base.FieldByName(name); ok {
			return true
		}
	}
	return false
}

func memberNames(t reflect.Type) []string {
	var out []string
	for _, tt := range []reflect.Type{t, reflect.PointerTo(t)} {
		for i := 0; i < tt.NumMethod(); i++ {
			out = append(out, tt.Method(i).Name)
		}
	}
	return out
}

// nearest returns the candidate closest to name, within a case-insensitive edit distance of a
// third of its length.
func nearest(name string, cands []string) string {
	best, bd := "", max(1, len(name)/3)+1
	for _, c := range cands {
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bd {
			best, bd = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// compileCrash turns a panic that escaped yaegi's compiler into a compile error that says what
// in the cell it could not handle, or that yaegi failed, never a bare "nil type".
func (s *Session) compileCrash(p interp.Panic, seg segment) *CellError {
	d := s.diagnose(seg, "")
	if d == nil {
		d = genericDefine(seg, s.genericFunc)
	}
	if d == nil {
		d = topReturn(seg)
	}
	if d == nil {
		l, c := seg.line, seg.col
		d = &diagnosis{line: l, col: c, msg: fmt.Sprintf("the Go interpreter (yaegi) failed compiling this part of the cell (%v)", p.Value),
			hint: "move the code into a func, or split it into smaller statements; please report the cell"}
	}
	return diagnosisError(seg, d)
}

func diagnosisError(seg segment, d *diagnosis) *CellError {
	tb := []string{fmt.Sprintf("cell line %d, column %d: %s", d.line, d.col, d.msg), excerpt(seg, d.line, d.col)}
	val := fmt.Sprintf("%d:%d: %s", d.line, d.col, d.msg)
	if d.hint != "" {
		tb = append(tb, "hint: "+d.hint)
		val += " (" + d.hint + ")"
	}
	return &CellError{Name: "CompileError", Value: val, Traceback: tb}
}

// genericDefine explains yaegi's crash on `x := slices.Max(xs)` at a cell's top level: it
// cannot define a variable from the result of a generic function of a source package (the
// generic standard library) there, while in a func, or assigned to a declared variable, the
// same call works.
func genericDefine(seg segment, generic func(name string) bool) *diagnosis {
	if seg.kind != segStmt {
		return nil
	}
	prefix := wrapPrefix(segStmt)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", prefix+seg.src+"\n}", parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return nil
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		a, ok := st.(*ast.AssignStmt)
		if !ok || a.Tok != token.DEFINE || len(a.Rhs) != 1 {
			continue
		}
		call, ok := a.Rhs[0].(*ast.CallExpr)
		if !ok {
			continue
		}
		fun := call.Fun
		if inner, ok := fun.(*ast.CallExpr); ok {
			fun = inner.Fun // a call of what it returns: sync.OnceValues(f)()
		}
		if ix, ok := fun.(*ast.IndexExpr); ok {
			fun = ix.X
		}
		if ix, ok := fun.(*ast.IndexListExpr); ok {
			fun = ix.X
		}
		if id, ok := fun.(*ast.Ident); ok && generic != nil && generic(id.Name) {
			return genericDiagnosis(fset, seg, prefix, a, id.Name+"(...)")
		}
		if id, ok := fun.(*ast.Ident); ok && (id.Name == "gnOnceValue" || id.Name == "gnOnceValues") {
			return genericDiagnosis(fset, seg, prefix, a, "sync."+strings.TrimPrefix(id.Name, "gn")+"(...)") // genericStd's rename
		}
		sel, ok := fun.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			continue
		}
		switch pkg.Name {
		case "slices", "maps", "cmp", "iter":
		case "sync":
			if sel.Sel.Name != "OnceValue" && sel.Sel.Name != "OnceValues" {
				continue
			}
		case "errors":
			if sel.Sel.Name != "AsType" {
				continue
			}
		case "rand":
			if sel.Sel.Name != "N" { // math/rand/v2's generic N (genericStd's rename)
				continue
			}
		case "unique":
			if sel.Sel.Name != "Make" { // genericStd's renames
				continue
			}
		default:
			continue
		}
		return genericDiagnosis(fset, seg, prefix, a, pkg.Name+"."+sel.Sel.Name+"(...)")
	}
	return nil
}

func genericDiagnosis(fset *token.FileSet, seg segment, prefix string, a *ast.AssignStmt, call string) *diagnosis {
	pos := fset.Position(a.Pos())
	l, c := pos.Line, pos.Column
	if l == 1 {
		c -= len(prefix)
	}
	l, c = cellPos(seg, l, c)
	var names []string
	for _, x := range a.Lhs {
		names = append(names, identText(x))
	}
	return &diagnosis{line: l, col: c,
		msg:  fmt.Sprintf("the Go interpreter (yaegi) cannot define variables from the result of the generic %s at a cell's top level", call),
		hint: fmt.Sprintf("declare them first with their types (var %s T; %s = %s), or move the code into a func", strings.Join(names, ", "), strings.Join(names, ", "), call)}
}

// topReturn explains yaegi's crash on a return among a cell's top-level statements (also
// inside an if or a loop there, though not in a func literal): a cell is not a function, and
// go build rejects the same statements outside one.
func topReturn(seg segment) *diagnosis {
	if seg.kind != segStmt || !strings.Contains(seg.src, "return") {
		return nil
	}
	prefix := wrapPrefix(segStmt)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", prefix+seg.src+"\n}", parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return nil
	}
	var ret *ast.ReturnStmt
	ast.Inspect(f.Decls[0].(*ast.FuncDecl).Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			if ret == nil {
				ret = n
			}
		}
		return ret == nil
	})
	if ret == nil {
		return nil
	}
	pos := fset.Position(ret.Pos())
	l, c := pos.Line, pos.Column
	if l == 1 {
		c -= len(prefix)
	}
	l, c = cellPos(seg, l, c)
	return &diagnosis{line: l, col: c,
		msg:  "return at a cell's top level: a cell's statements are not a function's body, so there is nothing to return from",
		hint: "skip the rest of the cell with if/else, or move the code into a func and call it"}
}

// genericFunc reports whether name is a generic func declared in a cell.
func (s *Session) genericFunc(name string) bool {
	return strings.Contains(s.declSrc(name), "func "+name+"[")
}

// identText returns an identifier's name for a hint ("_" for other expressions).
func identText(x ast.Expr) string {
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return "_"
}

// commaOKRecv finds `v, ok := <-ch` among a statement segment's top-level statements, which
// yaegi cannot compile there ("nil type").
func commaOKRecv(seg segment) *diagnosis {
	if seg.kind != segStmt {
		return nil
	}
	prefix := wrapPrefix(segStmt)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", prefix+seg.src+"\n}", parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return nil
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		a, ok := st.(*ast.AssignStmt)
		if !ok || a.Tok != token.DEFINE || len(a.Lhs) != 2 || len(a.Rhs) != 1 {
			continue
		}
		if u, ok := a.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.ARROW {
			pos := fset.Position(a.Pos())
			l, c := pos.Line, pos.Column
			if l == 1 {
				c -= len(prefix)
			}
			l, c = cellPos(seg, l, c)
			return &diagnosis{line: l, col: c, msg: "the Go interpreter (yaegi) cannot define `v, ok := <-ch` at a cell's top level",
				hint: "declare the variables first (var v T; var ok bool; v, ok = <-ch) or receive inside a func"}
		}
	}
	return nil
}
