package interp

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"reflect"
	"strings"
)

// binaryYieldTypes is yieldTypes for `for v := range pkg.F(...)` where pkg is a compiled
// package (strings.SplitSeq, bytes.Lines, maps.Keys of the standard library, or a preloaded
// package's iterator): the yield's parameter types come from F's reflected type, whose one
// result is a func(yield func(...) bool).
func (r *rewriter) binaryYieldTypes(sel *ast.SelectorExpr) []string {
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || r.env.binFunc == nil || !r.env.pkgs[pkg.Name] {
		return nil
	}
	t := r.env.binFunc(pkg.Name, sel.Sel.Name)
	if t == nil || t.Kind() != reflect.Func || t.NumOut() != 1 {
		return nil
	}
	seq := t.Out(0)
	if seq.Kind() != reflect.Func || seq.NumIn() != 1 || seq.NumOut() != 0 {
		return nil
	}
	yield := seq.In(0)
	if yield.Kind() != reflect.Func || yield.NumOut() != 1 || yield.Out(0).Kind() != reflect.Bool {
		return nil
	}
	types := make([]string, yield.NumIn())
	for i := range types {
		in := yield.In(i)
		if in.Name() != "" && in.PkgPath() != "" && path.Base(in.PkgPath()) != pkg.Name {
			return nil // a named type of another package: the cell may not have imported it
		}
		types[i] = in.String()
	}
	return types
}

// binFunc returns the type of the compiled function pkg.name, pkg being a local package
// name the session imported; nil when it is no compiled function.
func (s *Session) binFunc(pkg, name string) reflect.Type {
	s.declMu.RLock()
	p, ok := s.imported[pkg]
	s.declMu.RUnlock()
	if !ok {
		return nil
	}
	for key, syms := range s.symbols {
		if path.Dir(key) != p {
			continue
		}
		if v, ok := syms[name]; ok && v.Kind() == reflect.Func {
			return v.Type()
		}
	}
	return nil
}

// seqTypeArgs gives the collecting functions of slices and maps their type arguments when
// their iterator is a compiled function's (slices.Collect(strings.SplitSeq(s, ","))):
// yaegi cannot infer E from a compiled func type ("undefined type for E").
func (r *rewriter) seqTypeArgs(n *ast.CallExpr) {
	sel, ok := n.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || !r.env.pkgs[pkg.Name] {
		return
	}
	arg, params := -1, 0
	switch pkg.Name + "." + sel.Sel.Name {
	case "slices.Collect", "slices.Sorted", "slices.SortedFunc":
		arg, params = 0, 1
	case "maps.Collect":
		arg, params = 0, 2
	case "maps.Insert":
		arg, params = 1, 2
	default:
		return
	}
	if len(n.Args) <= arg {
		return
	}
	call, ok := n.Args[arg].(*ast.CallExpr)
	if !ok {
		return
	}
	inner, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	types := r.binaryYieldTypes(inner)
	if len(types) != params {
		return
	}
	r.edits = append(r.edits, edit{r.off(sel.End()), 0, "[" + strings.Join(types, ", ") + "]"})
}

// binaryFuncArgs wraps a compiled function passed to a generic function of slices or maps
// (slices.SortFunc(words, strings.Compare)) in a func literal of its type: yaegi crashed
// compiling the call ("CFG post-order panic"), or could not infer the type parameters.
func (r *rewriter) binaryFuncArgs(n *ast.CallExpr) {
	sel, ok := n.Fun.(*ast.SelectorExpr)
	if !ok || r.consumed[n] {
		return
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "slices" && pkg.Name != "maps" || !r.env.pkgs[pkg.Name] {
		return
	}
	for _, a := range n.Args {
		if conv := r.compiledSliceType(a); conv != "" {
			r.edits = append(r.edits, edit{r.off(a.Pos()), 0, conv + "("}, edit{r.off(a.End()), 0, ")"})
			continue
		}
		as, ok := a.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		pkg, ok := as.X.(*ast.Ident)
		if !ok || r.env.binFunc == nil || !r.env.pkgs[pkg.Name] {
			continue
		}
		t := r.env.binFunc(pkg.Name, as.Sel.Name)
		if t == nil || t.Kind() != reflect.Func || t.IsVariadic() {
			continue
		}
		typeName := func(x reflect.Type) (string, bool) {
			if x.Name() != "" && x.PkgPath() != "" && path.Base(x.PkgPath()) != pkg.Name {
				return "", false // a named type of another package: the cell may not have imported it
			}
			return x.String(), true
		}
		var params, args, results []string
		good := true
		for i := 0; i < t.NumIn(); i++ {
			s, ok := typeName(t.In(i))
			good = good && ok
			params = append(params, fmt.Sprintf("gnA%d %s", i, s))
			args = append(args, fmt.Sprintf("gnA%d", i))
		}
		for i := 0; i < t.NumOut(); i++ {
			s, ok := typeName(t.Out(i))
			good = good && ok
			results = append(results, s)
		}
		if !good {
			continue
		}
		res, ret := "", ""
		switch len(results) {
		case 0:
		case 1:
			res, ret = " "+results[0], "return "
		default:
			res, ret = " ("+strings.Join(results, ", ")+")", "return "
		}
		lit := fmt.Sprintf("func(%s)%s { %s%s(%s) }", strings.Join(params, ", "), res, ret, r.text(as), strings.Join(args, ", "))
		r.edits = append(r.edits, edit{r.off(as.Pos()), r.off(as.End()) - r.off(as.Pos()), lit})
	}
}

// compiledSliceType is the slice or map type of e ("[]string"), an argument of a generic
// function of slices or maps, when its value comes from compiled code: a compiled function's
// result (strings.Fields(s)), a variable the segment defines from one, or a variable of an
// earlier cell. yaegi crashed compiling the call with such a value ("CFG post-order panic")
// and compiles it converted to its own type. "" when e is none of these, or its type names a
// package's type.
func (r *rewriter) compiledSliceType(e ast.Expr) string {
	var t reflect.Type
	switch e := e.(type) {
	case *ast.CallExpr:
		t = r.compiledResult(e, 0, 1)
	case *ast.Ident:
		var defs []reflect.Type
		count := 0
		ast.Inspect(r.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					return true
				}
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == e.Name {
						count++
						if len(n.Rhs) == 1 {
							if c, ok := n.Rhs[0].(*ast.CallExpr); ok {
								if rt := r.compiledResult(c, i, len(n.Lhs)); rt != nil {
									defs = append(defs, rt)
								}
							}
						}
					}
				}
			case *ast.Field:
				for _, nm := range n.Names {
					if nm.Name == e.Name {
						count += 2
					}
				}
			case *ast.ValueSpec:
				for _, nm := range n.Names {
					if nm.Name == e.Name {
						count += 2
					}
				}
			case *ast.RangeStmt:
				if identName(n.Key) == e.Name || identName(n.Value) == e.Name {
					count += 2
				}
			}
			return true
		})
		switch {
		case count == 1 && len(defs) == 1:
			t = defs[0]
		case count == 0 && r.env.vars[e.Name] && r.env.varType != nil:
			t = r.env.varType(e.Name)
		}
	}
	if t == nil || t.Kind() != reflect.Slice && t.Kind() != reflect.Map || t.Name() != "" || strings.Contains(t.String(), ".") {
		return ""
	}
	return t.String()
}

// compiledResult is the type of result i of call, a call of a compiled package's function
// with want results; nil when it is not one.
func (r *rewriter) compiledResult(call *ast.CallExpr, i, want int) reflect.Type {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || r.env.binFunc == nil {
		return nil
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || !r.env.pkgs[pkg.Name] {
		return nil
	}
	t := r.env.binFunc(pkg.Name, sel.Sel.Name)
	if t == nil || t.Kind() != reflect.Func || t.NumOut() != want || i >= want {
		return nil
	}
	return t.Out(i)
}

// needsSeqRewrite is needsRewrite's filter for seqTypeArgs and range loops over iterators.
func needsSeqRewrite(src string) bool {
	return strings.Contains(src, "Seq") || strings.Contains(src, "Lines") || strings.Contains(src, "OnceValue") || strings.Contains(src, "slices.") || strings.Contains(src, "maps.")
}

// preludeSyncSrc declares sync.OnceValue and OnceValues (Go 1.21; generic, so extraction skips
// them) for genericStd's rename: a source package "sync" would hide the compiled one. A
// channel of one slot is their lock, released before a panic of f is raised again: yaegi
// skips the deferred calls left after a deferred call panics.
const preludeSyncSrc = `
func gnOnceValue[T any](f func() T) func() T {
	var (
		mu   = make(chan struct{}, 1)
		done bool
		ok   bool
		p    any
		v    T
	)
	return func() T {
		mu <- struct{}{}
		if !done {
			done = true
			v, p, ok = func() (v T, p any, ok bool) {
				defer func() {
					if !ok {
						p = recover()
					}
				}()
				v = f()
				return v, nil, true
			}()
		}
		<-mu
		if !ok {
			panic(p)
		}
		return v
	}
}

func gnOnceValues[T1, T2 any](f func() (T1, T2)) func() (T1, T2) {
	var (
		mu   = make(chan struct{}, 1)
		done bool
		ok   bool
		p    any
		v1   T1
		v2   T2
	)
	return func() (T1, T2) {
		mu <- struct{}{}
		if !done {
			done = true
			v1, v2, p, ok = func() (v1 T1, v2 T2, p any, ok bool) {
				defer func() {
					if !ok {
						p = recover()
					}
				}()
				v1, v2 = f()
				return v1, v2, nil, true
			}()
		}
		<-mu
		if !ok {
			panic(p)
		}
		return v1, v2
	}
}`

// cellVarType is the type of the value of an earlier cell's variable name (nil when it has
// none).
func (s *Session) cellVarType(name string) reflect.Type {
	v, err := s.i.Eval(name)
	if err != nil || !v.IsValid() {
		return nil
	}
	return v.Type()
}
