package interp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/traefik/yaegi/interp"
)

// fuzzSession is the session whose rewriting and diagnosis FuzzCellCompile exercises; cells
// are only compiled, never run, so it stays as New made it.
var fuzzSession = sync.OnceValues(func() (*Session, error) {
	return New(Options{Preload: []string{}})
})

// importPathRE finds the quoted import paths of a cell (a superset: any quoted path-like
// string), to give the compiling interpreter only those packages' symbols.
var importPathRE = regexp.MustCompile(`"([a-z0-9][a-z0-9/._]*)"`)

// FuzzCellCompile feeds mutated programs of testdata/programs through the cell compiler:
// splitting, rewriting and yaegi's compiler, then the diagnosis of whatever error or
// compiler crash comes out. Nothing is run: a mutated program may do anything. Every input
// must end in a compiled cell or a CellError; a panic of the project's code or a hang fails.
func FuzzCellCompile(f *testing.F) {
	progs, _ := filepath.Glob("testdata/programs/*.go")
	for _, p := range progs {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Fuzz(func(t *testing.T, code string) {
		if len(code) > 1<<14 {
			return
		}
		s, err := fuzzSession()
		if err != nil {
			t.Fatal(err)
		}
		if cerr := compileCell(s, code); cerr != nil && cerr.Name == "" {
			t.Fatalf("a CellError without a name: %+v", cerr)
		}
	})
}

// compileCell is Session.run without running: each segment is split, rewritten and compiled
// by a fresh interpreter that holds the symbols of the packages the cell names; an error or
// a crash of yaegi's compiler becomes the CellError the session would report.
func compileCell(s *Session, code string) *CellError {
	segs, err := splitCell(code)
	if err != nil {
		return syntaxError(err, 0, 0, code, segStmt)
	}
	i := interp.New(interp.Options{Stdout: io.Discard, Stderr: io.Discard})
	exports := interp.Exports{rtPath + "/rt": s.symbols[rtPath+"/rt"]}
	for _, m := range importPathRE.FindAllStringSubmatch(code, -1) {
		for key, syms := range s.symbols {
			if filepath.Dir(key) == m[1] {
				exports[key] = syms
			}
		}
	}
	if err := i.Use(exports); err != nil {
		panic(fmt.Sprintf("use symbols: %v", err))
	}
	if _, err := i.Eval("import gnrt " + fmt.Sprintf("%q", rtPath) + "\n" + preludeSrc + preludeSyncSrc); err != nil {
		panic(fmt.Sprintf("prelude: %v", err))
	}
	for _, seg := range segs {
		if err := parseSegment(seg); err != nil {
			return syntaxError(err, seg.line, seg.col, code, seg.kind)
		}
		typedSeg := seg
		typedSeg.src = s.typedFormatArgs(seg)
		src, _, err := rewriteGo(typedSeg, s.rewriteEnv())
		if err != nil {
			return syntaxError(err, seg.line, seg.col, code, seg.kind)
		}
		if seg.kind == segDecl {
			if _, _, err := declNames(seg); err != nil {
				return syntaxError(err, seg.line, seg.col, code, seg.kind)
			}
			src = guardMakes(src)
		} else {
			src = guardLeadingFunc(wrapBlocks(guardMakes(src)))
		}
		if cerr := compileSegment(s, i, seg, src); cerr != nil {
			return cerr
		}
	}
	return nil
}

// compileSegment compiles src, the rewritten seg, turning a crash of yaegi's compiler into
// the session's compile error for it.
func compileSegment(s *Session, i *interp.Interpreter, seg segment, src string) (cerr *CellError) {
	crashed := false
	var p interp.Panic
	func() {
		defer func() {
			if r := recover(); r != nil {
				crashed = true
				p = interp.Panic{Value: r, Stack: debug.Stack()}
			}
		}()
		_, err := i.Compile(src)
		if err != nil {
			cerr = s.evalError(context.Background(), err, seg)
		}
	}()
	if crashed {
		return s.compileCrash(p, seg)
	}
	return cerr
}
