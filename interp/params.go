package interp

import "go/ast"

// nameParams names the unnamed parameters of functions with a body `_`: yaegi v0.16.1
// allocates no frame slot for an unnamed parameter, and when compiled code calls such a
// function (a widget's Observe callback `func(widget.Change) {...}`) it stores the argument in
// the slot of the body's first value ("reflect.Set: value of type widget.Change is not
// assignable to type func(...interface {}) (int, error)"). Named `_`, it gets its slot.
func (r *rewriter) nameParams(f *ast.File) {
	name := func(ft *ast.FuncType) {
		if ft.Params == nil {
			return
		}
		for _, p := range ft.Params.List {
			if len(p.Names) == 0 {
				r.edits = append(r.edits, edit{r.fset.Position(p.Type.Pos()).Offset, 0, "_ "})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				name(n.Type)
			}
		case *ast.FuncLit:
			name(n.Type)
		}
		return true
	})
}
