// Command genstd writes the yaegi symbol tables of the standard-library names that yaegi's
// stdlib package lacks, one file per package, for the toolchain that runs it: every package
// of `go list std` that yaegi's stdlib would hold (no internal, vendor, cmd, unsafe, syscall
// or cgo-only package), and of each only its exported names that yaegi's table has not. The
// files themselves are written by yaegi's extract package, restricted to those names.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/traefik/yaegi/extract"
	"github.com/traefik/yaegi/stdlib"
)

// skipped are std packages yaegi's table leaves out on purpose, or that no cell can use:
// importing them changes how the kernel is built or run.
var skipped = map[string]bool{
	"unsafe":              true, // yaegi's own unsafe package, opt-in
	"runtime/cgo":         true,
	"runtime/race":        true,
	"runtime/msan":        true,
	"runtime/asan":        true,
	"plugin":              true, // needs cgo
	"crypto/tls/fipsonly": true, // needs a boringcrypto build
}

// filePrefix names the generated files, so that a new run removes the old ones first.
const filePrefix = "std_"

func main() {
	dir := flag.String("dir", ".", "directory of the generated package")
	flag.Parse()
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		log.Fatalf("go list std: %v", err)
	}
	old, _ := filepath.Glob(filepath.Join(*dir, filePrefix+"*.go"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			log.Fatal(err)
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", nil)
	var pkgs, names int
	for _, p := range strings.Fields(string(out)) {
		if !wanted(p) {
			continue
		}
		pkg, err := imp.Import(p)
		if err != nil {
			// A package whose files all need a build tag or experiment this build lacks.
			log.Printf("skip %s: %v", p, err)
			continue
		}
		missing := missingNames(pkg)
		if len(missing) == 0 {
			continue
		}
		include := make([]string, len(missing))
		for i, n := range missing {
			include[i] = "^" + regexp.QuoteMeta(n) + "$"
		}
		ext := extract.Extractor{Dest: "stdlib", Include: include}
		var buf bytes.Buffer
		if _, err := ext.Extract(p, "", &buf); err != nil {
			log.Fatalf("extract %s: %v", p, err)
		}
		name := filePrefix + strings.NewReplacer("/", "_", ".", "_").Replace(p) + ".go"
		src := bytes.Replace(buf.Bytes(), []byte("'yaegi extract "+p+"'"), []byte("genstd ("+p+")"), 1)
		if err := os.WriteFile(filepath.Join(*dir, name), src, 0o644); err != nil {
			log.Fatal(err)
		}
		pkgs++
		names += len(missing)
	}
	fmt.Printf("genstd: %d names in %d packages\n", names, pkgs)
}

func wanted(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == "internal" || part == "vendor" {
			return false
		}
	}
	return !skipped[p] && !strings.HasPrefix(p, "cmd/") && p != "syscall" && !strings.HasPrefix(p, "syscall/")
}

// missingNames returns the exported names of pkg that yaegi can take as symbols (no generic
// functions or types, no constraint interfaces) and that yaegi's table lacks.
func missingNames(pkg *types.Package) []string {
	have := stdlib.Symbols[pkg.Path()+"/"+path.Base(pkg.Name())]
	var missing []string
	scope := pkg.Scope()
	for _, n := range scope.Names() {
		o := scope.Lookup(n)
		if !o.Exported() {
			continue
		}
		if _, ok := have[n]; ok {
			continue
		}
		switch o := o.(type) {
		case *types.Func:
			if o.Type().(*types.Signature).TypeParams().Len() > 0 {
				continue
			}
		case *types.TypeName:
			if named, ok := o.Type().(*types.Named); ok && named.TypeParams().Len() > 0 {
				continue
			}
			if it, ok := o.Type().Underlying().(*types.Interface); ok && it.NumMethods() == 0 && it.NumEmbeddeds() > 0 {
				continue // a constraint
			}
			if o.IsAlias() {
				if named, ok := types.Unalias(o.Type()).(*types.Named); ok && named.TypeParams().Len() > 0 {
					continue
				}
			}
		}
		missing = append(missing, n)
	}
	sort.Strings(missing)
	return missing
}
