package interp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"
)

// SourceOf returns the source of the top-level func name declared in earlier cells, together
// with the top-level declarations and imports it uses, transitively: a program that a fresh
// Session (a cluster worker's) can evaluate before calling name.
func (s *Session) SourceOf(name string) (string, error) {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	src, ok := s.decls[name]
	if !ok {
		if s.vars[name] {
			return "", fmt.Errorf("%s is a variable set by a statement, not a func declaration: declare it as `func %s(...)` in a cell to run it on workers", name, name)
		}
		return "", fmt.Errorf("no top-level func %q declared in this session (closures and func literals cannot be shipped: declare a named func)", name)
	}
	if _, f, err := declNamesSrc(src); err != nil || !isFunc(f, name) {
		return "", fmt.Errorf("%s is not a func declaration", name)
	}
	need := map[string]bool{}   // user declarations, by source
	pkgs := map[string]string{} // local name -> import path
	var visit func(src string) error
	visit = func(src string) error {
		if need[src] {
			return nil
		}
		need[src] = true
		_, f, err := declNamesSrc(src)
		if err != nil {
			return err
		}
		var bad error
		// Inspect the declarations, not the file: its package clause ("package p", added to
		// parse the declaration) is no use of a cell variable named p.
		inspect := func(fn func(ast.Node) bool) {
			for _, d := range f.Decls {
				ast.Inspect(d, fn)
			}
		}
		inspect(func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || bad != nil {
				return bad == nil
			}
			if dep, ok := s.decls[id.Name]; ok && dep != src {
				bad = visit(dep)
				// Methods of a used type travel with it.
				for key, msrc := range s.decls {
					if strings.HasPrefix(key, id.Name+".") && bad == nil {
						bad = visit(msrc)
					}
				}
			} else if s.vars[id.Name] && !declaredIn(f, id.Name) {
				bad = fmt.Errorf("%s uses %s, a variable set by a statement in a cell: pass it as an argument or declare it with var", name, id.Name)
			} else if p, ok := s.imported[id.Name]; ok {
				pkgs[id.Name] = p
			}
			return true
		})
		return bad
	}
	if err := visit(src); err != nil {
		return "", err
	}
	var b strings.Builder
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := pkgs[n]
		if pkgName(p) == n {
			fmt.Fprintf(&b, "import %q\n", p)
		} else {
			fmt.Fprintf(&b, "import %s %q\n", n, p)
		}
	}
	// Declarations in the order they were made, each once.
	seen := map[string]bool{}
	for _, n := range s.order {
		d := s.decls[n]
		if need[d] && !seen[d] {
			seen[d] = true
			b.WriteString(d)
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}

func isFunc(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
			return true
		}
	}
	return false
}

// declaredIn reports whether name is declared inside f (a parameter or local shadows a cell
// variable of the same name).
func declaredIn(f *ast.File, name string) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			for _, id := range n.Names {
				found = found || id.Name == name
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == name {
					found = true
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				found = found || id.Name == name
			}
		}
		return !found
	})
	return found
}

// Call evaluates src (once per distinct source) and calls its func fn with args, converting
// each argument to the parameter's type: directly where Go allows, else through JSON (structs
// and maps arrive from the wire as generic maps). A non-nil trailing error result is returned
// as the error; the other results are returned as values. Calls may run concurrently; only
// the evaluation and lookup are serialized.
func (s *Session) Call(ctx context.Context, src, fn string, args []any) ([]any, error) {
	v, err := s.lookup(ctx, src, fn)
	if err != nil {
		return nil, err
	}
	t := v.Type()
	if !t.IsVariadic() && len(args) != t.NumIn() || t.IsVariadic() && len(args) < t.NumIn()-1 {
		return nil, fmt.Errorf("%s takes %d arguments, got %d", fn, t.NumIn(), len(args))
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		if in[i], err = convertArg(a, paramType(t, i)); err != nil {
			return nil, fmt.Errorf("%s argument %d: %w", fn, i+1, err)
		}
	}
	var out []reflect.Value
	var perr error
	func() {
		defer func() {
			if r := recover(); r != nil {
				val := fmt.Sprintf("%s panicked: %v", fn, r)
				tb := append([]string{"panic: " + val}, s.panicTrace(s.frames.take(), segment{}, val)...)
				tb = append(tb, strings.Split(strings.TrimSpace(string(debug.Stack())), "\n")...)
				perr = &CellError{Name: "panic", Value: val, Traceback: tb}
			}
		}()
		out = v.Call(in)
	}()
	if perr != nil {
		return nil, perr
	}
	res := make([]any, 0, len(out))
	for i, o := range out {
		if i == len(out)-1 && t.Out(i) == errorType {
			if !o.IsNil() {
				return nil, o.Interface().(error)
			}
			continue
		}
		res = append(res, safeInterface(o))
	}
	return res, nil
}

var errorType = reflect.TypeOf((*error)(nil)).Elem()

func (s *Session) lookup(ctx context.Context, src, fn string) (reflect.Value, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256([]byte(src))
	key := hex.EncodeToString(sum[:])
	if _, done := s.funcSrc[key]; !done {
		if _, cerr := s.run(ctx, src); cerr != nil {
			return reflect.Value{}, fmt.Errorf("evaluate shipped source of %s: %w", fn, cerr)
		}
		s.funcSrc[key] = fn
	}
	v, err := s.eval(ctx, fn)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("look up %s: %w", fn, err)
	}
	if v.Kind() != reflect.Func {
		return reflect.Value{}, fmt.Errorf("%s is a %s, not a func", fn, v.Kind())
	}
	return v, nil
}

func convertArg(a any, t reflect.Type) (reflect.Value, error) {
	if a == nil {
		return reflect.Zero(t), nil
	}
	v := reflect.ValueOf(a)
	switch {
	case v.Type().AssignableTo(t):
		return v, nil
	case isNumber(v.Kind()) && isNumber(t.Kind()), v.Type().ConvertibleTo(t) && v.Kind() == t.Kind():
		return v.Convert(t), nil
	}
	data, err := json.Marshal(a)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("cannot convert %T to %s: %w", a, t, err)
	}
	p := reflect.New(t)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return reflect.Value{}, fmt.Errorf("cannot convert %T to %s: %w", a, t, err)
	}
	return p.Elem(), nil
}

func isNumber(k reflect.Kind) bool { return k >= reflect.Int && k <= reflect.Float64 }

func paramType(t reflect.Type, i int) reflect.Type {
	if t.IsVariadic() && i >= t.NumIn()-1 {
		return t.In(t.NumIn() - 1).Elem()
	}
	return t.In(i)
}

// recordFuncTypes notes the types of the funcs a declaration segment declared, for
// ResultTypes (a running cell cannot evaluate names in its own session).
func (s *Session) recordFuncTypes(ctx context.Context, src string, names []string) {
	for _, n := range names {
		if strings.Contains(n, ".") {
			continue // a method
		}
		v, err := s.eval(ctx, n)
		if err != nil || !v.IsValid() || v.Kind() != reflect.Func {
			continue
		}
		s.declMu.Lock()
		s.funcType[n] = v.Type()
		s.declMu.Unlock()
	}
}

// ResultTypes returns the result types of a top-level func declared in a cell, without a
// trailing error (Call returns that as the error): a value a worker computed with the func
// can be rebuilt in this session's own types, a struct declared in a cell included.
func (s *Session) ResultTypes(name string) ([]reflect.Type, error) {
	s.declMu.RLock()
	t, ok := s.funcType[name]
	s.declMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no top-level func %q declared in this session", name)
	}
	out := make([]reflect.Type, 0, t.NumOut())
	for i := 0; i < t.NumOut(); i++ {
		if i == t.NumOut()-1 && t.Out(i) == errorType {
			break
		}
		out = append(out, t.Out(i))
	}
	return out, nil
}
