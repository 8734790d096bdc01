package interp

import (
	"go/ast"
	"go/token"
	"sort"
	"strings"
)

// undefinedPackage answers a compile error of seg the way `go build` does when the segment
// uses a name that nothing declares as the package of a selector (`gpuaray.Ones(3)`):
// "undefined: gpuaray", with the nearest package name. yaegi instead crashed in its compiler
// (a nil pointer dereference), or said "constant definition loop". It returns nil when every
// such name is declared.
func (s *Session) undefinedPackage(seg segment) *CellError {
	if !strings.Contains(seg.src, ".") {
		return nil
	}
	c := s.check(seg)
	if c == nil {
		return nil
	}
	bases := map[token.Pos]string{}
	ast.Inspect(c.file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				bases[id.Pos()] = id.Name
			}
		}
		return true
	})
	for _, e := range c.errs {
		name, ok := strings.CutPrefix(e.Msg, "undefined: ")
		if !ok || bases[e.Pos] != name {
			continue
		}
		p := c.fset.Position(e.Pos)
		off := p.Offset - c.prefix
		if off < 0 || off > len(seg.src) {
			continue
		}
		line := 1 + strings.Count(seg.src[:off], "\n")
		col := off - strings.LastIndexByte(seg.src[:off], '\n')
		l, col := cellPos(seg, line, col)
		d := &diagnosis{line: l, col: col, msg: "undefined: " + name}
		if near, imported := s.nearestPackage(name); near != "" {
			d.hint = "did you mean " + near + "?"
			if !imported {
				d.hint = "did you mean " + near + "? (import \"" + s.stdPath(near) + "\")"
			}
		}
		return diagnosisError(seg, d)
	}
	return nil
}

// nearestPackage is the package name closest to name: an imported or preloaded one first,
// else one of the standard library (imported false).
func (s *Session) nearestPackage(name string) (string, bool) {
	s.declMu.RLock()
	var local []string
	for n := range s.imported {
		local = append(local, n)
	}
	s.declMu.RUnlock()
	sort.Strings(local)
	if n := nearest(name, local); n != "" {
		return n, true
	}
	var std []string
	for k := range s.symbols {
		i := strings.LastIndexByte(k, '/')
		if i < 0 {
			continue
		}
		path := k[:i]
		if strings.Contains(path, ".") || strings.HasPrefix(path, "gpunotes") || strings.Contains(path, "internal") {
			continue
		}
		std = append(std, pkgName(path))
	}
	sort.Strings(std)
	return nearest(name, std), false
}

// stdPath is the import path of the standard library package named name.
func (s *Session) stdPath(name string) string {
	best := ""
	for k := range s.symbols {
		i := strings.LastIndexByte(k, '/')
		if i < 0 {
			continue
		}
		path := k[:i]
		if pkgName(path) == name && !strings.Contains(path, ".") && (best == "" || len(path) < len(best)) {
			best = path
		}
	}
	return best
}
