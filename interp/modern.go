package interp

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// mainName is what a cell's func main is renamed to: yaegi runs a package's main after every
// Eval once one exists, and a cell's main must run once, in its own cell.
const mainName = "gnMain"

// rewriteEnv is what the rewriting pass knows about the session.
type rewriteEnv struct {
	ints     map[string]bool                     // top-level names known to hold integers (range over int)
	decl     func(name string) string            // source of an earlier cell's declaration of name ("" if none)
	pkgs     map[string]bool                     // local names of imported packages
	userFunc map[string]bool                     // builtins the user redeclared (clear, min, max)
	method   func(name string) string            // source of an earlier cell's method name, if one type has it
	vars     map[string]bool                     // variables of earlier cells
	varDef   func(name string) string            // source of the statement that defined an earlier cell's variable, where it shows type arguments
	embedded func(ast.Expr) bool                 // an embedded field's type has methods (embeds.go)
	binFunc  func(pkg, name string) reflect.Type // type of a compiled package's func (stdseq.go)
	varType  func(name string) reflect.Type      // type of an earlier cell's variable (nil if unknown)
	imports  map[string]string                   // local names of imported packages -> import paths
}

// pkgPath is the import path of the package imported as local ("" if none).
func (e rewriteEnv) pkgPath(local string) string { return e.imports[local] }

// edit replaces del bytes at off with text.
type edit struct {
	off  int
	del  int
	text string
}

func applyEdits(src string, edits []edit) string {
	sort.SliceStable(edits, func(a, b int) bool { return edits[a].off > edits[b].off })
	for _, e := range edits {
		src = src[:e.off] + e.text + src[e.off+e.del:]
	}
	return src
}

// needsRewrite is a cheap filter: most cells hold none of the constructs rewriteGo changes.
func needsRewrite(src string) bool {
	for _, w := range []string{"go", "defer", "for", "main", "clear", "min", "max", "os.Stdin", ":=", "const", "var", "type", "AsType", "Pointer", "func", "new(", "struct", "TypeFor", "AddCleanup", "Concat", ".N(", ".N[", "unique."} {
		if strings.Contains(src, w) {
			return true
		}
	}
	return floatArgRE.MatchString(src) || needsSeqRewrite(src) // untypedFloats, stdseq.go
}

// floatArgRE finds a float literal argument of a call.
var floatArgRE = regexp.MustCompile(`[(,]\s*[-+]?[0-9]*\.[0-9]`)

// rewriteGo prepares a segment for yaegi (v0.16.1), closing gaps between it and Go 1.22+
// without changing the segment's line numbers:
//   - `go f(x)` becomes `gnrt.Go(f, x)`: the arguments are evaluated where the statement stands
//     and a panic in the goroutine is reported to the cell instead of killing the kernel (a
//     func literal keeps its go statement and gets a recover);
//   - `defer f(x)` reads x at the defer (yaegi reads bare variables at return);
//   - loops that declare their variables copy them per iteration when a closure or & could
//     keep them (Go 1.22);
//   - `for i := range n` over an integer becomes a counting loop (Go 1.22);
//   - comma-ok index and type assertions at a cell's top level are split (yaegi's "nil type");
//   - `clear(x)` calls a helper (yaegi lacks the Go 1.21 builtin; min and max are declared);
//   - `main` is renamed, so a cell's func main runs once;
//   - `os.Stdin` becomes `gnrt.Stdin`, a reader that prompts the front end for input;
//   - a type declared in a function body is registered for fmt's names (celltypes.go).
//
// It also returns the names the segment binds to integers (with env's), nil when it skipped the
// segment.
func rewriteGo(seg segment, env rewriteEnv) (string, map[string]bool, error) {
	if !needsRewrite(seg.src) {
		return seg.src, nil, nil
	}
	prefix := wrapPrefix(seg.kind)
	suffix := ""
	if seg.kind == segStmt {
		suffix = "\n}"
	}
	full := prefix + seg.src + suffix
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", full, parser.SkipObjectResolution)
	if err != nil {
		return "", nil, err
	}
	if err := checkEmbeds(f, fset, env.embedded); err != nil {
		return "", nil, err
	}
	r := &rewriter{fset: fset, full: full, env: env, ints: intNames(f, env.ints), file: f}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	r.top = map[ast.Stmt]ast.Stmt{}
	if seg.kind == segStmt {
		if fn, ok := f.Decls[0].(*ast.FuncDecl); ok {
			// The cell's own defers (in loops too, not in func literals) are main's.
			r.cellDefer = map[*ast.DeferStmt]bool{}
			ast.Inspect(fn.Body, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.FuncLit:
					return false
				case *ast.DeferStmt:
					r.cellDefer[m] = true
				}
				return true
			})
			for _, st := range fn.Body.List {
				r.topCommaOK(st)
				r.top[st] = st
				if l, ok := st.(*ast.LabeledStmt); ok {
					r.top[l.Stmt] = st
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.DeclStmt:
			r.registerLocal(n)
		case *ast.GoStmt:
			r.goStmt(n)
		case *ast.DeferStmt:
			r.deferStmt(n)
		case *ast.ForStmt:
			r.forStmt(n)
		case *ast.RangeStmt:
			r.rangeStmt(n)
		case *ast.CallExpr:
			r.untypedFloats(n)
			r.binaryFuncArgs(n) // stdseq.go
			r.typeFor(n)
			r.inferTypeArgs(n)
			r.newExpr(n)
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "clear" && !env.userFunc["clear"] && len(n.Args) == 1 {
				r.edits = append(r.edits, edit{off(id.Pos()), len("clear"), "gnrt.Clear"})
			}
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "min" || id.Name == "max") && !env.userFunc[id.Name] {
				r.minMax(n, id.Name)
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "os" && n.Sel.Name == "Stdin" {
				r.edits = append(r.edits, edit{off(n.Pos()), len("os.Stdin"), "gnrt.Stdin"})
			}
			r.genericStd(n)
			ast.Inspect(n.X, r.renameMain)
			return false
		case *ast.FuncDecl:
			if n.Recv == nil && n.Name.Name == "main" {
				r.edits = append(r.edits, edit{off(n.Name.Pos()), len("main"), mainName})
			}
			if n.Recv != nil {
				ast.Inspect(n.Recv, r.renameMain)
			}
			ast.Inspect(n.Type, r.renameMain)
			// The signature names generic standard types too: func f() []unique.Handle[string].
			ast.Inspect(n.Type, func(m ast.Node) bool {
				if sel, ok := m.(*ast.SelectorExpr); ok {
					r.genericStd(sel)
				}
				return true
			})
			if n.Body != nil {
				ast.Inspect(n.Body, func(m ast.Node) bool { return r.visit(m) })
			}
			return false
		case *ast.KeyValueExpr:
			ast.Inspect(n.Value, func(m ast.Node) bool { return r.visit(m) })
			if _, ok := n.Key.(*ast.Ident); !ok {
				ast.Inspect(n.Key, func(m ast.Node) bool { return r.visit(m) })
			}
			return false
		case *ast.Field:
			// Field and parameter names are not references to main.
			ast.Inspect(n.Type, func(m ast.Node) bool { return r.visit(m) })
			return false
		case *ast.Ident:
			r.renameMain(n)
		}
		return true
	})
	r.loopClosures(f)
	r.nameParams(f)
	r.onceVarTypes(f)
	if len(r.edits) == 0 {
		return seg.src, r.ints, nil
	}
	out := applyEdits(full, r.edits)
	return out[len(prefix) : len(out)-len(suffix)], r.ints, nil
}

type rewriter struct {
	fset  *token.FileSet
	full  string
	env   rewriteEnv
	ints  map[string]bool
	edits []edit
	n     int // counter for fresh names
	// top maps the statements at a cell's top level (and labeled ones' loops) to themselves
	// (or their label): yaegi keeps those variables global, where `i := i` is the same i.
	top       map[ast.Stmt]ast.Stmt
	cellDefer map[*ast.DeferStmt]bool // defers of a statement segment outside func literals
	file      *ast.File
	consumed  map[ast.Expr]bool           // range expressions a range rewrite replaced as a whole
	uses      map[*ast.Ident]types.Object // go/types' resolution of file's names (typeCheck)
	types     map[ast.Expr]types.TypeAndValue
}

// visit is the same walk as rewriteGo's, for subtrees it hands back.
func (r *rewriter) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.DeclStmt:
		r.registerLocal(n)
	case *ast.GoStmt:
		r.goStmt(n)
	case *ast.DeferStmt:
		r.deferStmt(n)
	case *ast.ForStmt:
		r.forStmt(n)
	case *ast.RangeStmt:
		r.rangeStmt(n)
	case *ast.CallExpr:
		r.concatSpread(n) // before binaryFuncArgs, which may wrap the same argument
		r.uniqueConst(n)
		r.untypedFloats(n)
		r.seqTypeArgs(n) // stdseq.go
		r.binaryFuncArgs(n)
		r.typeFor(n)
		r.inferTypeArgs(n)
		r.newExpr(n)
		if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "clear" && !r.env.userFunc["clear"] && len(n.Args) == 1 {
			r.edits = append(r.edits, edit{r.off(id.Pos()), len("clear"), "gnrt.Clear"})
		}
		if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "min" || id.Name == "max") && !r.env.userFunc[id.Name] {
			r.minMax(n, id.Name)
		}
	case *ast.SelectorExpr:
		if id, ok := n.X.(*ast.Ident); ok && id.Name == "os" && n.Sel.Name == "Stdin" {
			r.edits = append(r.edits, edit{r.off(n.Pos()), len("os.Stdin"), "gnrt.Stdin"})
		}
		r.genericStd(n)
		ast.Inspect(n.X, r.visit)
		return false
	case *ast.KeyValueExpr:
		ast.Inspect(n.Value, r.visit)
		if _, ok := n.Key.(*ast.Ident); !ok {
			ast.Inspect(n.Key, r.visit)
		}
		return false
	case *ast.Field:
		ast.Inspect(n.Type, r.visit)
		return false
	case *ast.Ident:
		r.renameMain(n)
	}
	return true
}

func (r *rewriter) off(p token.Pos) int { return r.fset.Position(p).Offset }
func (r *rewriter) text(n ast.Node) string {
	return r.full[r.off(n.Pos()):r.off(n.End())]
}

func (r *rewriter) renameMain(n ast.Node) bool {
	if id, ok := n.(*ast.Ident); ok && id.Name == "main" {
		r.edits = append(r.edits, edit{r.off(id.Pos()), len("main"), mainName})
	}
	return true
}

var goBuiltins = map[string]bool{"append": true, "cap": true, "clear": true, "close": true, "complex": true,
	"copy": true, "delete": true, "imag": true, "len": true, "make": true, "max": true, "min": true, "new": true,
	"panic": true, "print": true, "println": true, "real": true, "recover": true}

// loopClosures puts each statement inside a loop that makes a func literal whose closure
// outlives the statement's evaluation (a go statement's, an argument's, an assigned one's) in
// a call of its own: `use(func() {...})` becomes `func() { use(func() {...}) }()`. yaegi
// (v0.16.1, getFunc) keeps a literal's value in a slot of the frame that makes it and, whenever
// one of its closures returns, writes back the value the slot held when that closure was
// made. In a loop, a closure that returned between the making of the next one and its use (on
// another goroutine, or called meanwhile) replaced the new closure with the old one or with
// nil: a go statement started no goroutine, so a WaitGroup waited forever (TestPrograms'
// split/mutex_counter on a busy machine), and an argument arrived as nil (testdata
// closure_reentry). Inside the call, the slot is in that call's frame, which nothing else
// reads. Only expression statements, go statements and plain assignments are wrapped: they
// declare nothing and hold no return, break or continue outside their literals.
func (r *rewriter) loopClosures(f *ast.File) {
	escapes := func(st ast.Stmt) bool {
		found := false
		called := map[*ast.FuncLit]bool{} // literals called where they stand, in this goroutine
		if _, ok := st.(*ast.GoStmt); ok {
			return true // goStmt may make a literal of it: `go f()` is `gnrt.Go(func() { f() })`
		}
		ast.Inspect(st, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.CallExpr:
				if lit, ok := m.Fun.(*ast.FuncLit); ok {
					called[lit] = true
				}
			case *ast.FuncLit:
				if !called[m] {
					found = true
				}
				return false // its body runs in frames of its own
			}
			return !found
		})
		return found
	}
	var walk func(n ast.Node, inLoop bool)
	walk = func(n ast.Node, inLoop bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				if !inLoop && m != n {
					walk(m, true)
					return false
				}
			case *ast.ExprStmt, *ast.GoStmt, *ast.AssignStmt:
				if a, ok := m.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
					break
				}
				if inLoop && escapes(m.(ast.Stmt)) {
					// At the same offsets as other edits, the start goes before their text and
					// the end after it (applyEdits: of equal offsets, the later edit comes first).
					r.edits = append([]edit{{r.off(m.End()), 0, " }()"}}, r.edits...)
					r.edits = append(r.edits, edit{r.off(m.Pos()), 0, "func() { "})
				}
			case *ast.FuncLit:
				if m != n {
					walk(m.Body, false)
					return false
				}
			case *ast.FuncDecl:
				if m.Body != nil {
					walk(m.Body, false)
				}
				return false
			}
			return true
		})
	}
	walk(f, false)
}

// newExpr: Go 1.26's `new(expr)` (a pointer to a new variable holding expr) becomes
// `&[]T{expr}[0]` where the segment tells expr's type T, else `gnNew(expr)` (a generic, which
// yaegi cannot define a cell's variable from); yaegi took the expression for a type and
// pointed at a zero. A name is an expression when it names a variable.
func (r *rewriter) newExpr(n *ast.CallExpr) {
	id, ok := n.Fun.(*ast.Ident)
	if !ok || id.Name != "new" || len(n.Args) != 1 || r.env.decl != nil && r.env.decl("new") != "" {
		return
	}
	arg := n.Args[0]
	if a, isID := arg.(*ast.Ident); !isValueExpr(arg) && (!isID || !r.isVar(a)) {
		return
	}
	typ := ""
	switch a := ast.Unparen(arg).(type) {
	case *ast.BasicLit:
		typ = map[token.Token]string{token.INT: "int", token.FLOAT: "float64", token.IMAG: "complex128", token.CHAR: "rune", token.STRING: "string"}[a.Kind]
	case *ast.CompositeLit:
		if a.Type != nil && !strings.Contains(r.text(a.Type), "\n") {
			typ = r.text(a.Type)
		}
	case *ast.Ident:
		if a.Name == "true" || a.Name == "false" {
			typ = "bool"
		}
	}
	if typ == "" {
		r.typeCheck()
		if t := r.types[arg].Type; t != nil && t != types.Typ[types.Invalid] {
			typ = types.TypeString(types.Default(t), func(p *types.Package) string {
				if p.Path() == "p" {
					return ""
				}
				return p.Name()
			})
			if strings.Contains(typ, "invalid type") || strings.Contains(typ, "untyped") {
				typ = ""
			}
		}
	}
	if typ == "" {
		r.edits = append(r.edits, edit{r.off(id.Pos()), len("new"), "gnNew"})
		return
	}
	r.edits = append(r.edits, edit{r.off(id.Pos()), r.off(n.Lparen) + 1 - r.off(id.Pos()), "&[]" + typ + "{"},
		edit{r.off(n.Rparen), 1, "}[0]"})
}

// typeCheck resolves the names and types of the segment with go/types, once (imported
// packages are empty stand-ins, so what comes from them has no type).
func (r *rewriter) typeCheck() {
	if r.uses != nil {
		return
	}
	r.uses = map[*ast.Ident]types.Object{}
	r.types = map[ast.Expr]types.TypeAndValue{}
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			p := types.NewPackage(path, pkgName(path))
			p.MarkComplete()
			return p, nil
		}),
		Error: func(error) {},
	}
	_, _ = conf.Check("p", r.fset, []*ast.File{r.file}, &types.Info{Uses: r.uses, Types: r.types})
}

// isVar reports whether id names a variable: of the segment, as go/types resolves it, or of
// an earlier cell.
func (r *rewriter) isVar(id *ast.Ident) bool {
	r.typeCheck()
	if obj, ok := r.uses[id]; ok {
		_, v := obj.(*types.Var)
		return v
	}
	return r.env.vars[id.Name]
}

// isValueExpr reports whether e is certainly an expression, not a type.
func isValueExpr(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit, *ast.CompositeLit, *ast.BinaryExpr, *ast.UnaryExpr, *ast.CallExpr, *ast.FuncLit:
		return true
	case *ast.ParenExpr:
		return isValueExpr(e.X)
	case *ast.Ident:
		return e.Name == "true" || e.Name == "false"
	}
	return false
}

// goStmt: `go f(a, b)` -> `gnrt.Go(f, a, b)`; `go f(a, xs...)` -> `gnrt.GoSpread(f, a, xs)`.
// Calls of builtins and calls without arguments run in a closure, as before.
func (r *rewriter) goStmt(n *ast.GoStmt) {
	call := n.Call
	start, end := r.off(n.Go), r.off(call.End())
	id, isIdent := call.Fun.(*ast.Ident)
	_, generic := call.Fun.(*ast.IndexExpr)
	if lit, ok := call.Fun.(*ast.FuncLit); ok {
		// go func(...) {...}(...) stays a go statement (yaegi evaluates its arguments in place
		// and gives the closure the variables of its iteration; handed to compiled code as a
		// func value it would see the loop's last ones), with a recover at its top.
		// gnrt.GoAdmit counts it against the session's bound on goroutines (goguard.go);
		// gnrt.GoBegin records the cell it reports to (goorigin.go); gnrt.GoDone, compiled
		// and so run even when the goroutine is stopped, releases the count (deferred first:
		// a stop between the two must not lose it, gopending.go); the deferred
		// recover reports its panic.
		r.edits = append(r.edits, edit{start, 0, "gnrt.GoAdmit(); "},
			edit{r.off(lit.Body.Lbrace) + 1, 0, " defer gnrt.GoDone(); gnrt.GoBegin(); defer func() { gnrt.GoPanic(recover()) }();"})
		return
	}
	if len(call.Args) == 0 || (isIdent && goBuiltins[id.Name]) || generic {
		r.edits = append(r.edits, edit{start, r.off(call.Pos()) - start, "gnrt.Go(func() { "}, edit{end, 0, " })"})
		return
	}
	helper := "gnrt.Go("
	if call.Ellipsis.IsValid() {
		helper = "gnrt.GoSpread("
	}
	// Keep the function and argument text (and any newlines between them) in place.
	fun := r.off(call.Fun.Pos())
	r.edits = append(r.edits,
		edit{start, fun - start, helper},
		edit{r.off(call.Fun.End()), r.off(call.Lparen) + 1 - r.off(call.Fun.End()), ", "})
	if call.Ellipsis.IsValid() {
		r.edits = append(r.edits, edit{r.off(call.Ellipsis), 3, ""})
	}
	_ = end
}

// deferStmt hoists a deferred call's variable arguments into fresh variables, so that their
// values are taken at the defer statement: `defer f(x)` -> `{ gnD0 := x; defer f(gnD0) }`.
func (r *rewriter) deferStmt(n *ast.DeferStmt) {
	if r.cellDefer[n] {
		r.topDefer(n)
		return
	}
	var names, vals []string
	var edits []edit
	for _, a := range n.Call.Args {
		switch a.(type) {
		case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr, *ast.StarExpr:
		default:
			continue
		}
		if id, ok := a.(*ast.Ident); ok && (id.Name == "nil" || id.Name == "true" || id.Name == "false" || id.Name == "iota") {
			continue
		}
		if sel, ok := a.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && r.env.pkgs[id.Name] {
				continue // a package's constant or variable
			}
		}
		name := fmt.Sprintf("gnD%d", r.n)
		r.n++
		names = append(names, name)
		vals = append(vals, r.text(a))
		edits = append(edits, edit{r.off(a.Pos()), r.off(a.End()) - r.off(a.Pos()), name})
	}
	if len(names) == 0 || strings.Contains(strings.Join(vals, ""), "\n") {
		return
	}
	r.edits = append(r.edits, edit{r.off(n.Defer), 0, "{ " + strings.Join(names, ", ") + " := " + strings.Join(vals, ", ") + "; "})
	r.edits = append(r.edits, edits...)
	r.edits = append(r.edits, edit{r.off(n.End()), 0, " }"})
}

// captures reports whether body may keep a loop variable beyond its iteration: a closure or &.
func captures(body *ast.BlockStmt, names []string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			ast.Inspect(n.Body, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && hasName(names, id.Name) {
					found = true
				}
				return !found
			})
			return false
		case *ast.UnaryExpr:
			if id, ok := n.X.(*ast.Ident); ok && n.Op == token.AND && hasName(names, id.Name) {
				found = true
			}
		}
		return !found
	})
	return found
}

func hasName(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// assigns reports whether body assigns to one of names (then a copy would change the loop).
func assigns(body *ast.BlockStmt, names []string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && hasName(names, id.Name) {
						found = true
					}
				}
			}
		case *ast.IncDecStmt:
			if id, ok := n.X.(*ast.Ident); ok && hasName(names, id.Name) {
				found = true
			}
		}
		return !found
	})
	return found
}

func identNames(exprs ...ast.Expr) []string {
	var out []string
	for _, e := range exprs {
		if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
			out = append(out, id.Name)
		}
	}
	return out
}

// copyVars gives each iteration of loop its own copy of names. At a cell's top level the
// loop runs in a func literal, where yaegi scopes the copies correctly.
func (r *rewriter) copyVars(loop ast.Stmt, body *ast.BlockStmt, names []string) {
	for _, st := range body.List {
		if a, ok := st.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
			for _, l := range a.Lhs {
				if id, ok := l.(*ast.Ident); ok && hasName(names, id.Name) {
					return // the body copies them itself (i := i)
				}
			}
		}
	}
	r.edits = append(r.edits, edit{r.off(body.Lbrace) + 1, 0, " " + strings.Join(names, ", ") + " := " + strings.Join(names, ", ") + ";"})
	if st, ok := r.top[loop]; ok {
		r.edits = append(r.edits, edit{r.off(st.Pos()), 0, "(func() { "}, edit{r.off(st.End()), 0, " })()"})
	}
}

func (r *rewriter) forStmt(n *ast.ForStmt) {
	init, ok := n.Init.(*ast.AssignStmt)
	if !ok || init.Tok != token.DEFINE {
		return
	}
	names := identNames(init.Lhs...)
	if len(names) > 0 && captures(n.Body, names) && !assigns(n.Body, names) {
		r.copyVars(n, n.Body, names)
	}
}

func (r *rewriter) rangeStmt(n *ast.RangeStmt) {
	var names []string
	if n.Tok == token.DEFINE {
		names = identNames(n.Key, n.Value)
	}
	if n.Value == nil && (n.Key == nil || n.Tok == token.DEFINE) && r.isInt(n.X) {
		// for i := range N  ->  for i, gnN := N-N, N; i < gnN; i++ { i := i; ... }
		k := fmt.Sprintf("gnK%d", r.n)
		if len(names) == 1 {
			k = names[0]
		}
		lim := fmt.Sprintf("gnN%d", r.n)
		r.n++
		x := "(" + r.text(n.X) + ")"
		head := fmt.Sprintf("for %s, %s := %s-%s, %s; %s < %s; %s++ ", k, lim, x, x, x, k, lim, k)
		start, lb := r.off(n.For), r.off(n.Body.Lbrace)
		head += strings.Repeat("\n", strings.Count(r.full[start:lb], "\n"))
		r.edits = append(r.edits, edit{start, lb - start, head})
		// The copy also keeps the count safe from assignments in the body, as in Go.
		if len(names) == 1 && (captures(n.Body, names) || assigns(n.Body, names)) {
			r.copyVars(n, n.Body, names)
		}
		return
	}
	if r.rangeBackward(n, names) {
		r.consume(n.X)
		return
	}
	if r.rangeStdSeq(n) {
		r.consume(n.X)
	} else if n.Tok != token.ASSIGN && r.rangeFunc(n) {
		return
	}
	if len(names) > 0 && captures(n.Body, names) && !assigns(n.Body, names) {
		r.copyVars(n, n.Body, names)
	}
}

// rangeFunc rewrites a range over a function (Go 1.23), when the function's declaration in
// the cell or an earlier one gives its yield's parameter types:
// `for k, v := range seq { body }` -> `seq(func(k K, v V) bool { body; return true })`, with
// continue as `return true` and break as `return false`. Bodies that return, jump to labels or
// defer stay as written (and yaegi's error is explained).
func (r *rewriter) rangeFunc(n *ast.RangeStmt) bool {
	types := r.yieldTypes(n.X)
	if types == nil || len(types) < countNonNil(n.Key, n.Value) {
		return false
	}
	var edits []edit
	ok := true
	var walk func(node ast.Node, inLoop, inSwitch bool)
	walk = func(node ast.Node, inLoop, inSwitch bool) {
		ast.Inspect(node, func(m ast.Node) bool {
			if !ok || m == nil || m == node {
				return ok
			}
			switch m := m.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt, *ast.DeferStmt, *ast.LabeledStmt:
				ok = false
			case *ast.ForStmt, *ast.RangeStmt:
				walk(m, true, inSwitch)
				return false
			case *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				walk(m, inLoop, true)
				return false
			case *ast.BranchStmt:
				switch {
				case m.Label != nil || m.Tok == token.GOTO || m.Tok == token.FALLTHROUGH && false:
					ok = m.Tok == token.FALLTHROUGH
				case m.Tok == token.CONTINUE && !inLoop:
					edits = append(edits, edit{r.off(m.Pos()), len("continue"), "return true"})
				case m.Tok == token.BREAK && !inLoop && !inSwitch:
					edits = append(edits, edit{r.off(m.Pos()), len("break"), "return false"})
				}
			}
			return ok
		})
	}
	walk(n.Body, false, false)
	if !ok {
		return false
	}
	params := make([]string, len(types))
	for i, t := range types {
		name := "_"
		if i == 0 && n.Key != nil {
			name = r.text(n.Key)
		}
		if i == 1 && n.Value != nil {
			name = r.text(n.Value)
		}
		params[i] = name + " " + t
	}
	start, lb := r.off(n.For), r.off(n.Body.Lbrace)
	head := r.text(n.X) + "(func(" + strings.Join(params, ", ") + ") bool "
	head += strings.Repeat("\n", strings.Count(r.full[start:lb], "\n"))
	r.edits = append(r.edits, edit{start, lb - start, head})
	r.edits = append(r.edits, edits...)
	r.edits = append(r.edits, edit{r.off(n.Body.Rbrace), 0, "; return true; "}, edit{r.off(n.Body.Rbrace) + 1, 0, ")"})
	return true
}

func countNonNil(es ...ast.Expr) int {
	n := 0
	for _, e := range es {
		if e != nil {
			n++
		}
	}
	return n
}

// yieldTypes returns the parameter types of the yield func that x (a func declared in a cell,
// or a call of one that returns an iterator) passes values to; nil when it cannot tell.
func (r *rewriter) yieldTypes(x ast.Expr) []string {
	var name string
	call := false
	switch x := x.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
			if types := r.binaryYieldTypes(sel); types != nil {
				return types
			}
			return r.methodYieldTypes(sel)
		}
		id, ok := x.Fun.(*ast.Ident)
		if !ok {
			return nil
		}
		name, call = id.Name, true
	default:
		return nil
	}
	fd, src := r.funcDecl(name)
	if fd == nil {
		return nil
	}
	text := func(n ast.Node) string { return src[int(n.Pos())-1 : int(n.End())-1] }
	yieldOf := func(t ast.Expr) []string { return yieldTypes(t, text) }
	if !call {
		return yieldOf(fd.Type)
	}
	return resultYieldTypes(fd, text, yieldOf)
}

// resultYieldTypes returns the yield parameter types of the iterator fd returns (a func
// type, iter.Seq[V] or iter.Seq2[K, V]).
func resultYieldTypes(fd *ast.FuncDecl, text func(ast.Node) string, yieldOf func(ast.Expr) []string) []string {
	if fd.Type.Results == nil || len(fd.Type.Results.List) != 1 {
		return nil
	}
	switch t := fd.Type.Results.List[0].Type.(type) {
	case *ast.FuncType:
		return yieldOf(t)
	case *ast.IndexExpr:
		if sel, ok := t.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Seq" {
			return []string{text(t.Index)}
		}
	case *ast.IndexListExpr:
		if sel, ok := t.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Seq2" && len(t.Indices) == 2 {
			return []string{text(t.Indices[0]), text(t.Indices[1])}
		}
	}
	return nil
}

// methodYieldTypes is yieldTypes for `for v := range x.All()`: the method declared in this
// segment, on a generic type whose type arguments the segment shows where it defines x
// (x := List[int]{}, x := &List[int]{}, var x List[int]).
func (r *rewriter) methodYieldTypes(sel *ast.SelectorExpr) []string {
	recvName, ok := sel.X.(*ast.Ident)
	if !ok {
		return nil
	}
	var fd *ast.FuncDecl
	text := r.text
	find := func(f *ast.File) {
		for _, d := range f.Decls {
			if f, ok := d.(*ast.FuncDecl); ok && f.Recv != nil && f.Name.Name == sel.Sel.Name {
				if fd != nil {
					fd = nil // several types have it
					return
				}
				fd = f
			}
		}
	}
	find(r.file)
	if fd == nil && r.env.method != nil {
		// Declared in an earlier cell.
		if src := r.env.method(sel.Sel.Name); src != "" {
			full := "package p;" + src
			if f, err := parser.ParseFile(token.NewFileSet(), "", full, parser.SkipObjectResolution); err == nil {
				find(f)
				text = func(n ast.Node) string { return full[int(n.Pos())-1 : int(n.End())-1] }
			}
		}
	}
	if fd == nil || len(fd.Recv.List) != 1 {
		return nil
	}
	rt := fd.Recv.List[0].Type
	if st, ok := rt.(*ast.StarExpr); ok {
		rt = st.X
	}
	var params []string
	var typeName string
	switch t := rt.(type) {
	case *ast.Ident:
		typeName = t.Name
	case *ast.IndexExpr:
		typeName = identName(t.X)
		params = []string{identName(t.Index)}
	case *ast.IndexListExpr:
		typeName = identName(t.X)
		for _, i := range t.Indices {
			params = append(params, identName(i))
		}
	}
	yieldOf := func(t ast.Expr) []string { return yieldTypes(t, text) }
	types := resultYieldTypes(fd, text, yieldOf)
	if types == nil || len(params) == 0 {
		return types
	}
	args := r.typeArgsOf(recvName.Name, typeName)
	if len(args) != len(params) {
		return nil
	}
	for i, t := range types {
		for j, p := range params {
			t = regexp.MustCompile(`\b`+regexp.QuoteMeta(p)+`\b`).ReplaceAllString(t, args[j])
		}
		types[i] = t
	}
	return types
}

func identName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// typeArgsOf finds where the segment, or else an earlier cell, defines variable name as a
// typeName[...] value and returns the type arguments' source.
func (r *rewriter) typeArgsOf(name, typeName string) []string {
	if out := typeArgsIn(r.file, r.text, name, typeName); out != nil || r.env.varDef == nil {
		return out
	}
	src := r.env.varDef(name)
	if src == "" {
		return nil
	}
	full := wrapPrefix(segStmt) + src + "\n}"
	f, err := parser.ParseFile(token.NewFileSet(), "", full, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	return typeArgsIn(f, func(n ast.Node) string { return full[int(n.Pos())-1 : int(n.End())-1] }, name, typeName)
}

// typeArgsIn is typeArgsOf within root, whose source text gives.
func typeArgsIn(root ast.Node, text func(ast.Node) string, name, typeName string) []string {
	var out []string
	fromType := func(t ast.Expr) bool {
		switch t := t.(type) {
		case *ast.IndexExpr:
			if identName(t.X) == typeName {
				out = []string{text(t.Index)}
				return true
			}
		case *ast.IndexListExpr:
			if identName(t.X) == typeName {
				out = nil
				for _, i := range t.Indices {
					out = append(out, text(i))
				}
				return true
			}
		}
		return false
	}
	fromValue := func(v ast.Expr) bool {
		if u, ok := v.(*ast.UnaryExpr); ok && u.Op == token.AND {
			v = u.X
		}
		if cl, ok := v.(*ast.CompositeLit); ok {
			return fromType(cl.Type)
		}
		return false
	}
	ast.Inspect(root, func(n ast.Node) bool {
		if out != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE && len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if identName(l) == name && fromValue(n.Rhs[i]) {
						return false
					}
				}
			}
		case *ast.ValueSpec:
			for i, nm := range n.Names {
				if nm.Name != name {
					continue
				}
				if n.Type != nil && fromType(n.Type) {
					return false
				}
				if i < len(n.Values) && fromValue(n.Values[i]) {
					return false
				}
			}
		}
		return true
	})
	return out
}

// funcDecl finds the declaration of func name in this segment or an earlier cell, with the
// source its positions index (Pos 1 is the source's first byte).
func (r *rewriter) funcDecl(name string) (*ast.FuncDecl, string) {
	find := func(f *ast.File) *ast.FuncDecl {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
				return fd
			}
		}
		return nil
	}
	if fd := find(r.file); fd != nil {
		return fd, r.full
	}
	if r.env.decl == nil {
		return nil, ""
	}
	src := r.env.decl(name)
	if src == "" {
		return nil, ""
	}
	full := "package p;" + src
	f, err := parser.ParseFile(token.NewFileSet(), "", full, parser.SkipObjectResolution)
	if err != nil {
		return nil, ""
	}
	return find(f), full
}

// isInt reports whether e surely is an integer, from its form and the names known to hold ints.
func (r *rewriter) isInt(e ast.Expr) bool { return isIntExpr(e, r.ints) }

func isIntExpr(e ast.Expr, ints map[string]bool) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.INT
	case *ast.ParenExpr:
		return isIntExpr(e.X, ints)
	case *ast.Ident:
		return ints[e.Name]
	case *ast.UnaryExpr:
		return e.Op != token.ARROW && isIntExpr(e.X, ints)
	case *ast.BinaryExpr:
		switch e.Op {
		case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.SHL, token.SHR, token.AND, token.OR, token.XOR, token.AND_NOT:
			if isStringy(e.X) || isStringy(e.Y) {
				return false
			}
			return (isIntExpr(e.X, ints) && sideFree(e.Y)) || (isIntExpr(e.Y, ints) && sideFree(e.X))
		}
	case *ast.CallExpr:
		id, ok := e.Fun.(*ast.Ident)
		if !ok || len(e.Args) != 1 || !sideFree(e.Args[0]) {
			return false
		}
		switch id.Name {
		case "len", "cap", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr":
			return true
		}
	}
	return false
}

func isStringy(e ast.Expr) bool {
	b, ok := e.(*ast.BasicLit)
	return ok && (b.Kind == token.STRING || b.Kind == token.CHAR || b.Kind == token.FLOAT)
}

// sideFree reports whether evaluating e twice is the same as once.
func sideFree(e ast.Expr) bool {
	ok := true
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if id, isID := n.Fun.(*ast.Ident); !isID || !(id.Name == "len" || id.Name == "cap" || strings.HasPrefix(id.Name, "int") || strings.HasPrefix(id.Name, "uint")) {
				ok = false
			}
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				ok = false
			}
		case *ast.FuncLit:
			ok = false
		}
		return ok
	})
	return ok
}

var intTypes = map[string]bool{"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true, "byte": true, "rune": true}

// intNames finds the names that a file binds to integers, added to known. A name also bound to
// something else is left out: the pass has no scopes, so it stays on the safe side.
func intNames(f *ast.File, known map[string]bool) map[string]bool {
	ints := map[string]bool{}
	for k, v := range known {
		ints[k] = v
	}
	other := map[string]bool{}
	bind := func(name string, isInt bool) {
		if name == "_" {
			return
		}
		if isInt && !other[name] {
			ints[name] = true
		} else {
			other[name] = true
			delete(ints, name)
		}
	}
	for pass := 0; pass < 2; pass++ {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE && len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							bind(id.Name, isIntExpr(n.Rhs[i], ints))
						}
					}
				} else if n.Tok == token.DEFINE {
					for _, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							bind(id.Name, false)
						}
					}
				}
			case *ast.GenDecl:
				iota := false
				for _, sp := range n.Specs {
					vs, ok := sp.(*ast.ValueSpec)
					if !ok {
						continue
					}
					typed := false
					if id, ok := vs.Type.(*ast.Ident); ok {
						typed = intTypes[id.Name]
					}
					if n.Tok == token.CONST && len(vs.Values) > 0 {
						iota = false
						ast.Inspect(vs.Values[0], func(m ast.Node) bool {
							if id, ok := m.(*ast.Ident); ok && id.Name == "iota" {
								iota = true
							}
							return true
						})
					}
					for i, nm := range vs.Names {
						switch {
						case vs.Type != nil:
							bind(nm.Name, typed)
						case i < len(vs.Values):
							bind(nm.Name, isIntExpr(vs.Values[i], ints) || (n.Tok == token.CONST && iota))
						default:
							bind(nm.Name, n.Tok == token.CONST && iota)
						}
					}
				}
			case *ast.Field:
				id, ok := n.Type.(*ast.Ident)
				for _, nm := range n.Names {
					bind(nm.Name, ok && intTypes[id.Name])
				}
			case *ast.RangeStmt:
				if n.Tok == token.DEFINE {
					if id, ok := n.Key.(*ast.Ident); ok {
						bind(id.Name, isIntExpr(n.X, ints))
					}
					if id, ok := n.Value.(*ast.Ident); ok {
						bind(id.Name, false)
					}
				}
			}
			return true
		})
	}
	return ints
}

// topCommaOK rewrites comma-ok forms that sit at a cell's top level, where yaegi v0.16.1 stops
// with "nil type": `v, ok := m[k]` -> `v := m[k]; ok := gnrt.HasKey(m, k)` and
// `v, ok := x.(T)` -> `v := *new(T); ok := false; v, ok = x.(T)`.
//
// `y := max(x, 10)` at the top level (a generic call, which yaegi cannot define there either)
// becomes `y := x; y = max(x, 10)`.
func (r *rewriter) topCommaOK(st ast.Stmt) {
	a, ok := st.(*ast.AssignStmt)
	if ok && a.Tok == token.DEFINE && len(a.Lhs) == 1 && len(a.Rhs) == 1 {
		r.topMinMax(a)
		return
	}
	if !ok || a.Tok != token.DEFINE || len(a.Lhs) != 2 || len(a.Rhs) != 1 {
		return
	}
	v, ok1 := a.Lhs[0].(*ast.Ident)
	okv, ok2 := a.Lhs[1].(*ast.Ident)
	if !ok1 || !ok2 {
		return
	}
	var out []string
	switch x := a.Rhs[0].(type) {
	case *ast.IndexExpr:
		if !sideFree(x.X) || !sideFree(x.Index) {
			return
		}
		if v.Name != "_" {
			out = append(out, fmt.Sprintf("%s := %s", v.Name, r.text(x)))
		}
		if okv.Name != "_" {
			out = append(out, fmt.Sprintf("%s := gnrt.HasKey(%s, %s)", okv.Name, r.text(x.X), r.text(x.Index)))
		}
	case *ast.TypeAssertExpr:
		if x.Type == nil {
			return
		}
		if v.Name != "_" {
			out = append(out, fmt.Sprintf("%s := *new(%s)", v.Name, r.text(x.Type)))
		}
		if okv.Name != "_" {
			out = append(out, okv.Name+" := false")
		}
		out = append(out, fmt.Sprintf("%s, %s = %s", v.Name, okv.Name, r.text(x)))
	default:
		return
	}
	if len(out) == 0 {
		out = []string{"_ = " + r.text(a.Rhs[0])}
	}
	text := strings.Join(out, "; ")
	text += strings.Repeat("\n", strings.Count(r.text(a), "\n"))
	r.edits = append(r.edits, edit{r.off(a.Pos()), r.off(a.End()) - r.off(a.Pos()), text})
}

func (r *rewriter) topMinMax(a *ast.AssignStmt) {
	call, ok := a.Rhs[0].(*ast.CallExpr)
	if !ok {
		return
	}
	id, ok := call.Fun.(*ast.Ident)
	if !ok || (id.Name != "min" && id.Name != "max") || r.env.userFunc[id.Name] || call.Ellipsis.IsValid() {
		return
	}
	var first ast.Expr
	for _, x := range call.Args {
		if constOf(x) == nil {
			first = x
			break
		}
	}
	if first == nil || !sideFree(first) || strings.Contains(r.text(first), "\n") {
		return // all constants are folded; a call is not evaluated twice
	}
	r.edits = append(r.edits, edit{r.off(a.TokPos), len(":="), ":= " + r.text(first) + "; " + r.text(a.Lhs[0]) + " ="})
}

// minMax folds min and max of constants (the declared generic ones cannot take mixed untyped
// constants) and moves constant arguments after typed ones, so that inference sees a typed one
// first.
func (r *rewriter) minMax(n *ast.CallExpr, name string) {
	if len(n.Args) == 0 || n.Ellipsis.IsValid() {
		return
	}
	var consts []constant.Value
	allConst := true
	for _, a := range n.Args {
		c := constOf(a)
		if c == nil {
			allConst = false
			break
		}
		consts = append(consts, c)
	}
	if allConst {
		best := consts[0]
		for _, c := range consts[1:] {
			if (name == "min" && constant.Compare(c, token.LSS, best)) || (name == "max" && constant.Compare(c, token.GTR, best)) {
				best = c
			}
		}
		r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()), "(" + constLiteral(best) + ")"})
		return
	}
	if constOf(n.Args[0]) == nil {
		return
	}
	// Reorder: typed arguments first (min and max do not depend on the order, NaN aside).
	var typed, lits []string
	for _, a := range n.Args {
		if constOf(a) != nil {
			lits = append(lits, r.text(a))
		} else {
			typed = append(typed, r.text(a))
		}
	}
	args := strings.Join(append(typed, lits...), ", ")
	if strings.Contains(args, "\n") {
		return
	}
	r.edits = append(r.edits, edit{r.off(n.Lparen) + 1, r.off(n.Rparen) - r.off(n.Lparen) - 1, args})
}

// constLiteral writes a constant back as a literal of its kind (1.0 stays a float).
func constLiteral(c constant.Value) string {
	switch c.Kind() {
	case constant.String:
		return strconv.Quote(constant.StringVal(c))
	case constant.Float:
		f, _ := constant.Float64Val(c)
		lit := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(lit, ".eEn") {
			lit += ".0"
		}
		return lit
	}
	return c.ExactString()
}

func constOf(e ast.Expr) constant.Value {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.INT || e.Kind == token.FLOAT || e.Kind == token.STRING {
			return constant.MakeFromLiteral(e.Value, e.Kind, 0)
		}
	case *ast.ParenExpr:
		return constOf(e.X)
	case *ast.UnaryExpr:
		if c := constOf(e.X); c != nil && (e.Op == token.SUB || e.Op == token.ADD) {
			return constant.UnaryOp(e.Op, c, 0)
		}
	}
	return nil
}

// preludeSrc declares what yaegi lacks of Go 1.21's builtins (user declarations replace them),
// and generic standard library names that yaegi's extract skips, which the rewriting pass
// renames to: errors.AsType (Go 1.26) and sync/atomic's Pointer[T] (a mutex, not atomic
// instructions: interpreted code cannot reach them for a generic type).
const preludeSrc = `type gnOrdered interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr | ~float32 | ~float64 | ~string
}

func min[T gnOrdered](x T, ys ...T) T {
	for _, y := range ys {
		if y < x || y != y {
			x = y
		}
	}
	return x
}

func max[T gnOrdered](x T, ys ...T) T {
	for _, y := range ys {
		if y > x || y != y {
			x = y
		}
	}
	return x
}

func gnNew[T any](v T) *T { return &v }

func gnRandN[T any](n T) T { return gnrt.RandN(n).(T) }

type gnUniqueHandle[T any] struct{ p any }

func (h gnUniqueHandle[T]) Value() T { return gnrt.Interned(h.p).(T) }

func gnUniqueMake[T any](v T) gnUniqueHandle[T] { return gnUniqueHandle[T]{gnrt.Intern(v)} }


func gnAddCleanup[T, S any](ptr *T, cleanup func(S), arg S) gnrt.Cleanup {
	return gnrt.AddCleanup(ptr, func(a any) { cleanup(a.(S)) }, arg)
}

func gnAsType[E any](err error) (E, bool) {
	var e E
	ok := gnrt.ErrorsAs(err, &e)
	return e, ok
}

type gnAtomicPointer[T any] struct {
	mu gnrt.Mutex
	v  *T
}

func (p *gnAtomicPointer[T]) Load() *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.v
}

func (p *gnAtomicPointer[T]) Store(v *T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.v = v
}

func (p *gnAtomicPointer[T]) Swap(v *T) *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.v
	p.v = v
	return old
}

func (p *gnAtomicPointer[T]) CompareAndSwap(old, v *T) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.v != old {
		return false
	}
	p.v = v
	return true
}`

// typeFor writes reflect.TypeFor[T]() (Go 1.22) as reflect.TypeOf((*T)(nil)).Elem(), its
// definition: the generic call crashed yaegi's compiler for most T.
func (r *rewriter) typeFor(n *ast.CallExpr) {
	ix, ok := n.Fun.(*ast.IndexExpr)
	if !ok || len(n.Args) != 0 {
		return
	}
	sel, ok := ix.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "TypeFor" {
		return
	}
	if id, ok := sel.X.(*ast.Ident); !ok || r.env.pkgPath(id.Name) != "reflect" {
		return
	}
	r.consume(n)
	r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()),
		r.text(sel.X) + ".TypeOf((*" + r.text(ix.Index) + ")(nil)).Elem()"})
}

// genericStdNames are the prelude's versions of generic standard library functions.
var genericStdNames = map[string]string{"runtime.AddCleanup": "gnAddCleanup"}

// genericStd renames errors.AsType, atomic.Pointer, sync.OnceValue(s), math/rand/v2's N and
// unique's Make and Handle to the prelude's generic versions.
func (r *rewriter) genericStd(n *ast.SelectorExpr) {
	id, ok := n.X.(*ast.Ident)
	if !ok || !r.env.pkgs[id.Name] {
		return
	}
	switch {
	case id.Name == "errors" && n.Sel.Name == "AsType":
		r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()), "gnAsType"})
	case id.Name == "atomic" && n.Sel.Name == "Pointer":
		r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()), "gnAtomicPointer"})
	case id.Name == "runtime" && n.Sel.Name == "AddCleanup" && r.env.pkgPath("runtime") == "runtime":
		r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()), genericStdNames[id.Name+"."+n.Sel.Name]})
	case (n.Sel.Name == "Make" || n.Sel.Name == "Handle") && r.env.pkgPath(id.Name) == "unique":
		r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()), "gnUnique" + n.Sel.Name})
	case n.Sel.Name == "N" && r.env.pkgPath(id.Name) == "math/rand/v2":
		r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()), "gnRandN"})
	case id.Name == "sync" && (n.Sel.Name == "OnceValue" || n.Sel.Name == "OnceValues"):
		r.edits = append(r.edits, edit{r.off(n.Pos()), r.off(n.End()) - r.off(n.Pos()), "gn" + n.Sel.Name}) // stdseq.go
	}
}

// uniqueConst gives an untyped constant argument of unique.Make its default type
// (unique.Make("gpu") -> unique.Make(string("gpu"))): yaegi instantiated the prelude's
// generic with "untyped string" for it.
func (r *rewriter) uniqueConst(n *ast.CallExpr) {
	sel, ok := n.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Make" || len(n.Args) != 1 {
		return
	}
	if id, ok := sel.X.(*ast.Ident); !ok || r.env.pkgPath(id.Name) != "unique" {
		return
	}
	if t := untypedKind(n.Args[0]); t != "" {
		a := n.Args[0]
		r.edits = append(r.edits, edit{r.off(a.Pos()), 0, t + "("}, edit{r.off(a.End()), 0, ")"})
	}
}

// untypedKind is the default type of an untyped constant expression made of literals ("" for
// anything else).
func untypedKind(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		return map[token.Token]string{token.INT: "int", token.FLOAT: "float64", token.STRING: "string", token.CHAR: "rune", token.IMAG: "complex128"}[e.Kind]
	case *ast.ParenExpr:
		return untypedKind(e.X)
	case *ast.UnaryExpr:
		return untypedKind(e.X)
	case *ast.BinaryExpr:
		x, y := untypedKind(e.X), untypedKind(e.Y)
		if x == "" || y == "" {
			return ""
		}
		rank := map[string]int{"int": 1, "rune": 2, "float64": 3, "complex128": 4, "string": 5}
		if rank[y] > rank[x] {
			return y
		}
		return x
	}
	return ""
}

// concatSpread rewrites slices.Concat(parts...), one spread argument, into
// slices.ConcatSpread(parts) (gostd/slices.go.txt): yaegi's compiler crashed on the spread
// into the variadic parameter of the slices source's Concat.
func (r *rewriter) concatSpread(n *ast.CallExpr) {
	sel, ok := n.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Concat" || !n.Ellipsis.IsValid() || len(n.Args) != 1 {
		return
	}
	if id, ok := sel.X.(*ast.Ident); !ok || r.env.pkgPath(id.Name) != "slices" {
		return
	}
	r.edits = append(r.edits, edit{r.off(sel.Sel.End()), 0, "Spread"}, edit{r.off(n.Ellipsis), len("..."), ""})
}

// rangeStdSeq rewrites a range over the standard iterators of a slice or map into the range
// over the slice or map itself, which is what they yield, in the same order (yaegi cannot
// range over a function, and these iterators' types depend on their argument's):
// `for v := range slices.Values(s)` -> `for _, v := range (s)`, and likewise slices.All,
// maps.Keys, maps.Values and maps.All.
func (r *rewriter) rangeStdSeq(n *ast.RangeStmt) bool {
	call, ok := n.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 || call.Ellipsis.IsValid() {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || !r.env.pkgs[pkg.Name] {
		return false
	}
	valueOnly := false // the iterator yields the values: its one variable is range's second
	switch pkg.Name + "." + sel.Sel.Name {
	case "slices.Values", "maps.Values":
		valueOnly = true
	case "slices.All", "maps.Keys", "maps.All":
	default:
		return false
	}
	arg := "(" + r.text(call.Args[0]) + ")"
	if !valueOnly || n.Key == nil {
		r.edits = append(r.edits, edit{r.off(n.X.Pos()), r.off(n.X.End()) - r.off(n.X.Pos()), arg})
		return true
	}
	tok := ":="
	if n.Tok == token.ASSIGN {
		tok = "="
	}
	r.edits = append(r.edits, edit{r.off(n.Key.Pos()), r.off(n.X.End()) - r.off(n.Key.Pos()), "_, " + r.text(n.Key) + " " + tok + " range " + arg})
	return true
}

// rangeChunk rewrites `for c := range slices.Chunk(s, n) {` (Go 1.23) into a loop over the
// slice in steps of n, each c a full slice expression of at most n elements, as Chunk yields.
func (r *rewriter) rangeChunk(n *ast.RangeStmt, call *ast.CallExpr) bool {
	if n.Value != nil {
		return false // Chunk's iterator yields one value
	}
	k := r.n
	r.n++
	s, step, i, e := fmt.Sprintf("gnS%d", k), fmt.Sprintf("gnN%d", k), fmt.Sprintf("gnC%d", k), fmt.Sprintf("gnE%d", k)
	head := fmt.Sprintf("{ %s := %s; %s := %s; if %s < 1 { panic(\"cannot be less than 1\") }; for %s := 0; %s < len(%s); %s += %s ",
		s, r.text(call.Args[0]), step, r.text(call.Args[1]), step, i, i, s, i, step)
	start, lb := r.off(n.For), r.off(n.Body.Lbrace)
	head += strings.Repeat("\n", strings.Count(r.full[start:lb], "\n"))
	r.edits = append(r.edits, edit{start, lb - start, head})
	body := fmt.Sprintf(" %s := %s + %s; if %s > len(%s) { %s = len(%s) };", e, i, step, e, s, e, s)
	if n.Key != nil && (n.Tok == token.DEFINE || n.Tok == token.ASSIGN) {
		body += fmt.Sprintf(" %s %s %s[%s:%s:%s];", r.text(n.Key), n.Tok, s, i, e, e)
	}
	r.edits = append(r.edits, edit{lb + 1, 0, body})
	if st, ok := r.top[n]; ok {
		r.edits = append(r.edits, edit{r.off(st.Pos()), 0, "(func() { "}, edit{r.off(st.End()), 0, " })()"})
	}
	r.edits = append(r.edits, edit{r.off(n.Body.Rbrace) + 1, 0, " }"})
	return true
}

// onceVarTypes writes out the type of a package-level `var w = sync.OnceValue(f)` (and
// OnceValues), func() T from f's result types: yaegi crashed compiling a generic call in an
// untyped package-level var ("reflect.Type is nil"), while `var w func() T = ...` works.
func (r *rewriter) onceVarTypes(f *ast.File) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if vs.Type != nil || len(vs.Values) == 0 || len(vs.Values) != len(vs.Names) {
				continue
			}
			typ := ""
			for k, v := range vs.Values {
				t := r.onceType(v)
				if t == "" || k > 0 && t != typ {
					typ = ""
					break
				}
				typ = t
			}
			if typ != "" {
				r.edits = append(r.edits, edit{r.off(vs.Names[len(vs.Names)-1].End()), 0, " " + typ})
			}
		}
	}
}

// onceType is the type of sync.OnceValue(f) or sync.OnceValues(f), from f's results when f is
// a func literal or a func declared in a cell; "" when e is no such call or f's types are not
// written out.
func (r *rewriter) onceType(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "OnceValue" && sel.Sel.Name != "OnceValues" {
		return ""
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "sync" || !r.env.pkgs["sync"] {
		return ""
	}
	var ft *ast.FuncType
	text := r.text
	switch a := call.Args[0].(type) {
	case *ast.FuncLit:
		ft = a.Type
	case *ast.Ident:
		fd, src := r.funcDecl(a.Name)
		if fd == nil || fd.Type.TypeParams != nil {
			return ""
		}
		ft = fd.Type
		text = func(n ast.Node) string { return src[int(n.Pos())-1 : int(n.End())-1] }
	default:
		return ""
	}
	var res []string
	if ft.Results != nil {
		for _, fl := range ft.Results.List {
			for range max(1, len(fl.Names)) {
				res = append(res, text(fl.Type))
			}
		}
	}
	want := 1
	if sel.Sel.Name == "OnceValues" {
		want = 2
	}
	if len(res) != want {
		return ""
	}
	if want == 1 {
		return "func() " + res[0]
	}
	return "func() (" + strings.Join(res, ", ") + ")"
}

// consume marks a range expression that a rewrite replaced, so that no edit goes inside it.
func (r *rewriter) consume(x ast.Expr) {
	if r.consumed == nil {
		r.consumed = map[ast.Expr]bool{}
	}
	r.consumed[x] = true
}

// rangeBackward rewrites a range over slices.Backward(s) (Go 1.23) into a counting loop down
// the slice, which is what the iterator yields: `for i, v := range slices.Backward(s) {` ->
// `for gnB0 := len(s) - 1; gnB0 >= 0; gnB0-- { i, v := gnB0, s[gnB0];`. The variables are
// the iteration's own, as range's are; a slice expression that is not free of side effects is
// evaluated once, before the loop.
func (r *rewriter) rangeBackward(n *ast.RangeStmt, names []string) bool {
	call, ok := n.X.(*ast.CallExpr)
	if !ok || call.Ellipsis.IsValid() {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "slices" || !r.env.pkgs["slices"] {
		return false
	}
	if sel.Sel.Name == "Chunk" && len(call.Args) == 2 {
		return r.rangeChunk(n, call)
	}
	if sel.Sel.Name != "Backward" || len(call.Args) != 1 {
		return false
	}
	idx := fmt.Sprintf("gnB%d", r.n)
	s := "(" + r.text(call.Args[0]) + ")"
	open, closing := "", ""
	if !sideFree(call.Args[0]) {
		open = fmt.Sprintf("{ gnS%d := %s; ", r.n, s)
		closing = " }"
		s = fmt.Sprintf("gnS%d", r.n)
	}
	r.n++
	var lhs, rhs []string
	if n.Key != nil {
		lhs, rhs = append(lhs, r.text(n.Key)), append(rhs, idx)
	}
	if n.Value != nil {
		if n.Key == nil {
			lhs, rhs = append(lhs, "_"), append(rhs, idx)
		}
		lhs, rhs = append(lhs, r.text(n.Value)), append(rhs, s+"["+idx+"]")
	}
	start, lb := r.off(n.For), r.off(n.Body.Lbrace)
	head := open + fmt.Sprintf("for %s := len(%s) - 1; %s >= 0; %s-- ", idx, s, idx, idx)
	head += strings.Repeat("\n", strings.Count(r.full[start:lb], "\n"))
	r.edits = append(r.edits, edit{start, lb - start, head})
	if len(lhs) > 0 && (n.Tok == token.DEFINE || n.Tok == token.ASSIGN) {
		r.edits = append(r.edits, edit{lb + 1, 0, " " + strings.Join(lhs, ", ") + " " + n.Tok.String() + " " + strings.Join(rhs, ", ") + ";"})
	}
	// At a cell's top level yaegi keeps the loop's variables global: closures that keep them
	// need the loop in a func of its own. (Of the edits at one offset, the later one lands
	// first in the text.)
	st, top := r.top[n]
	wrap := top && (closing != "" || len(names) > 0 && captures(n.Body, names))
	if wrap {
		r.edits = append(r.edits, edit{r.off(st.Pos()), 0, "(func() { "}, edit{r.off(st.End()), 0, " })()"})
	}
	if closing != "" {
		r.edits = append(r.edits, edit{r.off(n.Body.Rbrace) + 1, 0, closing})
	}
	return true
}

// untypedFloats gives the untyped constant arguments of a generic call float64 where Go
// infers it (all arguments constants, one of them a float: cmp.Less(1.5, 2)): yaegi refuses
// "untyped float does not implement cmp.Ordered". Only calls of cmp's functions and of
// generic funcs declared in cells are touched.
func (r *rewriter) untypedFloats(n *ast.CallExpr) {
	float := false
	for _, a := range n.Args {
		if u, ok := a.(*ast.UnaryExpr); ok && (u.Op == token.SUB || u.Op == token.ADD) {
			a = u.X
		}
		lit, ok := a.(*ast.BasicLit)
		if !ok || lit.Kind != token.INT && lit.Kind != token.FLOAT {
			return
		}
		float = float || lit.Kind == token.FLOAT
	}
	if !float {
		return
	}
	generic := false
	switch f := n.Fun.(type) {
	case *ast.SelectorExpr:
		id, ok := f.X.(*ast.Ident)
		generic = ok && id.Name == "cmp" && r.env.pkgs["cmp"]
	case *ast.Ident:
		if fd, _ := r.funcDecl(f.Name); fd != nil {
			generic = fd.Type.TypeParams != nil
		}
	}
	if !generic {
		return
	}
	for _, a := range n.Args {
		r.edits = append(r.edits, edit{r.off(a.Pos()), 0, "float64("}, edit{r.off(a.End()), 0, ")"})
	}
}

// topDefer rewrites a defer of a cell's statements (main's body pasted as a cell), which yaegi
// would keep in its global frame and run again after every later cell: `defer f(x)` ->
// `gnrt.Defer(f, x)`, which takes f and x now, as the defer statement does (a closure over a
// copy would not do: at a cell's top level yaegi shares such a copy across loop iterations).
// Calls of builtins and generic functions are deferred in a closure. The session runs the
// cell's deferred calls when the cell ends, last first, as main's; recover() directly in a
// deferred func literal becomes gnrt.Recover(), which recovers the cell's panic.
func (r *rewriter) topDefer(n *ast.DeferStmt) {
	call := n.Call
	start, end := r.off(n.Defer), r.off(call.End())
	id, isIdent := call.Fun.(*ast.Ident)
	_, generic := call.Fun.(*ast.IndexExpr)
	_, lit := call.Fun.(*ast.FuncLit)
	switch {
	case !lit && (len(call.Args) == 0 || (isIdent && goBuiltins[id.Name]) || generic):
		r.edits = append(r.edits, edit{start, r.off(call.Pos()) - start, "gnrt.Defer(func() { "}, edit{end, 0, " })"})
	case len(call.Args) == 0:
		// defer func() {...}(): the literal itself.
		r.edits = append(r.edits, edit{start, len("defer"), "gnrt.Defer("}, edit{r.off(call.Lparen), r.off(call.Rparen) + 1 - r.off(call.Lparen), ")"})
	default:
		helper := "gnrt.Defer("
		if call.Ellipsis.IsValid() {
			helper = "gnrt.DeferSpread("
		}
		fun := r.off(call.Fun.Pos())
		r.edits = append(r.edits,
			edit{start, fun - start, helper},
			edit{r.off(call.Fun.End()), r.off(call.Lparen) + 1 - r.off(call.Fun.End()), ", "})
		if call.Ellipsis.IsValid() {
			r.edits = append(r.edits, edit{r.off(call.Ellipsis), 3, ""})
		}
	}
	if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
		ast.Inspect(lit.Body, func(m ast.Node) bool {
			if _, ok := m.(*ast.FuncLit); ok {
				return false
			}
			if c, ok := m.(*ast.CallExpr); ok && len(c.Args) == 0 {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "recover" {
					r.edits = append(r.edits, edit{r.off(id.Pos()), len("recover"), "gnrt.Recover"})
				}
			}
			return true
		})
	}
}

// inferTypeArgs writes out the type arguments of a call of a generic func declared in a cell
// when a func literal is among its arguments and the arguments' written types bind every
// type parameter: yaegi's inference confuses them there (Map([]int{1}, func(i int) string
// {...}) said "cannot use type func(int) string as type func(int) int"), while
// Map[int, string](...) works.
func (r *rewriter) inferTypeArgs(n *ast.CallExpr) {
	id, ok := n.Fun.(*ast.Ident)
	if !ok || n.Ellipsis.IsValid() {
		return
	}
	hasLit := false
	for _, a := range n.Args {
		if _, ok := a.(*ast.FuncLit); ok {
			hasLit = true
		}
	}
	if !hasLit {
		return
	}
	fd, _ := r.funcDecl(id.Name)
	if fd == nil || fd.Type.TypeParams == nil {
		return
	}
	var tparams []string
	isParam := map[string]bool{}
	for _, f := range fd.Type.TypeParams.List {
		for _, nm := range f.Names {
			tparams = append(tparams, nm.Name)
			isParam[nm.Name] = true
		}
	}
	var ptypes []ast.Expr
	for _, f := range fd.Type.Params.List {
		if _, ok := f.Type.(*ast.Ellipsis); ok {
			return
		}
		for range max(len(f.Names), 1) {
			ptypes = append(ptypes, f.Type)
		}
	}
	if len(ptypes) != len(n.Args) {
		return
	}
	bind := map[string]string{}
	var unify func(p, a ast.Expr) bool
	unify = func(p, a ast.Expr) bool {
		if a == nil {
			return true
		}
		switch p := p.(type) {
		case *ast.Ident:
			if !isParam[p.Name] {
				return true
			}
			t := r.text(a)
			if old, ok := bind[p.Name]; ok {
				return old == t
			}
			bind[p.Name] = t
		case *ast.ArrayType:
			if at, ok := a.(*ast.ArrayType); ok && (p.Len == nil) == (at.Len == nil) {
				return unify(p.Elt, at.Elt)
			}
		case *ast.MapType:
			if mt, ok := a.(*ast.MapType); ok {
				return unify(p.Key, mt.Key) && unify(p.Value, mt.Value)
			}
		case *ast.StarExpr:
			if st, ok := a.(*ast.StarExpr); ok {
				return unify(p.X, st.X)
			}
		case *ast.FuncType:
			ft, ok := a.(*ast.FuncType)
			if !ok {
				return true
			}
			flat := func(fl *ast.FieldList) []ast.Expr {
				var out []ast.Expr
				if fl == nil {
					return out
				}
				for _, f := range fl.List {
					for range max(len(f.Names), 1) {
						out = append(out, f.Type)
					}
				}
				return out
			}
			pp, ap := flat(p.Params), flat(ft.Params)
			pr, ar := flat(p.Results), flat(ft.Results)
			if len(pp) != len(ap) || len(pr) != len(ar) {
				return false
			}
			for i := range pp {
				if !unify(pp[i], ap[i]) {
					return false
				}
			}
			for i := range pr {
				if !unify(pr[i], ar[i]) {
					return false
				}
			}
		}
		return true
	}
	for i, a := range n.Args {
		var at ast.Expr
		switch a := a.(type) {
		case *ast.FuncLit:
			at = a.Type
		case *ast.CompositeLit:
			at = a.Type
		case *ast.BasicLit:
			if id, ok := ptypes[i].(*ast.Ident); ok && isParam[id.Name] {
				continue // an untyped constant: its default type only if nothing else binds
			}
		}
		if !unify(ptypes[i], at) {
			return
		}
	}
	args := make([]string, len(tparams))
	for i, tp := range tparams {
		t, ok := bind[tp]
		if !ok {
			return
		}
		args[i] = t
	}
	r.edits = append(r.edits, edit{r.off(n.Fun.End()), 0, "[" + strings.Join(args, ", ") + "]"})
}

// yieldTypes returns the source of the value types an iterator function type t yields (the
// parameters of its one func parameter, the yield, which returns one result), or nil when t is
// not such a type.
func yieldTypes(t ast.Expr, text func(ast.Node) string) []string {
	ft, ok := t.(*ast.FuncType)
	if !ok || ft.Params == nil || len(ft.Params.List) != 1 {
		return nil
	}
	y, ok := ft.Params.List[0].Type.(*ast.FuncType)
	if !ok || y.Results == nil || len(y.Results.List) != 1 {
		return nil
	}
	var out []string
	for _, p := range y.Params.List {
		for range max(1, len(p.Names)) {
			out = append(out, text(p.Type))
		}
	}
	return out
}
