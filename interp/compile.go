package interp

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// compiled is a process built from a %%compile cell: its funcs run there at compiled speed,
// called from interpreted cells through stubs that send the arguments over a pipe (gob).
type compiled struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	enc *gob.Encoder
	dec *gob.Decoder
}

type compiledReq struct {
	Fn   string
	Args []any
}

type compiledResp struct {
	Res []any
	Err string
}

// call runs fn in the compiled process.
func (c *compiled) call(fn string, args []any) ([]any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enc.Encode(compiledReq{fn, args}); err != nil {
		return nil, fmt.Errorf("call compiled %s: %w", fn, err)
	}
	var r compiledResp
	if err := c.dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("compiled %s: %w (the process ended)", fn, err)
	}
	if r.Err != "" {
		return nil, errors.New(r.Err)
	}
	return r.Res, nil
}

// compiledCall is the stubs' entry: it panics with the compiled side's error, as a call of
// the func itself would.
func (s *Session) compiledCall(h int, fn string, args ...any) []any {
	s.compMu.Lock()
	c := s.comps[h]
	s.compMu.Unlock()
	res, err := c.call(fn, args)
	if err != nil {
		panic(err.Error())
	}
	return res
}

// compileFunc is one func of a %%compile cell.
type compileFunc struct {
	name            string
	params, results []string // type source
	variadic        bool
}

// runCompile builds the cell's declarations with the Go toolchain into a process, and
// declares interpreted stubs of its top-level funcs that call into it.
func (s *Session) runCompile(ctx context.Context, body string, out Output) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return &CellError{Name: "CompileError", Value: "%%compile needs the Go toolchain: no go command on PATH (install Go 1.22 or later, or write the funcs in a plain cell, where they are interpreted)",
			Traceback: []string{"CompileError: %%compile needs the go command on PATH"}}
	}
	src := strings.TrimSpace(body)
	if !strings.HasPrefix(src, "package ") {
		src = "package main\n\n" + src
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "cell.go", src, 0)
	if err != nil {
		return syntaxError(err, 0, 0, body, segDecl)
	}
	text := func(n ast.Node) string { return src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset] }
	var funcs []compileFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name == "main" || fd.Name.Name == "init" || fd.Type.TypeParams != nil {
			continue
		}
		cf := compileFunc{name: fd.Name.Name}
		for _, p := range fd.Type.Params.List {
			t := p.Type
			if el, ok := t.(*ast.Ellipsis); ok {
				cf.variadic = true
				t = &ast.ArrayType{Elt: el.Elt}
			}
			for range max(1, len(p.Names)) {
				if at, ok := t.(*ast.ArrayType); ok && cf.variadic && at.Len == nil {
					cf.params = append(cf.params, "[]"+text(at.Elt))
				} else {
					cf.params = append(cf.params, text(t))
				}
			}
		}
		if fd.Type.Results != nil {
			for _, r := range fd.Type.Results.List {
				for range max(1, len(r.Names)) {
					cf.results = append(cf.results, text(r.Type))
				}
			}
		}
		funcs = append(funcs, cf)
	}
	if len(funcs) == 0 {
		return &CellError{Name: "CompileError", Value: "%%compile found no top-level func to call (methods and generic funcs are not exported to cells)",
			Traceback: []string{"CompileError: %%compile: declare funcs such as func Sum(n int) int { ... }"}}
	}
	dir, err := os.MkdirTemp("", "gpunotes-compile-")
	if err != nil {
		return &CellError{Name: "CompileError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module gpunotescompiled\n\ngo 1.22\n"), 0o644); err != nil {
		return &CellError{Name: "CompileError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	if err := os.WriteFile(filepath.Join(dir, "cell.go"), []byte(src), 0o644); err != nil {
		return &CellError{Name: "CompileError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	if err := os.WriteFile(filepath.Join(dir, "serve.go"), []byte(serverSrc(funcs, hasMain(f))), 0o644); err != nil {
		return &CellError{Name: "CompileError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	bin := filepath.Join(dir, "cell")
	build := exec.CommandContext(ctx, gobin, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if msg, err := build.CombinedOutput(); err != nil {
		text := strings.ReplaceAll(string(msg), "./", "")
		return &CellError{Name: "CompileError", Value: "go build: " + strings.TrimSpace(text), Traceback: append([]string{"CompileError: go build of the %%compile cell failed:"}, strings.Split(strings.TrimSpace(text), "\n")...)}
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return &CellError{Name: "CompileError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return &CellError{Name: "CompileError", Value: err.Error(), Traceback: []string{err.Error()}}
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return &CellError{Name: "CompileError", Value: "start the compiled cell: " + err.Error(), Traceback: []string{err.Error()}}
	}
	c := &compiled{cmd: cmd, enc: gob.NewEncoder(stdin), dec: gob.NewDecoder(bufio.NewReader(stdout))}
	s.compMu.Lock()
	s.comps = append(s.comps, c)
	h := len(s.comps) - 1
	s.compMu.Unlock()
	var stubs []string
	var names []string
	for _, cf := range funcs {
		stubs = append(stubs, stubSrc(h, cf))
		names = append(names, cf.name)
	}
	stubCell := strings.Join(stubs, "\n\n")
	if _, cerr := s.runCaptured(ctx, stubCell, out); cerr != nil {
		return cerr
	}
	out.Stream("stdout", fmt.Sprintf("compiled %s with %s; calls run in a compiled process\n", strings.Join(names, ", "), gobin))
	return nil
}

func hasMain(f *ast.File) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			return true
		}
	}
	return false
}

// serverSrc is the compiled process's loop: decode a call, run it, encode the results.
func serverSrc(funcs []compileFunc, userMain bool) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\tgngob \"encoding/gob\"\n\tgnfmt \"fmt\"\n\tgnio \"io\"\n\tgnos \"os\"\n\tgnbufio \"bufio\"\n)\n\n")
	b.WriteString("type gnReq struct {\n\tFn   string\n\tArgs []any\n}\n\ntype gnResp struct {\n\tRes []any\n\tErr string\n}\n\n")
	b.WriteString("func gnCall(r gnReq) (res []any, err string) {\n\tdefer func() {\n\t\tif p := recover(); p != nil {\n\t\t\terr = gnfmt.Sprint(\"panic: \", p)\n\t\t}\n\t}()\n\tswitch r.Fn {\n")
	for _, cf := range funcs {
		var args []string
		for i, p := range cf.params {
			a := fmt.Sprintf("r.Args[%d].(%s)", i, p)
			if cf.variadic && i == len(cf.params)-1 {
				a += "..."
			}
			args = append(args, a)
		}
		call := cf.name + "(" + strings.Join(args, ", ") + ")"
		fmt.Fprintf(&b, "\tcase %q:\n", cf.name)
		if len(cf.results) == 0 {
			fmt.Fprintf(&b, "\t\t%s\n\t\treturn nil, \"\"\n", call)
			continue
		}
		var rs []string
		for i := range cf.results {
			rs = append(rs, fmt.Sprintf("r%d", i))
		}
		fmt.Fprintf(&b, "\t\t%s := %s\n\t\treturn []any{%s}, \"\"\n", strings.Join(rs, ", "), call, strings.Join(rs, ", "))
	}
	b.WriteString("\t}\n\treturn nil, \"no compiled func \" + r.Fn\n}\n\n")
	entry := "main"
	if userMain {
		entry = "init"
	}
	fmt.Fprintf(&b, "func %s() {\n\tdec := gngob.NewDecoder(gnbufio.NewReader(gnos.Stdin))\n\tw := gnbufio.NewWriter(gnos.Stdout)\n\tenc := gngob.NewEncoder(w)\n\tfor {\n\t\tvar r gnReq\n\t\tif err := dec.Decode(&r); err != nil {\n\t\t\tif err != gnio.EOF {\n\t\t\t\tgnfmt.Fprintln(gnos.Stderr, \"compiled cell:\", err)\n\t\t\t}\n\t\t\tgnos.Exit(0)\n\t\t}\n\t\tres, e := gnCall(r)\n\t\tif err := enc.Encode(gnResp{res, e}); err != nil {\n\t\t\tgnfmt.Fprintln(gnos.Stderr, \"compiled cell:\", err)\n\t\t\tgnos.Exit(1)\n\t\t}\n\t\tw.Flush()\n\t}\n}\n", entry)
	return b.String()
}

// stubSrc is the interpreted func that stands for a compiled one.
func stubSrc(h int, cf compileFunc) string {
	var params, args []string
	for i, p := range cf.params {
		if cf.variadic && i == len(cf.params)-1 {
			params = append(params, fmt.Sprintf("a%d ...%s", i, strings.TrimPrefix(p, "[]")))
		} else {
			params = append(params, fmt.Sprintf("a%d %s", i, p))
		}
		args = append(args, fmt.Sprintf("a%d", i))
	}
	call := fmt.Sprintf("gnrt.CompiledCall(%d, %q%s)", h, cf.name, strings.Join(append([]string{""}, args...), ", "))
	res := ""
	if len(cf.results) == 1 {
		res = " " + cf.results[0]
	} else if len(cf.results) > 1 {
		res = " (" + strings.Join(cf.results, ", ") + ")"
	}
	var body string
	switch len(cf.results) {
	case 0:
		body = call
	default:
		var outs []string
		for i, r := range cf.results {
			outs = append(outs, fmt.Sprintf("r[%d].(%s)", i, r))
		}
		body = "r := " + call + "\n\treturn " + strings.Join(outs, ", ")
	}
	return fmt.Sprintf("func %s(%s)%s {\n\t%s\n}", cf.name, strings.Join(params, ", "), res, body)
}

// closeCompiled ends the processes of %%compile cells.
func (s *Session) closeCompiled() {
	s.compMu.Lock()
	defer s.compMu.Unlock()
	for _, c := range s.comps {
		if c != nil && c.cmd.Process != nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	}
	s.comps = nil
}
