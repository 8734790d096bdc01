package interp

import (
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
)

// segKind says how a piece of a cell is evaluated.
type segKind int

const (
	segDecl segKind = iota // import, type, func, var, const: evaluated in yaegi's file mode
	segStmt                // statements: evaluated in yaegi's statement mode
)

// segment is a run of consecutive top-level pieces of one kind, with its place in the cell.
type segment struct {
	kind segKind
	src  string
	line int // 1-based line in the cell where src starts
	col  int // 1-based column of src's first byte on that line
}

// splitCell cuts a cell into segments at top-level statement boundaries. A declaration starts
// with import/type/var/const, or func followed by a name or a receiver; everything else is a
// statement. Consecutive statements stay together so that they share one scope.
func splitCell(code string) ([]segment, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("cell", -1, len(code))
	var s scanner.Scanner
	var errs scanner.ErrorList
	s.Init(file, []byte(code), func(pos token.Position, msg string) { errs.Add(pos, msg) }, 0)

	type piece struct {
		kind       segKind
		start, end int
		imp        bool // an import declaration
	}
	var pieces []piece
	depth := 0
	start := -1
	var firstTok token.Token
	var toks []token.Token
	flush := func(end int) {
		if start < 0 {
			return
		}
		k := segStmt
		switch firstTok {
		case token.IMPORT, token.TYPE, token.VAR, token.CONST:
			k = segDecl
		case token.FUNC:
			if isFuncDecl(toks) {
				k = segDecl
			}
		}
		pieces = append(pieces, piece{k, start, end, firstTok == token.IMPORT})
		start = -1
		toks = toks[:0]
	}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			flush(len(code))
			break
		}
		off := file.Offset(pos)
		if start < 0 {
			if tok == token.SEMICOLON {
				continue
			}
			start = off
			firstTok = tok
		}
		if len(toks) < 16 {
			toks = append(toks, tok)
		}
		switch tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
		case token.SEMICOLON:
			if depth == 0 {
				end := off
				if lit == "\n" {
					end = off
				} else {
					end = off + 1
				}
				flush(end)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var segs []segment
	declared := false // the last segment declares something other than imports
	for k, p := range pieces {
		src := code[p.start:p.end]
		if strings.TrimSpace(src) == "" {
			continue
		}
		if k == 0 && isPackageClause(src) {
			continue // a pasted file's "package main"
		}
		// Consecutive declarations form one file, as in Go: forward references work. Imports
		// after other declarations start a new one (Go files import first).
		if n := len(segs); n > 0 && segs[n-1].kind == p.kind && !(p.imp && declared) {
			prev := &segs[n-1]
			prev.src = code[offsetOf(code, prev.line, prev.col):p.end]
			declared = declared || (p.kind == segDecl && !p.imp)
			continue
		}
		line, col := lineCol(code, p.start)
		segs = append(segs, segment{kind: p.kind, src: src, line: line, col: col})
		declared = p.kind == segDecl && !p.imp
	}
	return segs, nil
}

// isPackageClause reports whether src is a package clause ("package main").
func isPackageClause(src string) bool {
	f := strings.Fields(src)
	return len(f) == 2 && f[0] == "package" && token.IsIdentifier(strings.TrimSuffix(f[1], ";"))
}

// isFuncDecl tells a func declaration (func name / func (recv) name) from a func literal.
func isFuncDecl(toks []token.Token) bool {
	if len(toks) < 2 {
		return false
	}
	if toks[1] == token.IDENT {
		return true
	}
	if toks[1] != token.LPAREN {
		return false
	}
	// func (r T) Name( ... : a receiver is followed by an identifier; a literal by '{' or a result.
	depth := 0
	for i := 1; i < len(toks); i++ {
		switch toks[i] {
		case token.LPAREN:
			depth++
		case token.RPAREN:
			depth--
			if depth == 0 {
				return i+1 < len(toks) && toks[i+1] == token.IDENT && i+2 < len(toks) && toks[i+2] == token.LPAREN
			}
		}
	}
	return false
}

func lineCol(code string, off int) (int, int) {
	line := 1 + strings.Count(code[:off], "\n")
	col := off + 1
	if i := strings.LastIndexByte(code[:off], '\n'); i >= 0 {
		col = off - i
	}
	return line, col
}

func offsetOf(code string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(code[off:], '\n')
		if i < 0 {
			return len(code)
		}
		off += i + 1
	}
	return off + col - 1
}

// declNames lists the names a declaration segment declares, and reports a parse error with
// positions relative to the cell.
func declNames(seg segment) ([]string, *ast.File, error) {
	return declNamesSrc(seg.src)
}

func declNamesSrc(src string) ([]string, *ast.File, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell", "package p;"+src, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			} else if len(d.Recv.List) > 0 {
				// Methods are recorded as Type.Method so their source is kept for inspection.
				t := d.Recv.List[0].Type
				if st, ok := t.(*ast.StarExpr); ok {
					t = st.X
				}
				switch g := t.(type) { // a generic type's receiver: T[K, V]
				case *ast.IndexExpr:
					t = g.X
				case *ast.IndexListExpr:
					t = g.X
				}
				if id, ok := t.(*ast.Ident); ok {
					names = append(names, id.Name+"."+d.Name.Name)
				}
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					names = append(names, sp.Name.Name)
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names, f, nil
}

// methodsOf lists the user-declared methods of type name in the given declaration sources, and
// the type's struct field names (nil when it is not a struct).
func methodsOf(srcs []string, name string) (methods, fields []string) {
	for _, src := range srcs {
		_, f, err := declNamesSrc(src)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					continue
				}
				t := d.Recv.List[0].Type
				if st, ok := t.(*ast.StarExpr); ok {
					t = st.X
				}
				if id, ok := t.(*ast.Ident); ok && id.Name == name {
					methods = append(methods, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					ts, ok := sp.(*ast.TypeSpec)
					if !ok || ts.Name.Name != name {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								fields = append(fields, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return methods, fields
}

// importSpec is one import: its local name ("" for the package's own) and path.
type importSpec struct{ name, path string }

func (i importSpec) local() string {
	if i.name != "" {
		return i.name
	}
	return pkgName(i.path)
}

// pkgName is the name of the package at import path p as Go's convention has it: the last
// element, or the one before a major version suffix (math/rand/v2 is rand).
func pkgName(p string) string {
	name := p[strings.LastIndexByte(p, '/')+1:]
	if i := strings.LastIndexByte(p, '/'); i > 0 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		dir := p[:i]
		return dir[strings.LastIndexByte(dir, '/')+1:]
	}
	return name
}
