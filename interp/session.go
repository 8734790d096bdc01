package interp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"log"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/traefik/yaegi/interp"
)

// Output receives what a running cell produces.
type Output interface {
	display.Sink
	// Stream delivers text written to "stdout" or "stderr".
	Stream(name, text string)
	// Input asks the user for a line; it fails when the client allows no stdin.
	Input(prompt string, password bool) (string, error)
}

// Options configures a Session.
type Options struct {
	// Symbols are compiled packages made available to cells (yaegi export tables).
	Symbols interp.Exports
	// Preload lists import paths imported into every cell without an import statement.
	Preload []string
	// Dir is the working directory for shell commands (default: the process's).
	Dir string
	// MaxCallDepth is the interpreted call depth at which a cell is stopped with a
	// RecursionError (0: GPUNOTES_MAX_CALL_DEPTH, else DefaultMaxCallDepth; negative: no
	// limit, as before, when the Go runtime's stack overflow kills the process; see depth.go).
	MaxCallDepth int
	// MaxGoroutines bounds the goroutines that cells start and that still run (0:
	// GPUNOTES_MAX_GOROUTINES, else a bound sized from memory; see goguard.go).
	MaxGoroutines int
	// Renamed maps old exported names of Symbols' packages ("gpuarray.Fft", keyed by package
	// name) to their new ones ("gpuarray.FFT"), for the "did you mean" of a compile error
	// that uses an old name once it is gone (renamed.go).
	Renamed map[string]string
}

// CellError is a failed cell: a compile error, a panic, or an interrupt.
type CellError struct {
	Name      string
	Value     string
	Traceback []string
	value     any // a panic's value, for recover() in a deferred call of the cell's top level
}

func (e *CellError) Error() string { return e.Name + ": " + e.Value }

// Parts returns Jupyter's error fields: ename, evalue and traceback.
func (e *CellError) Parts() (string, string, []string) { return e.Name, e.Value, e.Traceback }

// Session is one Go interpreter whose state carries across cells. Execute runs one cell at a
// time; Complete, Inspect and IsComplete may be called while a cell runs.
type Session struct {
	opts Options
	mu   sync.Mutex // serializes Execute
	// yaegiStopped: the last interrupt left yaegi's run id moved on (runid.go).
	yaegiStopped atomic.Bool
	i            *interp.Interpreter
	symbols      interp.Exports

	declMu sync.RWMutex
	decls  map[string]string // top-level name -> source of its declaration
	order  []string          // names in declaration order
	vars   map[string]bool   // names bound by := in statements
	varDef map[string]string // a variable's defining top-level statement, where it has type arguments (typeArgsOf)
	ints   map[string]bool   // names bound to integers, as far as the rewriting pass can tell

	imported map[string]string // local name -> import path

	frames  lockedBuffer // yaegi's panic frames of the running cell
	results []any        // the trailing expression's values, set by gnrt.Result

	goPanics chan *CellError
	curOut   Output
	outMu    sync.Mutex
	stdin    *stdinReader

	compMu   sync.Mutex
	comps    []*compiled             // processes of %%compile cells, by handle
	funcSrc  map[string]string       // cached Call sources by hash
	funcType map[string]reflect.Type // top-level funcs declared in cells, by name (under declMu)
	declAt   map[string]declPos      // where each of decls was declared (under declMu)
	cell     string                  // the running cell's label for tracebacks ("" unknown)

	late    lateOutput               // what cells' goroutines printed between cells (guard.go)
	defers  []func()                 // the running cell's top-level defers (trace.go)
	kept    map[string]reflect.Value // variables of statements that ran in a func (retryInFunc)
	varType map[string]string        // static types of cell variables of non-struct cell types (typearg.go; under declMu)
	panicV  any                      // the cell's panic while its defers run, for gnrt.Recover
	hasPan  bool
	types   *typeRegistry // names of cell types, for fmt (celltypes.go)
	notesMu sync.Mutex
	notes   map[string]bool // notes the running cell already wrote
	pending []*pendingDecl  // declarations that wait for a later cell's (forward.go; under declMu)
}

// New starts a session with the standard library and opts.Symbols loaded.
func New(opts Options) (*Session, error) {
	s := &Session{
		opts:     opts,
		decls:    map[string]string{},
		vars:     map[string]bool{},
		varDef:   map[string]string{},
		ints:     map[string]bool{},
		imported: map[string]string{},
		goPanics: make(chan *CellError, 16),
		funcSrc:  map[string]string{},
		funcType: map[string]reflect.Type{},
		declAt:   map[string]declPos{},
		types:    newTypeRegistry(),
		notes:    map[string]bool{},
		varType:  map[string]string{},
	}
	quietYaegiLog.Do(func() { log.SetOutput(yaegiLogFilter{}) })
	s.stdin = &stdinReader{s: s}
	s.symbols = interp.Exports{}
	for k, v := range stdSymbols() {
		s.symbols[k] = v
	}
	for k, v := range opts.Symbols {
		s.symbols[k] = v
	}
	// iter, unique and weak have only generic names, so yaegi's stdlib has no table for them;
	// an empty one lets `import "iter"` find the source package loadGenericStd compiles, and
	// lets unique and weak be imported (unique's names become the prelude's, modern.go; weak's
	// are compile errors that say why, renamed.go).
	for _, p := range []string{"iter/iter", "unique/unique", "weak/weak"} {
		if _, ok := s.symbols[p]; !ok {
			s.symbols[p] = map[string]reflect.Value{}
		}
	}
	s.symbols[rtPath+"/rt"] = map[string]reflect.Value{
		"Go":           reflect.ValueOf(s.goCall),
		"GoSpread":     reflect.ValueOf(s.goSpread),
		"GoPanic":      reflect.ValueOf(s.goPanic),
		"GoAdmit":      reflect.ValueOf(s.goAdmitLit), // gopending.go
		"GoEnd":        reflect.ValueOf(s.goEnd),
		"GoBegin":      reflect.ValueOf(s.goBegin), // goorigin.go
		"GoDone":       reflect.ValueOf(s.goDone),
		"Compare":      reflect.ValueOf(compareValues),
		"Sort":         reflect.ValueOf(sortValues),
		"CompiledCall": reflect.ValueOf(s.compiledCall),
		"Clear":        reflect.ValueOf(clearValue),
		"HasKey":       reflect.ValueOf(hasKey),
		"Stdin":        reflect.ValueOf(io.Reader(s.stdin)),
		"Result":       reflect.ValueOf(s.setResult),
		"MakeLen":      reflect.ValueOf(makeLen), // guard.go
		"RegisterType": reflect.ValueOf(s.types.register),
		"ErrorsAs":     reflect.ValueOf(errorsAs),
		"Defer":        reflect.ValueOf(s.deferCell),
		"DeferSpread":  reflect.ValueOf(s.deferSpread),
		"Keep":         reflect.ValueOf(s.keepVar),
		"Restore":      reflect.ValueOf(s.restoreVar),
		"Recover":      reflect.ValueOf(s.recoverCell),
		"Typed":        reflect.ValueOf(typed), // typearg.go
		"Mutex":        reflect.ValueOf((*sync.Mutex)(nil)),
		"AddCleanup":   reflect.ValueOf(addCleanup), // genericstd.go
		"RandN":        reflect.ValueOf(randN),      // genericstd.go
		"Cleanup":      reflect.ValueOf((*runtime.Cleanup)(nil)),
		"Intern":       reflect.ValueOf(intern),   // genericstd.go
		"Interned":     reflect.ValueOf(interned), // genericstd.go
	}
	if err := s.reset(); err != nil {
		return nil, err
	}
	return s, nil
}

// rtPath is the import path of the helpers that rewritten cells call.
const rtPath = "gpunotes.internal/rt"

func (s *Session) reset() error {
	i := interp.New(interp.Options{
		Stdout: currentStdout{s},         // not the *os.File: see guard.go
		Stderr: frameSplitter{&s.frames}, // panic frames become the traceback; the rest is the cell's stderr
		Stdin:  s.stdin,
	})
	if err := i.Use(s.symbols); err != nil {
		return fmt.Errorf("load symbols: %w", err)
	}
	if err := loadGenericStd(i); err != nil {
		return err
	}
	if err := i.Use(s.guardedSymbols()); err != nil {
		return fmt.Errorf("load guarded symbols: %w", err)
	}
	if err := i.Use(s.fmtSymbols()); err != nil {
		return fmt.Errorf("load fmt symbols: %w", err)
	}
	// yaegi's restricted mode gives cells a private, empty environment. A notebook is the
	// user's own process, as in ipykernel: cells see and change the real one (so compiled code,
	// workers and ! commands agree with them). os.Exit stays restricted.
	if err := i.Use(interp.Exports{"os/os": {
		"Getenv":    reflect.ValueOf(os.Getenv),
		"LookupEnv": reflect.ValueOf(os.LookupEnv),
		"Setenv":    reflect.ValueOf(os.Setenv),
		"Unsetenv":  reflect.ValueOf(os.Unsetenv),
		"Environ":   reflect.ValueOf(os.Environ),
		"Clearenv":  reflect.ValueOf(os.Clearenv),
		"ExpandEnv": reflect.ValueOf(os.ExpandEnv),
	}}); err != nil {
		return fmt.Errorf("load environment: %w", err)
	}
	imports := []string{fmt.Sprintf("import gnrt %q", rtPath)}
	for _, p := range s.opts.Preload {
		imports = append(imports, fmt.Sprintf("import %q", p))
	}
	if _, err := i.Eval(strings.Join(imports, "\n")); err != nil {
		return fmt.Errorf("preload packages: %w", err)
	}
	if _, err := i.Eval(preludeSrc + preludeSyncSrc); err != nil {
		return fmt.Errorf("declare min and max: %w", err)
	}
	s.i = i
	for _, p := range s.opts.Preload {
		s.imported[pkgName(p)] = p
	}
	return nil
}

// Close releases the session and ends the processes of its %%compile cells.
func (s *Session) Close() error {
	s.closeCompiled()
	return nil
}

type stdinReader struct {
	s   *Session
	buf []byte
}

// Read asks the front end for a line when the buffer is empty.
func (r *stdinReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		r.s.outMu.Lock()
		out := r.s.curOut
		r.s.outMu.Unlock()
		if out == nil {
			return 0, io.EOF
		}
		line, err := out.Input("", false)
		if err != nil {
			return 0, err
		}
		r.buf = []byte(line + "\n")
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Execute runs one cell. It returns the trailing expression's bundle (nil if none), or a
// *CellError.
func (s *Session) Execute(ctx context.Context, code string, out Output) (*display.Data, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outMu.Lock()
	s.curOut = out
	s.outMu.Unlock()
	defer func() {
		s.outMu.Lock()
		s.curOut = nil
		s.outMu.Unlock()
	}()
	s.stdin.buf = nil
	s.cell = ""
	if c, ok := out.(interface{ ExecutionCount() int }); ok {
		s.cell = cellLabel(c.ExecutionCount())
	}
	s.notesMu.Lock()
	clear(s.notes)
	s.notesMu.Unlock()
	for len(s.goPanics) > 0 { // stale reports from goroutines of earlier cells
		<-s.goPanics
	}

	s.late.deliver(out)
	if m, ok := parseMagic(code); ok {
		return s.runMagic(ctx, m, out)
	}

	res, cerr := s.runCaptured(ctx, code, out)
	if cerr == nil {
		select {
		case e := <-s.goPanics:
			cerr = e
		default:
		}
	}
	if cerr != nil {
		return nil, cerr
	}
	return res, nil
}

func (s *Session) run(ctx context.Context, code string) (res *display.Data, cerr *CellError) {
	s.defers = nil
	defer func() { cerr = s.runDefers(cerr) }()
	segs, err := splitCell(code)
	if err != nil {
		return nil, syntaxError(err, 0, 0, code, segStmt)
	}
	for k, seg := range segs {
		last := k == len(segs)-1
		if err := parseSegment(seg); err != nil {
			return nil, syntaxError(err, seg.line, seg.col, code, seg.kind)
		}
		if seg.kind == segDecl {
			if cerr := s.runDecls(ctx, code, seg); cerr != nil {
				return nil, cerr
			}
			continue
		}
		typedSeg := seg
		typedSeg.src = s.typedFormatArgs(seg)
		src, ints, err := rewriteGo(typedSeg, s.rewriteEnv())
		if err != nil {
			return nil, syntaxError(err, seg.line, seg.col, code, seg.kind)
		}
		src = guardLeadingFunc(wrapBlocks(guardMakes(src)))
		if last && showsResult(seg.src) {
			if wrapped, ok := wrapResult(src); ok {
				s.results = nil
				_, err := s.eval(ctx, wrapped)
				if err == nil {
					s.recordVars(seg.src)
					s.recordInts(ints)
					return resultBundle(s.results), nil
				}
				var p interp.Panic
				if (errors.As(err, &p) && !compilePanic(p)) || ctx.Err() != nil {
					return nil, s.evalError(ctx, err, seg)
				}
				// A compile error ran nothing: the call returns no value (or the cell has a
				// real error, which the plain evaluation below reports at its true position).
			}
		}
		if _, err := s.eval(ctx, src); err != nil {
			if cerr, ok := s.retryInFunc(ctx, err, src, seg); ok {
				if cerr != nil {
					return nil, cerr
				}
				continue
			}
			return nil, s.evalError(ctx, err, seg)
		}
		s.recordVars(seg.src)
		s.recordInts(ints)
	}
	return res, nil
}

// retryInFunc runs a statement segment that yaegi could not compile (a crash or an error) on
// `x := slices.Max(xs)` or another generic call (genericDefine), or on `v, ok := <-ch`
// (commaOKRecv), again inside a func literal,
// where yaegi compiles it, and says on stderr that its variables are not kept for later
// cells. Nothing ran before, so running it now runs it once. ok is false when this is not
// that case.
func (s *Session) retryInFunc(ctx context.Context, err error, src string, seg segment) (*CellError, bool) {
	var p interp.Panic
	if errors.As(err, &p) && !compilePanic(p) || ctx.Err() != nil {
		return nil, false // it ran
	}
	d := genericDefine(seg, s.genericFunc)
	if d == nil {
		d = commaOKRecv(seg)
	}
	if d == nil {
		return nil, false
	}
	// The variables the statements define are handed out at the end, and then set into the
	// globals of the same names that yaegi declared (with their zero values) before it
	// failed, where their types are known.
	names := topDefined(seg.src)
	keep := ""
	for _, n := range names {
		keep += fmt.Sprintf("; gnrt.Keep(%q, &%s)", n, n)
	}
	s.kept = map[string]reflect.Value{}
	if _, err2 := s.eval(ctx, ";func() {"+src+"\n"+keep+"\n}()"); err2 != nil {
		var p2 interp.Panic
		if errors.As(err2, &p2) && !compilePanic(p2) || ctx.Err() != nil {
			return s.evalError(ctx, err2, seg), true // it ran and failed
		}
		return nil, false
	}
	var lost []string
	for _, n := range names {
		if _, err := s.eval(ctx, fmt.Sprintf("gnrt.Restore(&%s, %q)", n, n)); err == nil {
			continue
		}
		// yaegi did not declare it: declare it with the kept value's type, where that type
		// can be written.
		if v, ok := s.kept[n]; ok {
			t := strings.ReplaceAll(s.types.typeString(v.Type()), "main.", "")
			if !strings.Contains(t, "struct {") && !strings.Contains(t, "interp.") {
				if _, err := s.eval(ctx, fmt.Sprintf(";var %s %s; gnrt.Restore(&%s, %q)", n, t, n, n)); err == nil {
					continue
				}
			}
		}
		lost = append(lost, n)
	}
	s.kept = nil
	s.recordVars(seg.src)
	if len(lost) > 0 {
		fmt.Fprintf(os.Stderr, "gpunotes: cell line %d: %s, so this part of the cell ran inside a func; these of its variables are not kept for later cells: %s (%s)\n", d.line, d.msg, strings.Join(lost, ", "), d.hint)
	}
	return nil, true
}

// topDefined returns the names a statement segment defines at its top level (:= and var).
func topDefined(src string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "cell", wrapPrefix(segStmt)+src+"\n}", parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "_" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, l := range st.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						add(id.Name)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					for _, n := range sp.(*ast.ValueSpec).Names {
						add(n.Name)
					}
				}
			}
		}
	}
	return out
}

// keepVar receives a variable of statements that ran in a func (retryInFunc).
func (s *Session) keepVar(name string, ptr any) {
	if s.kept != nil {
		s.kept[name] = reflect.ValueOf(ptr).Elem()
	}
}

// restoreVar sets the global *dst to the kept variable name; it panics when the types differ
// (the global's type was not what yaegi could infer), and the caller names it as lost.
func (s *Session) restoreVar(dst any, name string) {
	v, ok := s.kept[name]
	d := reflect.ValueOf(dst)
	if !ok || d.Kind() != reflect.Pointer || !v.Type().AssignableTo(d.Elem().Type()) {
		panic("gpunotes: cannot keep " + name)
	}
	d.Elem().Set(v)
}

// runDecls evaluates a run of declarations as one file (forward references work), after the
// imports it opens with. A func main runs once, here, as go run would run it.
func (s *Session) runDecls(ctx context.Context, code string, seg segment) *CellError {
	names, f, err := declNames(seg)
	if err != nil {
		return syntaxError(err, seg.line, seg.col, code, seg.kind)
	}
	imps, rest := s.splitImports(f, seg.src)
	if len(imps) > 0 {
		if src := s.newImports(imps); src != "" {
			if _, err := s.eval(ctx, src); err != nil {
				if strings.Contains(err.Error(), "unable to find source related to") {
					return importError(err, imps)
				}
				return s.evalError(ctx, err, seg)
			}
			s.addImports(imps)
		}
		if strings.TrimSpace(rest) == "" {
			return nil
		}
		// The other declarations, with the imports blanked out so positions stay.
		seg.src = rest
	}
	if e := s.checkRedeclare(seg.src, names); e != nil {
		return e
	}
	typedSeg := seg
	typedSeg.src = s.typedFormatArgs(seg)
	src, ints, err := rewriteGo(typedSeg, s.rewriteEnv())
	if err != nil {
		return syntaxError(err, seg.line, seg.col, code, seg.kind)
	}
	src = guardMakes(src)
	if s.varsOfStatements(f) {
		// yaegi reports "variable definition loop" for a var declaration that reads a variable
		// a statement defined (x := 5; var y = x); as a statement it works. yaegi chooses its
		// mode by the first token, so a ';' makes it one.
		src = ";" + src
		seg.kind, seg.col = segStmt, seg.col-1
	}
	if _, err := s.eval(ctx, src); err != nil {
		if s.deferForward(ctx, seg, f, src, err) {
			return nil
		}
		cerr := s.evalError(ctx, err, seg)
		var p interp.Panic
		if !errors.As(err, &p) || compilePanic(p) {
			cerr.Traceback = append(cerr.Traceback, s.undoDecls(ctx, f, seg.src)...)
		}
		return cerr
	}
	s.recordDecl(seg, names)
	s.recordFuncTypes(ctx, seg.src, names)
	s.registerTypes(ctx, f)
	s.recordInts(ints)
	s.resolvePending(ctx, names)
	if hasName(names, "main") {
		if _, err := s.eval(ctx, mainName+"()"); err != nil {
			return s.evalError(ctx, err, seg)
		}
	}
	return nil
}

// registerTypes tells the type registry the reflect types of the types f declares. A failure
// leaves fmt printing yaegi's names, as before.
func (s *Session) registerTypes(ctx context.Context, f *ast.File) {
	var calls []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			if c := registerCall(sp.(*ast.TypeSpec)); c != "" {
				calls = append(calls, c)
			}
		}
	}
	if len(calls) > 0 {
		s.eval(ctx, strings.Join(calls, "; "))
	}
}

// splitImports returns the imports of a declaration segment, wherever they stand (a cell may
// import after declaring, a file may not), and the segment with them blanked out.
func (s *Session) splitImports(f *ast.File, src string) ([]importSpec, string) {
	var out []importSpec
	b := []byte(src)
	base := int(f.FileStart) + len("package p;")
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		for _, sp := range g.Specs {
			is := sp.(*ast.ImportSpec)
			spec := importSpec{path: strings.Trim(is.Path.Value, "`\"")}
			if is.Name != nil {
				spec.name = is.Name.Name
			}
			out = append(out, spec)
		}
		for i := int(g.Pos()) - base; i < int(g.End())-base && i < len(b); i++ {
			if i >= 0 && b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	return out, string(b)
}

// varsOfStatements reports whether f holds only var declarations and one of them reads a
// name that an earlier cell defined (yaegi's "variable definition loop").
func (s *Session) varsOfStatements(f *ast.File) bool {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	reads := false
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			return false
		}
		ast.Inspect(g, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && !declaredIn(f, id.Name) {
				if _, decl := s.decls[id.Name]; decl || s.vars[id.Name] {
					reads = true
				}
			}
			return true
		})
	}
	return reads
}

// declSrc is the source of the declaration of name in an earlier cell ("" if none).
func (s *Session) declSrc(name string) string {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	return s.decls[name]
}

// methodSrc is the source of the declaration of method name of a cell type ("" if none, or
// if several types have one).
func (s *Session) methodSrc(name string) string {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	src := ""
	for k, v := range s.decls {
		if strings.HasSuffix(k, "."+name) {
			if src != "" {
				return ""
			}
			src = v
		}
	}
	return src
}

// rewriteEnv tells the rewriting pass what the session holds.
func (s *Session) rewriteEnv() rewriteEnv {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	env := rewriteEnv{ints: s.ints, pkgs: map[string]bool{}, userFunc: map[string]bool{}, decl: s.declSrc, method: s.methodSrc, vars: map[string]bool{}, embedded: s.embedsWithMethods, binFunc: s.binFunc, varDef: s.varDefSrc, varType: s.cellVarType}
	for n := range s.vars {
		env.vars[n] = true
	}
	for n, src := range s.decls {
		if strings.HasPrefix(strings.TrimSpace(src), "var") {
			env.vars[n] = true
		}
	}
	env.imports = map[string]string{}
	for n, p := range s.imported {
		env.pkgs[n] = true
		env.imports[n] = p
	}
	for _, n := range []string{"clear", "min", "max"} {
		if src, ok := s.decls[n]; ok && !strings.Contains(src, "gnOrdered") {
			env.userFunc[n] = true
		}
	}
	return env
}

// eval runs src under ctx, turning panics that escape yaegi into errors.
// A cell that recurses past the session's call depth is stopped (depth.go), and its error
// is then a panic whose value is the *depthError.
func (s *Session) eval(ctx context.Context, src string) (v reflect.Value, err error) {
	s.frames.take()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if limit := s.maxCallDepth(); limit > 0 {
		defer depthWatcher.watch(cancel, limit)()
	}
	defer func() {
		if r := recover(); r != nil {
			err = interp.Panic{Value: r, Stack: debug.Stack()}
		}
		var de *depthError
		if err != nil && errors.As(context.Cause(ctx), &de) {
			err = interp.Panic{Value: de}
		}
	}()
	s.sweepAfterStop() // gopending.go
	base, haveBase := runID(s.i)
	v, err = s.i.EvalWithContext(ctx, src)
	if ctx.Err() != nil {
		// Stopped: its code must have seen the stop before the next cell runs (unwind.go).
		unwound := waitEvalsUnwound(5 * time.Second)
		if errors.Is(err, ctx.Err()) {
			s.sweepAdmissions()
		}
		s.restoreRunID(base, haveBase, unwound) // runid.go
	}
	return v, err
}

var (
	// yaegi wraps statements in "package main; func main() {" on the first line.
	stmtPrefix = len("package main; func main() {")
	posRE      = regexp.MustCompile(`^(?:_\.go:)?(\d+):(\d+): (.*)$`)
)

func (s *Session) evalError(ctx context.Context, err error, seg segment) *CellError {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "context canceled")) {
		return &CellError{Name: "KeyboardInterrupt", Value: "interrupted", Traceback: s.interruptTrace("KeyboardInterrupt: the cell was interrupted")}
	}
	var p interp.Panic
	if !errors.As(err, &p) || compilePanic(p) {
		// A compile error or a crash of yaegi's compiler: a misspelt package name gets Go's
		// answer rather than yaegi's.
		if cerr := s.undefinedPackage(seg); cerr != nil {
			return cerr
		}
	}
	if errors.As(err, &p) && compilePanic(p) {
		return s.compileCrash(p, seg)
	}
	if errors.As(err, &p) {
		if de, ok := p.Value.(*depthError); ok {
			return s.depthTrace(de, seg)
		}
	}
	if errors.As(err, &p) {
		name := "panic"
		val := fmt.Sprint(p.Value)
		if strings.HasPrefix(val, "os.Exit(") {
			name = "Exit"
			val = val + " called: the kernel keeps running (a cell cannot exit the kernel process)"
		} else if strings.Contains(val, "log.Fatal") {
			name = "Exit"
		} else if val == "reflect: slice index out of range" || val == "reflect: array index out of range" {
			// What Go says; yaegi indexes through reflect.
			val = "runtime error: index out of range"
		} else if strings.HasPrefix(val, "reflect: call of reflect.Value.") && strings.HasSuffix(val, " on zero Value") {
			// yaegi's field access through a nil pointer.
			val = "runtime error: invalid memory address or nil pointer dereference"
		}
		tb := append([]string{fmt.Sprintf("%s: %s", name, val)}, s.panicTrace(s.frames.take(), seg, val)...)
		return &CellError{Name: name, Value: val, Traceback: tb, value: p.Value}
	}
	var list scanner.ErrorList
	if errors.As(err, &list) {
		return syntaxError(list, seg.line, seg.col, seg.src, seg.kind)
	}
	msg := err.Error()
	line, col := seg.line, seg.col
	if m := posRE.FindStringSubmatch(msg); m != nil {
		l, _ := strconv.Atoi(m[1])
		c, _ := strconv.Atoi(m[2])
		if seg.kind == segStmt && l == 1 {
			c -= stmtPrefix
		}
		line, col = cellPos(seg, l, c)
		col = max(col, 1)
		msg = m[3]
	}
	if name, ok := strings.CutPrefix(msg, "undefined method: "); ok {
		if d := s.diagnose(seg, name); d != nil {
			return diagnosisError(seg, d)
		}
	} else if name, ok := strings.CutPrefix(msg, "undefined selector: "); ok {
		if d := s.diagnose(seg, name); d != nil {
			return diagnosisError(seg, d)
		}
	}
	hint := builtinHint(msg, seg.src)
	if m, h, ok := s.undefinedMember(msg, seg.src); ok { // renamed.go
		msg, hint = m, h
	}
	tb := []string{fmt.Sprintf("cell line %d, column %d: %s", line, col, msg), excerpt(seg, line, col)}
	if h := hint; h != "" {
		msg += " (" + h + ")"
		tb = append(tb, "hint: "+h)
	}
	return &CellError{Name: "CompileError", Value: fmt.Sprintf("%d:%d: %s", line, col, msg), Traceback: tb}
}

// minMaxRE finds calls of Go 1.21's min and max builtins.
var minMaxRE = regexp.MustCompile(`(?:^|[^\w.])(min|max)\s*\(`)

// builtinHint explains compile errors that come from yaegi (v0.16.1) lacking the min and max
// builtins (traefik/yaegi#1674): "undefined: min", or, for `m := max(a, b)` at a cell's top
// level, a puzzling "constant definition loop".
func builtinHint(msg, src string) string {
	var name string
	switch {
	case msg == "undefined: min" || msg == "undefined: max":
		name = strings.TrimPrefix(msg, "undefined: ")
	case strings.Contains(msg, "constant definition loop"):
		m := minMaxRE.FindStringSubmatch(src)
		if m == nil {
			return ""
		}
		name = m[1]
	default:
		return ""
	}
	return fmt.Sprintf("the Go interpreter (yaegi) does not have Go 1.21's %s builtin; write the comparison out, use math.Min/math.Max for float64, or declare a func %s(a, b int) int in a cell", name, name)
}

// cellPos maps a position inside a segment (1-based) to the cell.
func cellPos(seg segment, l, c int) (int, int) {
	if l <= 1 {
		return seg.line, seg.col + c - 1
	}
	return seg.line + l - 1, c
}

func excerpt(seg segment, line, col int) string {
	lines := strings.Split(seg.src, "\n")
	i := line - seg.line
	if i < 0 || i >= len(lines) {
		return ""
	}
	pad := col - 1
	if i == 0 {
		pad = col - seg.col
	}
	if pad < 0 {
		pad = 0
	}
	return lines[i] + "\n" + strings.Repeat(" ", pad) + "^"
}

// syntaxError reports parse errors at cell positions. line and col are where the segment starts
// (0 when positions are already relative to the cell); lastLine and lastCol mark the cell's end.
func syntaxError(err error, line, col int, code string, kind segKind) *CellError {
	lastLine, lastCol := lineCol(code, len(code))
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return &CellError{Name: "SyntaxError", Value: err.Error(), Traceback: []string{"SyntaxError: " + err.Error()}}
	}
	var tb []string
	first := ""
	for _, e := range list {
		l, c, msg := e.Pos.Line, e.Pos.Column, e.Msg
		if line > 0 {
			seg := segment{line: line, col: col}
			if l == 1 {
				c -= len(wrapPrefix(kind))
			}
			l, c = cellPos(seg, l, c)
		}
		if lastLine > 0 && l > lastLine {
			// Past the cell's end: the parser met the closing brace of our wrapper.
			l, c = lastLine, lastCol
			msg = strings.Replace(msg, "found '}'", "found end of cell", 1)
		}
		m := fmt.Sprintf("%d:%d: %s", l, c, msg)
		if first == "" {
			first = m
		}
		tb = append(tb, "SyntaxError: cell line "+m)
	}
	return &CellError{Name: "SyntaxError", Value: first, Traceback: tb}
}

// showsResult reports whether a statement segment ends in an expression whose value is the
// cell's result: printing calls are not.
func showsResult(src string) bool {
	last := lastStatement(src)
	if last == "" || strings.HasSuffix(strings.TrimSpace(last), "}") && strings.HasPrefix(strings.TrimSpace(last), "for") {
		return false
	}
	if !isExpr(last) {
		return false
	}
	t := strings.TrimSpace(last)
	// display.HTML(...) and friends return handles, which resultBundle hides by type; a chart
	// literal such as display.BarChart{...} is a result.
	for _, p := range []string{"fmt.Print", "fmt.Fprint", "log.", "println(", "print("} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

// setResult receives the values of a cell's trailing expression (see wrapResult).
func (s *Session) setResult(vs ...any) { s.results = vs }

// resultBundle shows a trailing expression's values: one value as itself (rich where it has a
// rich form), several as a tuple. A lone nil (a nil error, say) and display handles show
// nothing, as None does in Python.
func resultBundle(vs []any) *display.Data {
	switch {
	case len(vs) == 0:
		return nil
	case len(vs) == 1:
		if vs[0] == nil || isHidden(vs[0]) {
			return nil
		}
		d, _ := display.Bundle(vs[0])
		return &d
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		if v == nil {
			parts[i] = "<nil>"
			continue
		}
		d, _ := display.Bundle(v)
		parts[i] = fmt.Sprint(d.MIME["text/plain"])
	}
	return &display.Data{MIME: map[string]any{"text/plain": "(" + strings.Join(parts, ", ") + ")"}}
}

func isHidden(v any) bool {
	switch v.(type) {
	case *display.Handle, *display.Progress:
		return true
	}
	return false
}

func valueBundle(v reflect.Value) (display.Data, bool) {
	if !v.IsValid() {
		return display.Data{}, false
	}
	var x any
	if v.CanInterface() {
		x = v.Interface()
	} else {
		x = v.String()
	}
	if x == nil {
		return display.Data{MIME: map[string]any{"text/plain": "<nil>"}}, true
	}
	if isHidden(x) {
		return display.Data{}, false
	}
	d, _ := display.Bundle(x)
	return d, true
}

func (s *Session) checkRedeclare(src string, names []string) *CellError {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	for _, n := range names {
		old, ok := s.decls[n]
		if !ok || old == src {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(old), "type") && strings.HasPrefix(strings.TrimSpace(src), "type") {
			return &CellError{Name: "RedeclaredType",
				Value:     fmt.Sprintf("type %s was already declared with a different definition; yaegi keeps the old one, so restart the kernel to change it (or use a new name)", n),
				Traceback: []string{"RedeclaredType: type " + n + " cannot be changed in a running session: restart the kernel"}}
		}
	}
	return nil
}

func (s *Session) recordDecl(seg segment, names []string) {
	s.declMu.Lock()
	defer s.declMu.Unlock()
	for _, n := range names {
		if _, ok := s.decls[n]; !ok {
			s.order = append(s.order, n)
		}
		s.decls[n] = seg.src
		s.declAt[n] = declPos{cell: s.cell, line: seg.line, col: seg.col}
	}
}

var defineRE = regexp.MustCompile(`(?m)^\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*:=`)

// recordInts keeps what a cell bound to integers, for the next cells' range loops.
func (s *Session) recordInts(ints map[string]bool) {
	if ints == nil {
		return
	}
	s.declMu.Lock()
	defer s.declMu.Unlock()
	s.ints = ints
}

func (s *Session) recordVars(src string) {
	s.declMu.Lock()
	defer s.declMu.Unlock()
	for _, m := range defineRE.FindAllStringSubmatch(src, -1) {
		for _, n := range strings.Split(m[1], ",") {
			if n = strings.TrimSpace(n); n != "_" && n != "" {
				s.vars[n] = true
				delete(s.varDef, n)
			}
		}
	}
	if !strings.Contains(src, "[") {
		return
	}
	full := wrapPrefix(segStmt) + src + "\n}"
	f, err := parser.ParseFile(token.NewFileSet(), "", full, parser.SkipObjectResolution)
	if err != nil || len(f.Decls) == 0 {
		return
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		text := full[int(st.Pos())-1 : int(st.End())-1]
		if !strings.Contains(text, "[") {
			continue
		}
		for _, n := range topDefined(text) {
			s.varDef[n] = text
		}
	}
}

// varDefSrc is rewriteEnv's varDef.
func (s *Session) varDefSrc(name string) string {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	return s.varDef[name]
}

// names returns the user's top-level names, sorted.
func (s *Session) names() []string {
	s.declMu.RLock()
	defer s.declMu.RUnlock()
	set := map[string]bool{}
	for n := range s.decls {
		if !strings.Contains(n, ".") {
			set[n] = true
		}
	}
	for n := range s.vars {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// EvalExpr evaluates one expression for user_expressions and returns its bundle.
func (s *Session) EvalExpr(ctx context.Context, expr string) (display.Data, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.eval(ctx, exprSource(expr))
	if err != nil {
		return display.Data{}, s.evalError(ctx, err, segment{kind: segStmt, src: expr, line: 1, col: 1})
	}
	d, ok := valueBundle(v)
	if !ok {
		return display.Data{MIME: map[string]any{"text/plain": ""}}, nil
	}
	return d, nil
}

// exprSource is the source EvalExpr hands yaegi for expr: in parentheses when it is an
// expression. yaegi picks its mode from a source's first token, and an expression that opens
// with "func" (`func() int { for {} }()`) was compiled as the declaration of a func main,
// which yaegi then ran again before every later cell: after such a user expression every cell
// hung, or silently repeated the expression's effects.
func exprSource(expr string) string {
	if isExpr(expr) {
		return "(" + expr + ")"
	}
	return expr
}

// newImports returns an import declaration for the imports not yet in the session ("" if none).
// Re-importing a path under the name it already has is a no-op; a different path under a name
// in use is left for yaegi to report.
func (s *Session) newImports(imps []importSpec) string {
	var lines []string
	for _, im := range imps {
		if s.imported[im.local()] == im.path {
			continue
		}
		if im.name != "" {
			lines = append(lines, fmt.Sprintf("import %s %q", im.name, im.path))
		} else {
			lines = append(lines, fmt.Sprintf("import %q", im.path))
		}
	}
	return strings.Join(lines, "\n")
}

func (s *Session) addImports(imps []importSpec) {
	for _, im := range imps {
		s.imported[im.local()] = im.path
	}
}

// frameSplitter is the interpreter's stderr: yaegi's panic frame reports ("L:C: panic:
// fn(...)", one per write) go to frames for the traceback, everything else (a cell's log
// package output) to os.Stderr, which is the running cell's stderr.
type frameSplitter struct{ frames *lockedBuffer }

func (w frameSplitter) Write(p []byte) (int, error) {
	if frameRE.Match(bytes.TrimSpace(p)) {
		return w.frames.Write(p)
	}
	return os.Stderr.Write(p)
}

// lockedBuffer collects yaegi's diagnostics; goroutines of a cell may write concurrently.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.buf)
	b.buf = b.buf[:0]
	return s
}

var frameRE = regexp.MustCompile(`^(\d+):(\d+): panic: (\S+?)\(\.\.\.\)$`)

// flushingSink delivers displays after the text printed before them.
type flushingSink struct {
	Output
	cap *capture
}

func (f flushingSink) Display(d display.Data, update bool) {
	f.cap.flush()
	f.Output.Display(d, update)
}

func (f flushingSink) Clear(wait bool) {
	f.cap.flush()
	f.Output.Clear(wait)
}

// runCaptured runs code with fds 1 and 2 captured into out and the cell's context and sink
// bound for display and compiled packages.
func (s *Session) runCaptured(ctx context.Context, code string, out Output) (*display.Data, *CellError) {
	cap, err := startCapture(out.Stream)
	if err != nil {
		return nil, &CellError{Name: "InternalError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	restore := display.Bind(ctx, flushingSink{out, cap})
	defer func() {
		if note := reopenStdio(); note != "" {
			out.Stream("stderr", note)
		}
	}()
	defer cap.stop()
	defer restore()
	return s.run(ctx, code)
}

// importError explains an import of a package that neither the standard library nor the
// kernel's compiled-in packages have.
func importError(err error, imps []importSpec) *CellError {
	path := ""
	for _, im := range imps {
		if strings.Contains(err.Error(), strconv.Quote(im.path)) {
			path = im.path
		}
	}
	msg := fmt.Sprintf("package %q is not in this kernel: it has the standard library, display, gpuarray, cluster, dataframe, gonum.org/v1/gonum/mat and stat, gonum.org/v1/plot (plot, plotter, plotutil, vg, vg/draw, vg/vgimg, font) and github.com/google/uuid compiled in; use the Go code of another module in a %%%%compile cell, where the go command fetches it", path)
	return &CellError{Name: "ImportError", Value: msg, Traceback: []string{"ImportError: " + msg}}
}
