package interp

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/traefik/yaegi/interp"
)

// yaegi (v0.16.1) represents a cell's struct type by an unnamed reflect struct whose
// unexported fields are renamed X+name (reflect cannot make unexported fields), and a named
// non-struct type by its underlying type. Compiled fmt then prints `{Xx:1}` for %+v and
// `*struct { S string }` for %T. The session keeps each cell struct type's name and declared
// field names by its reflect type (typeRegistry), and the fmt functions that print field and
// type names (Printf and friends) are replaced by versions that print cell values through it.
// Values of types with their own String, Error or Format methods reach fmt inside yaegi's
// wrappers, not as cell structs, so their methods still decide.

// typeInfo is what yaegi's reflect type lost of a cell struct type.
type typeInfo struct {
	name   string   // "main.T"; "" when two cell types share the reflect type
	fields []string // declared field names, by index
}

// typeRegistry maps the reflect types of cell types to their declarations.
type typeRegistry struct {
	mu      sync.RWMutex
	structs map[reflect.Type]*typeInfo
	named   map[reflect.Type][]string     // underlying type -> cell non-struct types over it
	cells   map[reflect.Type]bool         // cache: does the type contain a cell struct type
	json    map[reflect.Type]reflect.Type // cache of jsonType
}

func newTypeRegistry() *typeRegistry {
	return &typeRegistry{structs: map[reflect.Type]*typeInfo{}, named: map[reflect.Type][]string{},
		cells: map[reflect.Type]bool{}, json: map[reflect.Type]reflect.Type{}}
}

// register records cell type name; ptr is a nil *T and fields its declared field names,
// comma-separated (RegisterType calls are written by the rewriting pass).
func (r *typeRegistry) register(name string, ptr any, fields string) {
	pt := reflect.TypeOf(ptr)
	if pt == nil || pt.Kind() != reflect.Pointer {
		return
	}
	t := pt.Elem()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cells = map[reflect.Type]bool{}
	r.json = map[reflect.Type]reflect.Type{}
	full := "main." + name
	if t.Kind() != reflect.Struct {
		for _, n := range r.named[t] {
			if n == full {
				return
			}
		}
		r.named[t] = append(r.named[t], full)
		return
	}
	var names []string
	if fields != "" {
		names = strings.Split(fields, ",")
	}
	if len(names) != t.NumField() {
		return // not the declaration we parsed (a generic or an alias): leave it to fmt
	}
	if old, ok := r.structs[t]; ok && old.name != full {
		// Two cell types with the same fields share yaegi's reflect type: the name is unknown.
		r.structs[t] = &typeInfo{fields: names}
		return
	}
	r.structs[t] = &typeInfo{name: full, fields: names}
}

func (r *typeRegistry) info(t reflect.Type) *typeInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.structs[t]
}

// hasCell reports whether values of t can hold a cell struct type (interfaces can).
func (r *typeRegistry) hasCell(t reflect.Type) bool {
	r.mu.RLock()
	v, ok := r.cells[t]
	empty := len(r.structs) == 0
	r.mu.RUnlock()
	if ok {
		return v
	}
	if empty {
		return false
	}
	v = r.scan(t, map[reflect.Type]bool{})
	r.mu.Lock()
	r.cells[t] = v
	r.mu.Unlock()
	return v
}

func (r *typeRegistry) scan(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return r.scan(t.Elem(), seen)
	case reflect.Map:
		return r.scan(t.Key(), seen) || r.scan(t.Elem(), seen)
	case reflect.Struct:
		r.mu.RLock()
		_, ok := r.structs[t]
		r.mu.RUnlock()
		if ok {
			return true
		}
		if t.Name() != "" {
			// A compiled type (yaegi's are unnamed): fmt prints it as it is, through its
			// own methods or fields, even where an interface field could hold a cell value.
			return false
		}
		for i := 0; i < t.NumField(); i++ {
			if r.scan(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// typeString is t.String() with cell struct types by their names.
func (r *typeRegistry) typeString(t reflect.Type) string {
	if t == nil {
		return "<nil>"
	}
	if in := r.info(t); in != nil && in.name != "" {
		return in.name
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + r.typeString(t.Elem())
	case reflect.Slice:
		return "[]" + r.typeString(t.Elem())
	case reflect.Array:
		return "[" + strconv.Itoa(t.Len()) + "]" + r.typeString(t.Elem())
	case reflect.Map:
		return "map[" + r.typeString(t.Key()) + "]" + r.typeString(t.Elem())
	case reflect.Chan:
		switch t.ChanDir() {
		case reflect.RecvDir:
			return "<-chan " + r.typeString(t.Elem())
		case reflect.SendDir:
			return "chan<- " + r.typeString(t.Elem())
		}
		return "chan " + r.typeString(t.Elem())
	}
	return t.String()
}

// mentionsNamed reports whether src mentions a named non-struct cell type by its name.
func (r *typeRegistry) mentionsNamed(src string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, names := range r.named {
		for _, n := range names {
			if strings.Contains(src, strings.TrimPrefix(n, "main.")) {
				return true
			}
		}
	}
	return false
}

// ambiguous returns the cell types that t's values may be (a named non-struct type is its
// underlying type for yaegi), for a note beside %T.
func (r *typeRegistry) ambiguous(t reflect.Type) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.named[t]
}

// typeVerb replaces %T in a format handed to fmt, so that a cellValue prints the type name:
// fmt answers %T itself, before any Formatter.
const typeVerb = '\uE054'

// fixFormat returns format and args to hand to fmt instead: arguments that hold cell struct
// values, or that a %T prints, become cellValues. note names %T arguments whose cell type
// yaegi cannot tell from its underlying type.
func (r *typeRegistry) fixFormat(format string, args []any) (string, []any, string) {
	var static []string // the static type names of arguments that typedFormatArgs wrapped
	for i, a := range args {
		if ta, ok := a.(typedArg); ok {
			if static == nil {
				static = make([]string, len(args))
				args = append([]any(nil), args...)
			}
			args[i], static[i] = ta.v, ta.name
		}
	}
	dirs := scanFormat(format, len(args))
	var note string
	proxy := make([]bool, len(args))
	anyType := false
	for _, d := range dirs {
		if d.arg < 0 || d.arg >= len(args) {
			continue
		}
		switch d.verb {
		case 'T':
			proxy[d.arg] = true
			anyType = true
			if static != nil && static[d.arg] != "" {
				continue
			}
			if t := reflect.TypeOf(args[d.arg]); t != nil {
				if names := r.ambiguous(t); len(names) > 0 && note == "" {
					note = fmt.Sprintf("gpunotes: %%T printed %s, which may be the cell type %s: the Go interpreter (yaegi) gives a named non-struct type its underlying type at run time, so %%T cannot tell them apart (print the name yourself, or use a %%%%compile cell)\n", t, strings.Join(names, " or "))
				}
			}
		case 'w', 'p':
			// Errorf needs the error itself; fmt answers %p before any Formatter, from the
			// address, which needs no cell type names.
		default:
			if a := args[d.arg]; a != nil && r.hasCell(reflect.TypeOf(a)) {
				proxy[d.arg] = true
			}
		}
	}
	changed := false
	out := args
	for i, p := range proxy {
		if !p {
			continue
		}
		if !changed {
			out = append([]any(nil), args...)
			changed = true
		}
		out[i] = cellValue{r: r, v: reflect.ValueOf(args[i])}
		if static != nil {
			out[i] = cellValue{r: r, v: reflect.ValueOf(args[i]), static: static[i]}
		}
	}
	if anyType {
		var b strings.Builder
		last := 0
		for _, d := range dirs {
			if d.verb == 'T' && d.arg >= 0 && d.arg < len(args) {
				b.WriteString(format[last:d.verbAt])
				b.WriteRune(typeVerb)
				last = d.verbAt + 1
			}
		}
		b.WriteString(format[last:])
		format = b.String()
	}
	return format, out, note
}

// directive is one verb of a format string: its byte offset and the argument it prints.
type directive struct {
	verb   rune
	verbAt int
	arg    int // -1 for %%
}

// scanFormat finds the verbs of a fmt format and their arguments, as fmt numbers them
// (explicit [n] indexes and * widths included).
func scanFormat(format string, nargs int) []directive {
	var out []directive
	arg := 0
	for i := 0; i < len(format); {
		if format[i] != '%' {
			i++
			continue
		}
		i++
		// flags
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		index := func() {
			if i < len(format) && format[i] == '[' {
				j := strings.IndexByte(format[i:], ']')
				if j < 0 {
					return
				}
				if n, err := strconv.Atoi(format[i+1 : i+j]); err == nil && n >= 1 {
					arg = n - 1
				}
				i += j + 1
			}
		}
		index()
		if i < len(format) && format[i] == '*' {
			arg++
			i++
			index()
		} else {
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
		}
		if i < len(format) && format[i] == '.' {
			i++
			index()
			if i < len(format) && format[i] == '*' {
				arg++
				i++
				index()
			} else {
				for i < len(format) && format[i] >= '0' && format[i] <= '9' {
					i++
				}
			}
		}
		if i >= len(format) {
			break
		}
		r, size := rune(format[i]), 1
		if r >= 0x80 {
			r = []rune(format[i:])[0]
			size = len(string(r))
		}
		if r == '%' {
			out = append(out, directive{verb: r, verbAt: i, arg: -1})
		} else {
			out = append(out, directive{verb: r, verbAt: i, arg: arg})
			arg++
		}
		i += size
	}
	return out
}

// cellValue prints a value that holds cell struct values as fmt would print it with the
// declared type and field names.
type cellValue struct {
	r      *typeRegistry
	v      reflect.Value
	static string // the Go name of the value's type, where the cell's source tells it
}

// Format implements fmt.Formatter.
func (c cellValue) Format(f fmt.State, verb rune) {
	if verb == typeVerb {
		name := "<nil>"
		if c.static != "" {
			name = c.static
		} else if c.v.IsValid() {
			name = c.r.typeString(c.v.Type())
			if w := wrapped(c.v); w.IsValid() {
				name = c.r.typeString(w.Type())
			}
		}
		fmt.Fprintf(f, fmt.FormatString(f, 's'), name)
		return
	}
	c.r.print(f, verb, c.v, 0)
}

// wrapped returns the value inside one of yaegi's interface wrappers (the struct that makes
// a cell type with a String method a fmt.Stringer), or the invalid Value.
func wrapped(v reflect.Value) reflect.Value {
	t := v.Type()
	if t.Kind() == reflect.Struct && (strings.HasPrefix(t.Name(), "_") || t == errorWrapperType) && t.NumField() > 0 && t.Field(0).Name == "IValue" {
		return v.Field(0).Elem()
	}
	return reflect.Value{}
}

var (
	errorIfaceType = reflect.TypeFor[error]()
	stringerType   = reflect.TypeFor[fmt.Stringer]()
	formatterType  = reflect.TypeFor[fmt.Formatter]()
	goStringerType = reflect.TypeFor[fmt.GoStringer]()
)

// printsItself reports whether fmt prints values of t through a method of t (Format, GoString
// for %#v, Error or String for the string verbs) rather than by walking its fields. Cell types
// have no methods in yaegi's reflect types, so this holds only for compiled types and yaegi's
// interface wrappers.
func printsItself(t reflect.Type, verb rune, sharp bool) bool {
	if t.Kind() == reflect.Interface {
		return false
	}
	if t.Implements(formatterType) {
		return true
	}
	if sharp {
		return t.Implements(goStringerType)
	}
	switch verb {
	case 'v', 's', 'q', 'x', 'X':
		return t.Implements(errorIfaceType) || t.Implements(stringerType)
	}
	return false
}

func (r *typeRegistry) print(f fmt.State, verb rune, v reflect.Value, depth int) {
	if !v.IsValid() {
		if depth == 0 {
			io.WriteString(f, "%!"+string(verb)+"(<nil>)")
			return
		}
		io.WriteString(f, "<nil>")
		return
	}
	sharp := verb == 'v' && f.Flag('#')
	plus := verb == 'v' && f.Flag('+')
	t := v.Type()
	if v.CanInterface() && printsItself(t, verb, sharp) {
		// A compiled value that fmt prints through its own method (an error wrapping another,
		// a *gpuarray.Array): walking its fields instead would print its internals.
		fmt.Fprintf(f, fmt.FormatString(f, verb), v.Interface())
		return
	}
	if !r.hasCell(t) || (v.Kind() != reflect.Interface && wrapped(v).IsValid()) {
		if depth > 0 && v.Kind() == reflect.Pointer && verb == 'v' {
			switch {
			case v.IsNil() && sharp:
				fmt.Fprintf(f, "(%s)(nil)", r.typeString(t))
			case v.IsNil():
				io.WriteString(f, "<nil>")
			case sharp:
				fmt.Fprintf(f, "(%s)(0x%x)", r.typeString(t), v.Pointer())
			default:
				fmt.Fprintf(f, "0x%x", v.Pointer())
			}
			return
		}
		if v.CanInterface() {
			fmt.Fprintf(f, fmt.FormatString(f, verb), v.Interface())
		} else {
			fmt.Fprintf(f, fmt.FormatString(f, verb), v)
		}
		return
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			if sharp {
				io.WriteString(f, r.typeString(t)+"(nil)")
			} else {
				io.WriteString(f, "<nil>")
			}
			return
		}
		r.print(f, verb, v.Elem(), depth+1)
	case reflect.Pointer:
		if v.IsNil() {
			if sharp {
				fmt.Fprintf(f, "(%s)(nil)", r.typeString(t))
			} else {
				io.WriteString(f, "<nil>")
			}
			return
		}
		if depth == 0 {
			switch v.Elem().Kind() {
			case reflect.Struct, reflect.Array, reflect.Slice, reflect.Map:
				io.WriteString(f, "&")
				r.print(f, verb, v.Elem(), depth+1)
				return
			}
		}
		if sharp {
			fmt.Fprintf(f, "(%s)(0x%x)", r.typeString(t), v.Pointer())
		} else {
			fmt.Fprintf(f, "0x%x", v.Pointer())
		}
	case reflect.Struct:
		if sharp {
			io.WriteString(f, r.typeString(t))
		}
		io.WriteString(f, "{")
		in := r.info(t)
		for i := 0; i < v.NumField(); i++ {
			if i > 0 {
				if sharp {
					io.WriteString(f, ", ")
				} else {
					io.WriteString(f, " ")
				}
			}
			if plus || sharp {
				name := t.Field(i).Name
				if in != nil {
					name = in.fields[i]
				}
				io.WriteString(f, name+":")
			}
			r.print(f, verb, v.Field(i), depth+1)
		}
		io.WriteString(f, "}")
	case reflect.Slice, reflect.Array:
		if sharp {
			if v.Kind() == reflect.Slice && v.IsNil() {
				io.WriteString(f, r.typeString(t)+"(nil)")
				return
			}
			io.WriteString(f, r.typeString(t)+"{")
		} else {
			io.WriteString(f, "[")
		}
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				if sharp {
					io.WriteString(f, ", ")
				} else {
					io.WriteString(f, " ")
				}
			}
			r.print(f, verb, v.Index(i), depth+1)
		}
		if sharp {
			io.WriteString(f, "}")
		} else {
			io.WriteString(f, "]")
		}
	case reflect.Map:
		if sharp {
			if v.IsNil() {
				io.WriteString(f, r.typeString(t)+"(nil)")
				return
			}
			io.WriteString(f, r.typeString(t)+"{")
		} else {
			io.WriteString(f, "map[")
		}
		keys := v.MapKeys()
		sort.SliceStable(keys, func(i, j int) bool { return compareKeys(keys[i], keys[j]) < 0 })
		for i, k := range keys {
			if i > 0 {
				if sharp {
					io.WriteString(f, ", ")
				} else {
					io.WriteString(f, " ")
				}
			}
			r.print(f, verb, k, depth+1)
			io.WriteString(f, ":")
			r.print(f, verb, v.MapIndex(k), depth+1)
		}
		if sharp {
			io.WriteString(f, "}")
		} else {
			io.WriteString(f, "]")
		}
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), v.Interface())
	}
}

// compareKeys orders map keys as fmt prints them (internal/fmtsort), for the kinds a map key
// holding a cell struct can have.
func compareKeys(a, b reflect.Value) int {
	if a.Kind() != b.Kind() {
		return cmp3(a.Kind() < b.Kind(), a.Kind() > b.Kind())
	}
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return cmp3(a.Int() < b.Int(), a.Int() > b.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return cmp3(a.Uint() < b.Uint(), a.Uint() > b.Uint())
	case reflect.String:
		return strings.Compare(a.String(), b.String())
	case reflect.Float32, reflect.Float64:
		return compareValues(a.Float(), b.Float())
	case reflect.Bool:
		return cmp3(!a.Bool() && b.Bool(), a.Bool() && !b.Bool())
	case reflect.Pointer, reflect.Chan:
		return cmp3(a.Pointer() < b.Pointer(), a.Pointer() > b.Pointer())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if c := compareKeys(a.Field(i), b.Field(i)); c != 0 {
				return c
			}
		}
	case reflect.Array:
		for i := 0; i < a.Len(); i++ {
			if c := compareKeys(a.Index(i), b.Index(i)); c != 0 {
				return c
			}
		}
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return cmp3(a.IsNil() && !b.IsNil(), !a.IsNil() && b.IsNil())
		}
		return compareKeys(a.Elem(), b.Elem())
	}
	return 0
}

// fmtSymbols are fmt's printing functions that show field and type names, through the
// session's type registry; note goes to the cell's stderr.
func (s *Session) fmtSymbols() interp.Exports {
	r := s.types
	fix := func(format string, a []any) (string, []any) {
		format, a, note := r.fixFormat(format, a)
		if note != "" {
			s.noteOnce(note)
		}
		return format, a
	}
	syms := map[string]reflect.Value{
		"Printf": reflect.ValueOf(func(format string, a ...any) (int, error) {
			format, a = fix(format, a)
			return fmt.Fprintf(currentStdout{s}, format, a...)
		}),
		"Sprintf": reflect.ValueOf(func(format string, a ...any) string {
			format, a = fix(format, a)
			return fmt.Sprintf(format, a...)
		}),
		"Fprintf": reflect.ValueOf(func(w io.Writer, format string, a ...any) (int, error) {
			format, a = fix(format, a)
			return fmt.Fprintf(w, format, a...)
		}),
		"Errorf": reflect.ValueOf(func(format string, a ...any) error {
			format, a = fix(format, a)
			return fmt.Errorf(format, a...)
		}),
		"Appendf": reflect.ValueOf(func(b []byte, format string, a ...any) []byte {
			format, a = fix(format, a)
			return fmt.Appendf(b, format, a...)
		}),
		// These print no field or type names; they are here for the error wrapper below.
		"Print":    reflect.ValueOf(func(a ...any) (int, error) { return fmt.Fprint(currentStdout{s}, a...) }),
		"Println":  reflect.ValueOf(func(a ...any) (int, error) { return fmt.Fprintln(currentStdout{s}, a...) }),
		"Sprint":   reflect.ValueOf(fmt.Sprint),
		"Sprintln": reflect.ValueOf(fmt.Sprintln),
		"Fprint":   reflect.ValueOf(fmt.Fprint),
		"Fprintln": reflect.ValueOf(fmt.Fprintln),
		"Append":   reflect.ValueOf(fmt.Append),
		"Appendln": reflect.ValueOf(fmt.Appendln),
	}
	// yaegi hands these functions cell values with Format, Error or String methods inside
	// wrappers that have them (its MapTypes), in fmt's order of preference.
	mt := []reflect.Type{
		reflect.TypeOf((*fmt.Formatter)(nil)).Elem(),
		reflect.TypeOf((*cellError)(nil)).Elem(),
		reflect.TypeOf((*fmt.Stringer)(nil)).Elem(),
	}
	maps := map[reflect.Value][]reflect.Type{}
	for _, v := range syms {
		maps[v] = mt
	}
	// The key is not "fmt/fmt": yaegi's Use would then redo its own fmt set-up, replacing
	// Printf again. "fmt/./fmt" names the same package.
	errs := map[string]reflect.Value{"As": reflect.ValueOf(errorsAs), "Is": reflect.ValueOf(errorsIs)}
	js := map[string]reflect.Value{
		"Marshal": reflect.ValueOf(func(v any) ([]byte, error) { return json.Marshal(r.jsonValue(v)) }),
		"MarshalIndent": reflect.ValueOf(func(v any, prefix, indent string) ([]byte, error) {
			return json.MarshalIndent(r.jsonValue(v), prefix, indent)
		}),
		"Unmarshal": reflect.ValueOf(func(data []byte, v any) error { return json.Unmarshal(data, r.jsonValue(v)) }),
	}
	jsonTypes := []reflect.Type{reflect.TypeOf((*json.Marshaler)(nil)).Elem(), reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()}
	maps[js["Marshal"]] = jsonTypes
	maps[js["MarshalIndent"]] = jsonTypes
	maps[js["Unmarshal"]] = []reflect.Type{reflect.TypeOf((*json.Unmarshaler)(nil)).Elem(), reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()}
	return interp.Exports{
		"fmt/./fmt":          syms,
		"errors/errors":      errs,
		"encoding/json/json": js,
		".":                  {"MapTypes": reflect.ValueOf(maps)},
		// Where yaegi looks for the wrapper of cellError (its package path, "_" + its name).
		"github.com/gpunotes/gpunotes/interp/interp": {"_cellError": reflect.ValueOf((*errorWrapper)(nil))},
	}
}

// noteOnce writes note to stderr once per cell.
func (s *Session) noteOnce(note string) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	if s.notes[note] {
		return
	}
	s.notes[note] = true
	fmt.Fprint(os.Stderr, note) // fd 2 is the running cell's stderr
}

// structFieldNames returns the declared field names of a struct type, comma-separated (an
// embedded field is named by its type).
func structFieldNames(st *ast.StructType) string {
	var names []string
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			t := f.Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if ix, ok := t.(*ast.IndexExpr); ok {
				t = ix.X
			}
			if ix, ok := t.(*ast.IndexListExpr); ok {
				t = ix.X
			}
			switch t := t.(type) {
			case *ast.Ident:
				names = append(names, t.Name)
			case *ast.SelectorExpr:
				names = append(names, t.Sel.Name)
			default:
				names = append(names, "?")
			}
			continue
		}
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	return strings.Join(names, ",")
}

// registerCall is the statement that tells the session the reflect type of cell type ts.
func registerCall(ts *ast.TypeSpec) string {
	if ts.TypeParams != nil || ts.Assign.IsValid() || ts.Name.Name == "_" {
		return ""
	}
	fields := ""
	if st, ok := ts.Type.(*ast.StructType); ok {
		fields = structFieldNames(st)
	}
	return fmt.Sprintf("gnrt.RegisterType(%q, (*%s)(nil), %q)", ts.Name.Name, ts.Name.Name, fields)
}

// registerLocal tells the session the reflect types of the types a function body declares,
// right after their declaration (Go prints them as main.T too).
func (r *rewriter) registerLocal(d *ast.DeclStmt) {
	g, ok := d.Decl.(*ast.GenDecl)
	if !ok || g.Tok != token.TYPE {
		return
	}
	var calls []string
	for _, sp := range g.Specs {
		if c := registerCall(sp.(*ast.TypeSpec)); c != "" {
			calls = append(calls, c)
		}
	}
	if len(calls) > 0 {
		r.edits = append(r.edits, edit{r.off(d.End()), 0, "; " + strings.Join(calls, "; ")})
	}
}

// cellError is error as a named interface, so that yaegi can find a wrapper for it
// (errorWrapper, under "_cellError"): with it in the print functions' MapTypes, a cell type
// whose pointer has an Error method reaches fmt as an error, as in Go (yaegi's own MapTypes
// have only Formatter and Stringer: fmt.Println(&MyErr{}) printed &{...}, and Errorf's %w
// refused it).
type cellError interface{ Error() string }

// errorWrapper is the wrapper yaegi fills with a cell value and its Error method.
type errorWrapper struct {
	IValue any
	WError func() string
}

var errorWrapperType = reflect.TypeOf(errorWrapper{})

// Error implements error.
func (w errorWrapper) Error() string { return w.WError() }

// unwrapCell returns the cell value inside one of yaegi's interface wrappers, or v.
func unwrapCell(v any) any {
	if v == nil {
		return nil
	}
	if w := wrapped(reflect.ValueOf(v)); w.IsValid() && w.CanInterface() {
		return w.Interface()
	}
	return v
}

// errorsAs is errors.As for cell types: the chain holds them inside yaegi's wrappers, and
// their reflect types have no methods, so errors.As refused a *MyErr target.
func errorsAs(err error, target any) bool {
	if target == nil {
		panic("errors: target cannot be nil")
	}
	val := reflect.ValueOf(target)
	typ := val.Type()
	if typ.Kind() != reflect.Pointer || val.IsNil() {
		panic("errors: target must be a non-nil pointer")
	}
	want := typ.Elem()
	return anyInTree(err, func(err error) bool {
		for _, c := range []any{err, unwrapCell(err)} {
			if c != nil && reflect.TypeOf(c).AssignableTo(want) {
				val.Elem().Set(reflect.ValueOf(c))
				return true
			}
		}
		x, ok := err.(interface{ As(any) bool })
		return ok && x.As(target)
	})
}

// errorsIs is errors.Is for cell values: two wrappers of the same cell value are not ==
// (they hold funcs), their values are.
func errorsIs(err, target error) bool {
	if err == nil || target == nil {
		return err == target
	}
	t := unwrapCell(target)
	comparable := reflect.TypeOf(t).Comparable()
	return anyInTree(err, func(err error) bool {
		if c := unwrapCell(err); comparable && reflect.TypeOf(c) == reflect.TypeOf(t) && c == t {
			return true
		}
		return errors.Is(err, target)
	})
}

// anyInTree reports whether match holds for an error of err's tree, visited as the errors
// package visits it: err, then what Unwrap gives, depth first through Unwrap() []error.
func anyInTree(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if anyInTree(e, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// jsonValue returns v for the cell's encoding/json: values of cell struct types converted to
// types whose renamed unexported fields carry `json:"-"`, as Go leaves them out. (A rewrite
// tagging the declarations would also hide them from the cluster, which moves cell values to
// workers as JSON through the compiled encoding/json.) A conversion between struct types that
// differ only in tags needs no copy, and a pointer stays one: Unmarshal writes through it.
func (r *typeRegistry) jsonValue(v any) any {
	if v == nil {
		return v
	}
	rv := reflect.ValueOf(v)
	t := r.jsonType(rv.Type())
	if t == rv.Type() || !rv.Type().ConvertibleTo(t) {
		return v
	}
	return rv.Convert(t).Interface()
}

// jsonType is t with each cell struct type's renamed fields tagged `json:"-"` (t itself when
// nothing changes, or for recursive types, which reflect cannot build).
func (r *typeRegistry) jsonType(t reflect.Type) reflect.Type {
	r.mu.RLock()
	v, ok := r.json[t]
	empty := len(r.structs) == 0
	r.mu.RUnlock()
	if ok {
		return v
	}
	if empty {
		return t
	}
	v = t
	func() {
		defer func() {
			if recover() != nil { // StructOf refuses some fields; leave t as it is
				v = t
			}
		}()
		v = r.buildJSONType(t, map[reflect.Type]bool{})
	}()
	r.mu.Lock()
	r.json[t] = v
	r.mu.Unlock()
	return v
}

// errRecursive stops buildJSONType at a type that contains itself.
var errRecursive = errors.New("recursive type")

func (r *typeRegistry) buildJSONType(t reflect.Type, busy map[reflect.Type]bool) reflect.Type {
	switch t.Kind() {
	case reflect.Pointer:
		if e := r.buildJSONType(t.Elem(), busy); e != t.Elem() {
			return reflect.PointerTo(e)
		}
	case reflect.Slice:
		if e := r.buildJSONType(t.Elem(), busy); e != t.Elem() {
			return reflect.SliceOf(e)
		}
	case reflect.Array:
		if e := r.buildJSONType(t.Elem(), busy); e != t.Elem() {
			return reflect.ArrayOf(t.Len(), e)
		}
	case reflect.Map:
		k, e := r.buildJSONType(t.Key(), busy), r.buildJSONType(t.Elem(), busy)
		if k != t.Key() || e != t.Elem() {
			return reflect.MapOf(k, e)
		}
	case reflect.Struct:
		if t.Name() != "" {
			return t // a compiled type
		}
		if busy[t] {
			panic(errRecursive)
		}
		busy[t] = true
		defer delete(busy, t)
		in := r.info(t)
		fields := make([]reflect.StructField, t.NumField())
		changed := false
		for i := range fields {
			f := t.Field(i)
			if ft := r.buildJSONType(f.Type, busy); ft != f.Type {
				f.Type = ft
				changed = true
			}
			if in != nil && in.fields[i] != f.Name && !ast.IsExported(in.fields[i]) {
				f.Tag = reflect.StructTag(strings.TrimSpace(`json:"-" ` + string(f.Tag)))
				changed = true
			}
			fields[i] = f
		}
		if changed {
			return reflect.StructOf(fields)
		}
	}
	return t
}
