package interp

import (
	"go/ast"
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

// needsSeqRewrite is needsRewrite's filter for seqTypeArgs and range loops over iterators.
func needsSeqRewrite(src string) bool {
	return strings.Contains(src, "Seq") || strings.Contains(src, "Lines") || strings.Contains(src, "OnceValue")
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
