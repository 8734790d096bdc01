package interp

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"reflect"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

var keywords = []string{"break", "case", "chan", "const", "continue", "default", "defer", "else",
	"fallthrough", "for", "func", "go", "goto", "if", "import", "interface", "map", "package",
	"range", "return", "select", "struct", "switch", "type", "var"}

var builtins = []string{"append", "cap", "clear", "close", "complex", "copy", "delete", "imag",
	"len", "make", "max", "min", "new", "panic", "print", "println", "real", "recover",
	"bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8",
	"int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64",
	"uintptr", "any", "true", "false", "nil", "iota"}

// identBefore returns the identifier chain (a.b.c) ending at byte offset cursor, and where it
// starts.
func identBefore(code string, cursor int) (string, int) {
	if cursor > len(code) {
		cursor = len(code)
	}
	start := cursor
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(code[:start])
		if r == '.' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			start -= size
			continue
		}
		break
	}
	return code[start:cursor], start
}

// packageNames maps a package's local name to its import path for every loaded package.
func (s *Session) packageNames() map[string]string {
	out := map[string]string{}
	for key := range s.symbols {
		i := strings.LastIndexByte(key, '/')
		if i < 0 {
			continue
		}
		path, name := key[:i], key[i+1:]
		if path == rtPath {
			continue
		}
		if prev, ok := out[name]; ok && len(prev) < len(path) {
			continue // prefer the shorter path: "rand" is math/rand, not crypto/rand
		}
		out[name] = path
	}
	return out
}

func (s *Session) pkgSymbols(name string) (map[string]reflect.Value, bool) {
	path, ok := s.packageNames()[name]
	if !ok {
		return nil, false
	}
	m, ok := s.symbols[path+"/"+name]
	return m, ok
}

// Complete returns completions for the identifier or selector before cursor (a byte offset).
func (s *Session) Complete(code string, cursor int) (matches []string, start, end int) {
	word, wstart := identBefore(code, cursor)
	end = cursor
	if dot := strings.LastIndexByte(word, '.'); dot >= 0 {
		recv, prefix := word[:dot], word[dot+1:]
		start = wstart + dot + 1
		return s.memberMatches(recv, prefix), start, end
	}
	start = wstart
	set := map[string]bool{}
	add := func(n string) {
		if strings.HasPrefix(n, word) {
			set[n] = true
		}
	}
	for _, n := range s.names() {
		add(n)
	}
	for n := range s.packageNames() {
		add(n)
	}
	for _, n := range keywords {
		add(n)
	}
	for _, n := range builtins {
		add(n)
	}
	for n := range set {
		matches = append(matches, n)
	}
	sort.Strings(matches)
	return matches, start, end
}

func (s *Session) memberMatches(recv, prefix string) []string {
	var names []string
	if !strings.Contains(recv, ".") {
		if syms, ok := s.pkgSymbols(recv); ok && !s.isUserName(recv) {
			for n := range syms {
				if strings.HasPrefix(n, prefix) && !strings.HasPrefix(n, "_") {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			return names
		}
	}
	v, ok := s.peek(recv)
	if !ok {
		return nil
	}
	all := members(v)
	all = append(all, s.userMethods(v)...)
	seen := map[string]bool{}
	for _, n := range all {
		if strings.HasPrefix(n, prefix) && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func (s *Session) isUserName(n string) bool {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	_, d := s.decls[n]
	return d || s.vars[n]
}

// peek evaluates a side-effect-free selector chain of user names (a, a.b) when no cell runs.
func (s *Session) peek(expr string) (reflect.Value, bool) {
	for _, part := range strings.Split(expr, ".") {
		if !token.IsIdentifier(part) {
			return reflect.Value{}, false
		}
	}
	if !s.isUserName(strings.Split(expr, ".")[0]) {
		return reflect.Value{}, false
	}
	if !s.mu.TryLock() {
		return reflect.Value{}, false // a cell is running: don't race its state
	}
	defer s.mu.Unlock()
	v, err := s.i.Eval(expr)
	if err != nil || !v.IsValid() {
		return reflect.Value{}, false
	}
	return v, true
}

func members(v reflect.Value) []string {
	seen := map[string]bool{}
	t := v.Type()
	for _, tt := range []reflect.Type{t, reflect.PointerTo(t)} {
		for i := 0; i < tt.NumMethod(); i++ {
			seen[tt.Method(i).Name] = true
		}
	}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() == reflect.Struct {
		for i := 0; i < st.NumField(); i++ {
			if f := st.Field(i); f.IsExported() || !strings.HasPrefix(f.Name, "X") {
				seen[f.Name] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	return out
}

// Inspect describes the name at cursor: a package symbol's signature and documentation, or a
// variable's type and value.
func (s *Session) Inspect(code string, cursor, detail int) (map[string]any, bool) {
	// Extend to the end of the identifier under the cursor.
	end := cursor
	for end < len(code) {
		r, size := utf8.DecodeRuneInString(code[end:])
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			end += size
			continue
		}
		break
	}
	word, _ := identBefore(code, end)
	word = strings.Trim(word, ".")
	if word == "" {
		return nil, false
	}
	var text string
	if pkg, name, ok := strings.Cut(word, "."); ok && !strings.Contains(name, ".") && !s.isUserName(pkg) {
		syms, found := s.pkgSymbols(pkg)
		if !found {
			return nil, false
		}
		v, found := syms[name]
		if !found {
			return nil, false
		}
		path := s.packageNames()[pkg]
		text = describeSymbol(path, pkg, name, v)
		if doc := lookupDoc(path, name); doc != "" {
			text += "\n\n" + doc
		}
	} else {
		v, ok := s.peek(word)
		if !ok {
			return nil, false
		}
		val := fmt.Sprintf("%+v", safeInterface(v))
		if len(val) > 2000 && detail == 0 {
			val = val[:2000] + "…"
		}
		text = fmt.Sprintf("%s: %s\nvalue: %s", word, v.Type(), val)
		if detail > 0 {
			// name?? shows the source of a cell's declaration, as IPython does.
			s.declMu.RLock()
			src, ok := s.decls[word]
			s.declMu.RUnlock()
			if ok {
				text += "\n\nsource:\n" + declSource(src, word)
			}
		}
	}
	return map[string]any{"text/plain": text}, true
}

func safeInterface(v reflect.Value) any {
	if v.CanInterface() {
		return v.Interface()
	}
	return v.String()
}

func describeSymbol(path, pkg, name string, v reflect.Value) string {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Func:
		sig := strings.TrimPrefix(t.String(), "func")
		return fmt.Sprintf("func %s.%s%s  (package %q)", pkg, name, sig, path)
	case t.Kind() == reflect.Pointer && v.IsNil() && t.Elem().Kind() != reflect.Interface:
		return fmt.Sprintf("type %s.%s %s  (package %q)", pkg, name, t.Elem().Kind(), path)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Interface && v.IsNil():
		return fmt.Sprintf("type %s.%s interface  (package %q)", pkg, name, path)
	case t.Kind() == reflect.Pointer:
		return fmt.Sprintf("var %s.%s %s  (package %q)", pkg, name, t.Elem(), path)
	default:
		return fmt.Sprintf("const %s.%s %s = %v  (package %q)", pkg, name, t, safeInterface(v), path)
	}
}

// IsComplete says whether code is ready to run: "complete", "incomplete" (open brackets or a
// construct cut off at the end, with an indent suggestion) or "invalid".
func (s *Session) IsComplete(code string) (status, indent string) {
	if strings.TrimSpace(code) == "" {
		return "complete", ""
	}
	if _, ok := parseMagic(code); ok {
		return "complete", ""
	}
	fset := token.NewFileSet()
	file := fset.AddFile("cell", -1, len(code))
	var sc scanner.Scanner
	scanErr := false
	sc.Init(file, []byte(code), func(pos token.Position, msg string) {
		if !strings.Contains(msg, "not terminated") {
			scanErr = true
		} else {
			scanErr = scanErr || false
		}
	}, 0)
	depth := 0
	var lastTok token.Token
	unterminated := false
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		switch tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
		case token.STRING, token.CHAR:
			if strings.HasPrefix(lit, "`") && !strings.HasSuffix(lit[1:], "`") {
				unterminated = true
			}
		}
		lastTok = tok
	}
	if sc.ErrorCount > 0 && strings.Count(code, "`")%2 == 1 {
		return "incomplete", ""
	}
	if depth > 0 || unterminated {
		return "incomplete", strings.Repeat("\t", depth)
	}
	if depth < 0 || scanErr {
		return "invalid", ""
	}
	switch lastTok {
	case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.AND, token.OR, token.XOR,
		token.SHL, token.SHR, token.LAND, token.LOR, token.ASSIGN, token.DEFINE, token.COMMA,
		token.PERIOD, token.EQL, token.NEQ, token.LSS, token.GTR, token.LEQ, token.GEQ, token.ARROW:
		return "incomplete", ""
	}
	segs, err := splitCell(code)
	if err != nil {
		return "invalid", ""
	}
	for _, seg := range segs {
		var perr error
		if seg.kind == segDecl {
			_, perr = parser.ParseFile(token.NewFileSet(), "c", "package p;"+seg.src, parser.SkipObjectResolution)
		} else {
			_, perr = parser.ParseFile(token.NewFileSet(), "c", "package p; func _() {"+seg.src+"\n}", parser.SkipObjectResolution)
		}
		if perr != nil {
			return "invalid", ""
		}
	}
	return "complete", ""
}

// userMethods finds methods declared in cells for v's type. Interpreted types carry no methods
// in reflection, so the type is identified by its struct fields among the user's types.
func (s *Session) userMethods(v reflect.Value) []string {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var fields []string
	for i := 0; i < t.NumField(); i++ {
		fields = append(fields, t.Field(i).Name)
	}
	s.declMu.RLock()
	var srcs []string
	var types []string
	seen := map[string]bool{}
	for _, n := range s.order {
		src := s.decls[n]
		if !seen[src] {
			seen[src] = true
			srcs = append(srcs, src)
		}
		if strings.HasPrefix(strings.TrimSpace(src), "type") {
			types = append(types, n)
		}
	}
	s.declMu.RUnlock()
	for _, tn := range types {
		methods, tf := methodsOf(srcs, tn)
		if strings.Join(tf, ",") == strings.Join(fields, ",") {
			return methods
		}
	}
	return nil
}

// declSource cuts the declaration of name out of a cell's declarations (which may declare
// several things, a pasted program all of them).
func declSource(src, name string) string {
	full := "package p;" + src
	f, err := parser.ParseFile(token.NewFileSet(), "cell", full, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return strings.TrimSpace(src)
	}
	for _, d := range f.Decls {
		found := false
		switch d := d.(type) {
		case *ast.FuncDecl:
			found = d.Recv == nil && d.Name.Name == name
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					found = found || sp.Name.Name == name
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						found = found || n.Name == name
					}
				}
			}
		}
		if found {
			start, end := int(d.Pos()-f.FileStart), int(d.End()-f.FileStart)
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Doc != nil {
				start = int(fd.Doc.Pos() - f.FileStart)
			}
			return full[start:end]
		}
	}
	return strings.TrimSpace(src)
}
