package interp

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// yaegi (v0.16.1) names the function of each frame a panic passes through, but the position
// it gives is the function's first statement, whatever failed (its runCfg reads a variable
// that its loop shadows). Tracking the line at run time would cost a statement per statement
// (an interpreted loop of 1e7 additions went from 0.42 s to 0.78 s with one assignment
// more), so the traceback finds the failing line in the function's source instead: the
// statements that can raise this panic (an index for "index out of range", a panic call for
// a value the cell panicked with, the call of the next frame's function for a caller). One
// candidate is the line; several are all named ("line 5 or 7").

// declPos is where a declaration segment stands: the cell (its label, "" when unknown) and
// the cell line and column where the segment starts.
type declPos struct {
	cell      string
	line, col int
}

// cellLabel names a cell in tracebacks: "Cell In[3]" as IPython does, or "the cell".
func cellLabel(count int) string {
	if count <= 0 {
		return ""
	}
	return fmt.Sprintf("Cell In[%d]", count)
}

// frame is one function a panic passed through.
type frame struct {
	fn string // as yaegi names it, without "main.": f, f.func, M, main (the cell's statements)
}

// parseFrames reads yaegi's "L:C: panic: fn(...)" lines, innermost first, dropping repeats.
func parseFrames(report string) []frame {
	var out []frame
	for _, line := range strings.Split(strings.TrimSpace(report), "\n") {
		m := frameRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		fn := strings.TrimPrefix(m[3], "main.")
		switch {
		case fn == mainName:
			fn = "main()"
		case fn == "func" || strings.HasPrefix(fn, "func."):
			// The cell's statements, when they hold a func literal (yaegi names the frame
			// by the last one).
			fn = "main"
		}
		if len(out) > 0 && out[len(out)-1].fn == fn {
			continue
		}
		out = append(out, frame{fn: fn})
	}
	return out
}

// panicTrace turns yaegi's frame report into traceback lines naming the cell and line of
// each frame, innermost first. seg is the statement segment that ran (for yaegi's "main"
// frame, the cell's statements); val is the panic's message.
func (s *Session) panicTrace(report string, seg segment, val string) []string {
	frames := parseFrames(report)
	var out []string
	for i, fr := range frames {
		verb := "in"
		if i > 0 {
			verb = "called from"
		}
		callee := ""
		if i > 0 {
			callee = baseFunc(frames[i-1].fn)
		}
		var body ast.Node
		var fset *token.FileSet
		var pos declPos
		var src string
		name := fr.fn
		if fr.fn == "main" {
			name = "the cell's statements"
			if seg.kind == segDecl {
				continue // the session's own call of a cell's func main
			}
			if seg.src == "" {
				out = append(out, "  "+verb+" "+name)
				continue
			}
			fset = token.NewFileSet()
			f, err := parser.ParseFile(fset, "cell", wrapPrefix(segStmt)+seg.src+"\n}", parser.SkipObjectResolution)
			if err != nil || len(f.Decls) == 0 {
				out = append(out, "  "+verb+" "+name)
				continue
			}
			body = f.Decls[0].(*ast.FuncDecl).Body
			pos = declPos{cell: s.cell, line: seg.line, col: seg.col}
			src = seg.src
		} else {
			fn := baseFunc(fr.fn)
			switch {
			case fr.fn == "main()":
				name, fn = "main", "main"
			case fn != fr.fn:
				name = "a func literal in " + fn
			}
			var ok bool
			body, fset, pos, src, ok = s.funcBody(fn)
			if !ok {
				out = append(out, "  "+verb+" "+name)
				continue
			}
		}
		lines := candidateLines(fset, body, panicMatcher(val, s.pkgNames()), callee, i == 0)
		where, of := pos.cell+", ", ""
		if pos.cell == "" {
			where, of = "", " of its cell"
		}
		srcLines := strings.Split(src, "\n")
		if len(lines) == 0 {
			first, last := fset.Position(body.Pos()).Line, fset.Position(body.End()).Line
			out = append(out, fmt.Sprintf("  %s %s, %slines %d-%d%s", verb, name, where, pos.line+first-1, pos.line+last-1, of))
			continue
		}
		nums := make([]string, len(lines))
		for k, l := range lines {
			nums[k] = strconv.Itoa(pos.line + l - 1)
		}
		out = append(out, fmt.Sprintf("  %s %s, %sline %s%s", verb, name, where, strings.Join(nums, " or "), of))
		for _, l := range lines {
			if l >= 1 && l <= len(srcLines) {
				out = append(out, "    "+strings.TrimRight(srcLines[l-1], " \t"))
			}
		}
	}
	return out
}

// baseFunc is the declared function of a yaegi frame name: f for f.func (a closure in f).
func baseFunc(fn string) string {
	if i := strings.IndexByte(fn, '.'); i >= 0 {
		return fn[:i]
	}
	return fn
}

// funcBody finds the declaration of the cell function or method name (a method by its name
// alone, as yaegi reports it: only when one cell type has it) and parses its segment.
// Lines of the returned fset count from the segment's first line.
func (s *Session) funcBody(name string) (ast.Node, *token.FileSet, declPos, string, bool) {
	s.declMu.RLock()
	key := name
	if _, ok := s.decls[name]; !ok {
		key = ""
		for k := range s.decls {
			if strings.HasSuffix(k, "."+name) {
				if key != "" {
					s.declMu.RUnlock()
					return nil, nil, declPos{}, "", false
				}
				key = k
			}
		}
	}
	src, pos := s.decls[key], s.declAt[key]
	s.declMu.RUnlock()
	if key == "" || src == "" {
		return nil, nil, declPos{}, "", false
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", "package p;"+src, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, declPos{}, "", false
	}
	method := strings.Contains(key, ".")
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name && (fd.Recv != nil) == method && fd.Body != nil {
			return fd.Body, fset, pos, src, true
		}
	}
	return nil, nil, declPos{}, "", false
}

// candidateLines returns the lines of body (sorted, at most three) whose statements can
// raise the panic val; for a caller frame, those that call callee.
func candidateLines(fset *token.FileSet, body ast.Node, match func(ast.Node) bool, callee string, innermost bool) []int {
	if !innermost {
		match = func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return false
			}
			switch f := c.Fun.(type) {
			case *ast.Ident:
				return f.Name == callee
			case *ast.SelectorExpr:
				return f.Sel.Name == callee
			case *ast.FuncLit:
				return callee == "" // a closure called in place
			}
			return false
		}
	}
	set := map[int]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if n != nil && match(n) {
			set[fset.Position(n.Pos()).Line] = true
		}
		return true
	})
	if len(set) == 0 || len(set) > 3 {
		return nil
	}
	var lines []int
	for l := range set {
		lines = append(lines, l)
	}
	sort.Ints(lines)
	return lines
}

// pkgNames returns the local names of the session's imports.
func (s *Session) pkgNames() map[string]bool {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	out := map[string]bool{}
	for n := range s.imported {
		out[n] = true
	}
	return out
}

// panicMatcher returns what can raise a panic with message val; pkgs are the imported
// package names (pkg.Name is no dereference).
func panicMatcher(val string, pkgs map[string]bool) func(ast.Node) bool {
	isCall := func(n ast.Node, names ...string) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return false
		}
		var name string
		switch f := c.Fun.(type) {
		case *ast.Ident:
			name = f.Name
		case *ast.SelectorExpr:
			if x, ok := f.X.(*ast.Ident); ok {
				name = x.Name + "." + f.Sel.Name
			}
		}
		for _, w := range names {
			if name == w || strings.HasSuffix(w, ".") && strings.HasPrefix(name, w) {
				return true
			}
		}
		return false
	}
	switch {
	case strings.Contains(val, "index out of range") || strings.Contains(val, "slice bounds out of range"):
		return func(n ast.Node) bool {
			switch n.(type) {
			case *ast.IndexExpr, *ast.SliceExpr:
				return true
			}
			return false
		}
	case strings.Contains(val, "assignment to entry in nil map"):
		return func(n ast.Node) bool {
			if a, ok := n.(*ast.AssignStmt); ok {
				for _, l := range a.Lhs {
					if _, ok := l.(*ast.IndexExpr); ok {
						return true
					}
				}
			}
			if a, ok := n.(*ast.IncDecStmt); ok {
				_, ok := a.X.(*ast.IndexExpr)
				return ok
			}
			return false
		}
	case strings.Contains(val, "divide by zero"):
		return func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				return n.Op == token.QUO || n.Op == token.REM
			case *ast.AssignStmt:
				return n.Tok == token.QUO_ASSIGN || n.Tok == token.REM_ASSIGN
			}
			return false
		}
	case strings.Contains(val, "nil pointer dereference"):
		return func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.StarExpr:
				return true
			case *ast.SelectorExpr:
				id, ok := n.X.(*ast.Ident)
				return !ok || !pkgs[id.Name]
			}
			return false
		}
	case strings.Contains(val, "interface conversion"):
		return func(n ast.Node) bool {
			t, ok := n.(*ast.TypeAssertExpr)
			return ok && t.Type != nil
		}
	case strings.Contains(val, "close of"):
		return func(n ast.Node) bool { return isCall(n, "close") }
	case strings.Contains(val, "send on closed channel"):
		return func(n ast.Node) bool { _, ok := n.(*ast.SendStmt); return ok }
	case strings.HasPrefix(val, "os.Exit("):
		return func(n ast.Node) bool { return isCall(n, "os.Exit") }
	case strings.Contains(val, "log.Fatal") || strings.HasPrefix(val, "log."):
		return func(n ast.Node) bool {
			return isCall(n, "log.Fatal", "log.Panic", "log.Fatalf", "log.Panicf", "log.Fatalln", "log.Panicln")
		}
	}
	// A value the cell panicked with (or a compiled function's panic: then no line matches).
	return func(n ast.Node) bool {
		return isCall(n, "panic", "log.Panic", "log.Panicf", "log.Panicln", "log.Fatal", "log.Fatalf", "log.Fatalln")
	}
}

// undoDecls repairs what yaegi kept of a declaration segment that failed to compile: it
// declares each of the segment's funcs and methods before it gets to the error, and they then
// run as empty bodies returning zero values. Each func goes back to its earlier cell's
// definition, or, if it had none, becomes a func with its signature that panics saying its cell
// failed. New methods and variables cannot be repaired (yaegi keeps a type's first method of a
// name, and has no way to remove a name); the returned traceback lines name them.
func (s *Session) undoDecls(ctx context.Context, f *ast.File, src string) []string {
	text := func(n ast.Node) string {
		base := int(f.FileStart) + len("package p;")
		a, b := int(n.Pos())-base, int(n.End())-base
		if a < 0 || b > len(src) || a > b {
			return ""
		}
		return src[a:b]
	}
	var out, stubbed, restored, zeroed []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil || d.Name.Name == "main" || d.Name.Name == "_" || d.Type.TypeParams != nil {
				continue
			}
			key := d.Name.Name
			if d.Recv != nil {
				// yaegi keeps a type's first method of a name: a redeclaration does not
				// replace the empty one.
				if len(d.Recv.List) == 1 {
					t := d.Recv.List[0].Type
					if st, ok := t.(*ast.StarExpr); ok {
						t = st.X
					}
					if id, ok := t.(*ast.Ident); ok && s.declSrc(id.Name+"."+key) == "" {
						zeroed = append(zeroed, "method "+id.Name+"."+key)
					}
				}
				continue
			}
			decl := ""
			if old := s.declSrc(key); old != "" {
				decl = funcText(old, d.Name.Name, false)
			}
			how := &restored
			if decl == "" {
				head := text(d)
				head = head[:int(d.Body.Lbrace)-int(d.Pos())]
				decl = head + fmt.Sprintf("{ panic(%q) }", key+" is not defined: the cell that declared it failed to compile; run it again once it compiles")
				how = &stubbed
			}
			seg := segment{kind: segDecl, src: decl, line: 1, col: 1}
			if rsrc, _, err := rewriteGo(seg, s.rewriteEnv()); err == nil {
				if _, err := s.eval(ctx, guardMakes(rsrc)); err == nil {
					*how = append(*how, key)
				}
			}
		case *ast.GenDecl:
			if d.Tok != token.VAR {
				continue
			}
			for _, sp := range d.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					if n.Name != "_" && s.declSrc(n.Name) == "" {
						zeroed = append(zeroed, n.Name)
					}
				}
			}
		}
	}
	if len(restored) > 0 {
		out = append(out, "note: kept from earlier cells: "+strings.Join(restored, ", "))
	}
	if len(stubbed) > 0 {
		out = append(out, "note: not defined until this cell compiles (calling them panics saying so): "+strings.Join(stubbed, ", "))
	}
	if len(zeroed) > 0 {
		out = append(out, "note: the interpreter cannot remove names, and keeps these declared until this cell compiles, variables with zero values and methods with empty bodies: "+strings.Join(zeroed, ", "))
	}
	return out
}

// funcText returns the source of func (or method, if method) name in a declaration segment's
// source ("" if absent).
func funcText(src, name string, method bool) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", "package p;"+src, parser.SkipObjectResolution)
	if err != nil {
		return ""
	}
	base := int(f.FileStart) + len("package p;")
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name && (fd.Recv != nil) == method {
			return src[int(fd.Pos())-base : int(fd.End())-base]
		}
	}
	return ""
}

// deferCell registers f(args...), a deferred call of the running cell's statements (see
// topDefer); deferSpread is it for `defer f(a, xs...)`.
func (s *Session) deferCell(f any, args ...any) { s.deferAdd(f, args, false) }

func (s *Session) deferSpread(f any, args ...any) { s.deferAdd(f, args, true) }

func (s *Session) deferAdd(f any, args []any, spread bool) {
	fv := reflect.ValueOf(f)
	if fv.Kind() != reflect.Func {
		panic(fmt.Sprintf("defer statement: %T is not a function", f))
	}
	in, err := callArgs(fv.Type(), args, spread)
	if err != nil {
		panic("defer statement: " + err.Error())
	}
	s.defers = append(s.defers, func() {
		if spread {
			fv.CallSlice(in)
		} else {
			fv.Call(in)
		}
	})
}

// recoverCell is recover() in a cell's top-level deferred func: it returns the cell's panic
// value, once, and the cell then ends without error, as main does when a deferred func
// recovers.
func (s *Session) recoverCell() any {
	if !s.hasPan {
		return nil
	}
	s.hasPan = false
	return s.panicV
}

// runDefers runs the cell's top-level deferred calls, last first, after the cell ended with
// cerr (nil: no error). A deferred func that recovers clears a panic; one that panics makes
// its panic the cell's error.
func (s *Session) runDefers(cerr *CellError) *CellError {
	defers := s.defers
	s.defers = nil
	if len(defers) == 0 {
		return cerr
	}
	s.hasPan, s.panicV = cerr != nil && cerr.Name == "panic", nil
	if s.hasPan {
		s.panicV = cerr.Value
		if cerr.value != nil {
			s.panicV = cerr.value
		}
	}
	for i := len(defers) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if r := recover(); r != nil {
					val := fmt.Sprint(r)
					cerr = &CellError{Name: "panic", Value: val, value: r, Traceback: []string{"panic: " + val, "  in a deferred call of the cell's statements"}}
					s.hasPan, s.panicV = true, r
				}
			}()
			defers[i]()
		}()
	}
	if cerr != nil && cerr.Name == "panic" && !s.hasPan {
		cerr = nil // recovered
	}
	s.hasPan, s.panicV = false, nil
	return cerr
}
