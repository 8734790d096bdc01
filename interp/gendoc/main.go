// Command gendoc writes the doc index that interp's Inspect shows: for every package in yaegi's
// standard library table, in interp/stdlib (what later Go releases added) and the preloaded
// packages, "importpath.Name" -> doc comment.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/traefik/yaegi/stdlib"

	gostd "github.com/gpunotes/gpunotes/interp/stdlib"
)

// preloaded are the project's packages whose docs cells can inspect.
var preloaded = []string{
	"github.com/gpunotes/gpunotes/display",
	"github.com/gpunotes/gpunotes/display/widget",
	"github.com/gpunotes/gpunotes/gpuarray",
	"github.com/gpunotes/gpunotes/cluster",
	"github.com/gpunotes/gpunotes/cluster/slurm",
	"github.com/gpunotes/gpunotes/dataframe",
}

const maxDoc = 1500

func main() {
	out := flag.String("o", "docindex.json.gz", "output file")
	flag.Parse()
	paths := map[string]bool{}
	for _, table := range []map[string]map[string]reflect.Value{stdlib.Symbols, gostd.Symbols} {
		for key := range table {
			if i := strings.LastIndexByte(key, '/'); i > 0 {
				paths[key[:i]] = true
			}
		}
	}
	for _, p := range preloaded {
		paths[p] = true
	}
	index := map[string]string{}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		if err := addPackage(index, p); err != nil {
			log.Printf("skip %s: %v", p, err)
		}
	}
	b, err := json.Marshal(index)
	if err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("gendoc: %d symbols, %d bytes\n", len(index), buf.Len())
}

func addPackage(index map[string]string, path string) error {
	bp, err := build.Import(path, ".", 0)
	if err != nil {
		return err
	}
	if bp.Name == "main" {
		return nil
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	{
		dp, err := doc.NewFromFiles(fset, files, path)
		if err != nil {
			return err
		}
		put := func(n, d string) {
			d = strings.TrimSpace(d)
			if d == "" {
				return
			}
			if len(d) > maxDoc {
				d = d[:maxDoc] + "…"
			}
			index[path+"."+n] = d
		}
		for _, f := range dp.Funcs {
			put(f.Name, f.Doc)
		}
		for _, v := range append(dp.Vars, dp.Consts...) {
			for _, n := range v.Names {
				put(n, v.Doc)
			}
		}
		for _, t := range dp.Types {
			put(t.Name, t.Doc)
			for _, f := range t.Funcs {
				put(f.Name, f.Doc)
			}
			for _, m := range t.Methods {
				put(t.Name+"."+m.Name, m.Doc)
			}
			for _, v := range append(t.Vars, t.Consts...) {
				for _, n := range v.Names {
					put(n, v.Doc)
				}
			}
		}
	}
	return nil
}
