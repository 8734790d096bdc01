package nbrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// Param is one notebook parameter given as NAME=VALUE.
type Param struct {
	Name  string
	Value string
}

// ParseParam parses "NAME=VALUE". NAME must be a Go identifier.
func ParseParam(s string) (Param, error) {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || !token.IsIdentifier(name) {
		return Param{}, fmt.Errorf("parameter %q: want NAME=VALUE with NAME a Go identifier", s)
	}
	return Param{Name: name, Value: value}, nil
}

// Tags that mark the parameters cell and the cell injected after it (papermill's names).
const (
	ParametersTag = "parameters"
	InjectedTag   = "injected-parameters"
)

// InjectParams inserts a code cell tagged "injected-parameters" right after the cell tagged
// "parameters"; it assigns each parameter's value to the variable of that name. A cell injected
// by an earlier run is replaced. Every name must be declared in the parameters cell (with var
// or :=). A value is used as Go source when it parses as an expression, except for variables
// the parameters cell initializes with a string literal or declares as string, which get the
// value as a string (quote it to pass Go source there).
func InjectParams(nb *Notebook, params []Param) error {
	if len(params) == 0 {
		return nil
	}
	var kept []*Cell
	for _, c := range nb.Cells {
		if !c.HasTag(InjectedTag) {
			kept = append(kept, c)
		}
	}
	nb.Cells = kept
	at := -1
	for i, c := range nb.Cells {
		if c.Type == "code" && c.HasTag(ParametersTag) {
			at = i
			break
		}
	}
	if at < 0 {
		return errors.New("--param given but no code cell is tagged \"parameters\"")
	}
	decl, err := declaredParams(nb.Cells[at].Source)
	if err != nil {
		return fmt.Errorf("parameters cell: %w", err)
	}
	var sb strings.Builder
	sb.WriteString("// Parameters injected by gpunotes run.\n")
	for _, p := range params {
		isString, ok := decl[p.Name]
		if !ok {
			names := make([]string, 0, len(decl))
			for n := range decl {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("parameter %s is not declared in the parameters cell (it declares: %s)", p.Name, strings.Join(names, ", "))
		}
		fmt.Fprintf(&sb, "%s = %s\n", p.Name, goValue(p.Value, isString))
	}
	seen := map[string]bool{}
	for _, c := range nb.Cells {
		seen[c.ID] = true
	}
	tags, _ := json.Marshal([]string{InjectedTag})
	cell := &Cell{
		ID:       newID(seen),
		Type:     "code",
		Metadata: map[string]json.RawMessage{"tags": tags},
		Source:   strings.TrimSuffix(sb.String(), "\n"),
	}
	nb.Cells = append(nb.Cells[:at+1], append([]*Cell{cell}, nb.Cells[at+1:]...)...)
	return nil
}

// goValue renders v as Go source for an assignment.
func goValue(v string, isString bool) string {
	if isString {
		if _, err := strconv.Unquote(v); err == nil {
			return v
		}
		return strconv.Quote(v)
	}
	if _, err := parser.ParseExpr(v); err == nil && strings.TrimSpace(v) != "" {
		return v
	}
	return strconv.Quote(v)
}

// declaredParams returns the variables the parameters cell declares, each with whether it is
// a string variable.
func declaredParams(src string) (map[string]bool, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "parameters.go", "package p\nfunc _() {\n"+src+"\n}", 0)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	out := map[string]bool{}
	body := file.Decls[0].(*ast.FuncDecl).Body
	for _, st := range body.List {
		switch s := st.(type) {
		case *ast.AssignStmt:
			if s.Tok != token.DEFINE {
				continue
			}
			for i, l := range s.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || id.Name == "_" {
					continue
				}
				str := false
				if len(s.Rhs) == len(s.Lhs) {
					str = isStringLit(s.Rhs[i])
				}
				out[id.Name] = str
			}
		case *ast.DeclStmt:
			g, ok := s.Decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typed := false
				if t, ok := vs.Type.(*ast.Ident); ok && t.Name == "string" {
					typed = true
				}
				for i, id := range vs.Names {
					if id.Name == "_" {
						continue
					}
					str := typed
					if vs.Type == nil && len(vs.Values) == len(vs.Names) {
						str = isStringLit(vs.Values[i])
					}
					out[id.Name] = str
				}
			}
		}
	}
	return out, nil
}

func isStringLit(e ast.Expr) bool {
	b, ok := e.(*ast.BasicLit)
	return ok && b.Kind == token.STRING
}
