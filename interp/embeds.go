package interp

import (
	"fmt"
	"go/ast"
	"go/scanner"
	"go/token"
	"go/types"
	"reflect"
)

// embedsWithMethods reports whether x, an embedded field's type written pkg.T or *pkg.T,
// names a compiled type that has methods.
func (s *Session) embedsWithMethods(x ast.Expr) bool {
	ptr := false
	if st, ok := x.(*ast.StarExpr); ok {
		ptr, x = true, st.X
	}
	sel, ok := x.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	s.declMu.RLock()
	path := s.imported[id.Name]
	s.declMu.RUnlock()
	if path == "" {
		return false
	}
	v, ok := s.symbols[path+"/"+id.Name][sel.Sel.Name]
	if !ok || !v.IsValid() || v.Kind() != reflect.Pointer || v.Type().Elem().Kind() == reflect.Interface {
		return false // not a type, or an interface (yaegi wraps those)
	}
	t := v.Type().Elem()
	if ptr {
		return reflect.PointerTo(t).NumMethod() > 0
	}
	return t.NumMethod() > 0
}

// checkEmbeds refuses a struct type whose only field embeds a compiled type with methods
// (`type Counter struct{ *widget.AnyWidget }`). yaegi v0.16.1 builds it with reflect.StructOf
// and an embedded field, whose promoted methods the Go runtime cannot resolve: the first
// interface conversion of a value (fmt, display, a widget box) ends the kernel with "fatal
// error: runtime: type offset base pointer out of range", which no recover catches. With a
// second field yaegi embeds by name instead, and the type works.
func checkEmbeds(f *ast.File, fset *token.FileSet, hasMethods func(ast.Expr) bool) error {
	if hasMethods == nil {
		return nil
	}
	var list scanner.ErrorList
	ast.Inspect(f, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok || st.Fields == nil || len(st.Fields.List) != 1 {
			return true
		}
		fld := st.Fields.List[0]
		if len(fld.Names) != 0 || !hasMethods(fld.Type) {
			return true
		}
		t := types.ExprString(fld.Type)
		list.Add(fset.Position(fld.Pos()), fmt.Sprintf("a struct whose only field is the embedded %s, a compiled type "+
			"with methods, would crash the kernel (yaegi builds it with reflect.StructOf, whose promoted methods the Go "+
			"runtime cannot resolve); give it a second field, e.g. `_ struct{}` after %s, and it works", t, t))
		return true
	})
	return list.Err()
}
