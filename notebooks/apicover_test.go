package notebooks_test

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/scanner"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/notebooks"
)

// notInNotebooks lists the exported gpuarray names that no notebook calls by name, each with
// why a cell cannot or need not name it. Keys are "Func" or "Type.Method". An entry whose
// value starts with "via " is accepted only when the notebooks contain the text after "via "
// (the entry point that calls the method for the user).
var notInNotebooks = map[string]string{
	"TargetOf":              "plumbing for package dataframe (where a Compute option runs, for its columns); cells use dataframe",
	"WrapValues":            "plumbing for package dataframe (a column's host values as an array); cells use dataframe",
	"Array.Values":          "plumbing for package dataframe (an array's host values); cells use dataframe",
	"GroupAggregate":        "plumbing for package dataframe (GroupBy's dense-code tables on a GPU); cells use dataframe",
	"HashJoin":              "plumbing for package dataframe (Merge's device hash join); cells use dataframe's Merge",
	"HashPartition":         "plumbing for package dataframe (hash partitions computed on a GPU); cells use dataframe",
	"TakeOnGPU":             "plumbing for package dataframe (GroupBy's gathers of sorted rows on a GPU); cells use dataframe",
	"TakeRowsOnGPU":         "plumbing for package dataframe (Merge's output gathered on a GPU); cells use dataframe's Merge",
	"JoinOnGPU":             "plumbing for package dataframe (Merge's join on keys held on a GPU, GPUNOTES_GPU_JOIN=device); cells use dataframe's Merge",
	"TakeRowsAtOnGPU":       "plumbing for package dataframe (Merge's output gathered at rows held on a GPU); cells use dataframe's Merge",
	"PersistStrings":        "plumbing for package dataframe (a string heap held on a GPU); cells use dataframe's Persist",
	"DeviceStrings.Match":   "plumbing for package dataframe (str functions on a GPU); cells use dataframe's Col(...).StartsWith",
	"DeviceStrings.EqualAt": "plumbing for package dataframe (row-wise string equality on a GPU); cells use dataframe",
	"KeptChunks":            "plumbing for the cluster's shuffle (an array's chunks on workers); cells use Persist",
	"NewUploader":           "plumbing for package dataframe (Parquet row groups streamed to a GPU); cells use dataframe's ReadParquet",
	"Uploader.Upload":       "plumbing for package dataframe (Parquet row groups streamed to a GPU); cells use dataframe's ReadParquet",
	"HeldArray":             "plumbing for package dataframe (a column of uploaded chunks); cells use dataframe's ReadParquet",
	"DeviceChunk.Free":      "plumbing for package dataframe (a chunk uploaded to a GPU); cells use dataframe's ReadParquet",
	"FromKept":              "plumbing for the cluster's shuffle (chunks it kept on workers as an array); cells use Persist",
	"WhereAll":              "plumbing for package dataframe (where a frame's columns are held, counted once); cells use Frame.Where",
	// encoding/gob calls these through the GobEncoder interface; a user writes gob.NewEncoder.
	"Array.GobEncode": "via gob.NewEncoder",
	"Array.GobDecode": "via gob.NewDecoder",
	// errors.Is and errors.As call Unwrap; a user never does.
	"BlockError.Unwrap": "via errors.Is(blockErr",
}

// clusterNotInNotebooks is notInNotebooks for cluster.
var clusterNotInNotebooks = map[string]string{
	// The kernel and `gpunotes worker` install these at start-up; a cell never does.
	"RunWorker":                 "`gpunotes worker` runs it (main)",
	"SetChunkExecutor":          "installed by the cluster package itself for workers",
	"SetSourceResolver":         "the kernel installs its session's SourceOf",
	"SetResultTypeResolver":     "the kernel installs its session's ResultTypes",
	"SetSchedulerEvaluator":     "the kernel and `gpunotes scheduler` install it",
	"Client.Keep":               "via Persist(gpuarray.On(",
	"Client.Holds":              "via Persist(gpuarray.On(",
	"Client.ShuffleColumns":     "plumbing for frames' shuffles on a cluster (cluster/shuffle_test.go)",
	"Client.Run":                "via gpuarray.On(c)",
	"Client.GroupPartials":      "plumbing for frames' GroupBy on a cluster (cluster/groupby_test.go)",
	"Client.GroupPartialsSplit": "plumbing for frames' GroupBy with SplitOut on a cluster (cluster/groupsplit_test.go)",
	"Client.JoinColumns":        "plumbing for frames' merges on a cluster (dataframe/merge_cluster_test.go)",
	"Client.SortColumns":        "plumbing for frames' sorts on a cluster (dataframe/sort_cluster_test.go)",
	"Client.DistinctColumns":    "plumbing for DropDuplicates on a cluster (dataframe/sort_cluster_test.go)",

	// Frame.Shuffle on a cluster calls it for Path's note of where the rows were partitioned.
	"Client.ShuffleColumnsNote": "plumbing for frames' shuffles on a cluster (cluster/frame_shuffle_test.go)",
	// TLS needs certificate files that no notebook can make here; tls_test.go runs them.
	"ConnectTLS":            "needs a scheduler's certificate (cluster/tls_test.go)",
	"ConnectTLSContext":     "needs a scheduler's certificate (cluster/tls_test.go)",
	"TLSFiles.Args":         "needs certificate files (cluster/tls_test.go)",
	"TLSFiles.ClientConfig": "needs certificate files (cluster/tls_test.go)",
	"TLSFiles.Enabled":      "needs certificate files (cluster/tls_test.go)",
	"TLSFiles.ServerConfig": "needs certificate files (cluster/tls_test.go)",
}

// exportedAPI returns the exported package functions ("Name") and methods ("Type.Name") of the
// Go package in dir, read from its source (tests excluded).
func exportedAPI(t *testing.T, dir string) []string {
	t.Helper()
	// The package's files for this platform, as the go command picks them (build tags too).
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, bp.ImportPath)
	if err != nil {
		t.Fatalf("doc of %s: %v", dir, err)
	}
	// A deprecated spelling stays callable for a release, but notebooks show the new one.
	deprecated := func(f *doc.Func) bool {
		return strings.HasPrefix(f.Doc, "Deprecated: ") || strings.Contains(f.Doc, "\nDeprecated: ")
	}
	var names []string
	for _, f := range d.Funcs {
		if !deprecated(f) {
			names = append(names, f.Name)
		}
	}
	for _, ty := range d.Types {
		for _, f := range ty.Funcs {
			if !deprecated(f) {
				names = append(names, f.Name)
			}
		}
		for _, m := range ty.Methods {
			if !deprecated(m) {
				names = append(names, ty.Name+"."+m.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// usedNames scans Go code and returns the package functions called as pkg.Name and the
// method names used as x.Name for any other x. Comments (the markdown cells) and strings do
// not count.
func usedNames(src []byte, pkg string) (funcs, methods map[string]bool) {
	funcs, methods = map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(src)), src, nil, 0)
	var prev [2]string // the two tokens before the current one
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.IDENT && prev[1] == "." {
			if prev[0] == pkg {
				funcs[lit] = true
			} else {
				methods[lit] = true
			}
		}
		text := lit
		if tok != token.IDENT {
			text = tok.String()
		}
		prev[0], prev[1] = prev[1], text
	}
	return funcs, methods
}

// TestNotebooksUseGpuarrayAPI fails naming every exported function and method of gpuarray
// that no notebook cell uses: each is shown to a user and run by `go test ./notebooks`.
// Methods are matched by name (cells are not type-checked), so x.Sum in any cell covers
// Array.Sum.
func TestNotebooksUseGpuarrayAPI(t *testing.T) {
	checkAPICovered(t, "gpuarray", "../gpuarray", 100, notInNotebooks)
}

// TestNotebooksUseClusterAPI is the same for cluster.
func TestNotebooksUseClusterAPI(t *testing.T) {
	checkAPICovered(t, "cluster", "../cluster", 60, clusterNotInNotebooks)
}

// checkAPICovered fails naming every exported function and method of the package pkg (in
// dir) that no notebook uses and allow does not excuse.
func checkAPICovered(t *testing.T, pkg, dir string, atLeast int, allow map[string]string) {
	srcs, err := notebooks.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	funcs, methods := map[string]bool{}, map[string]bool{}
	var all strings.Builder
	for _, src := range srcs {
		f, m := usedNames(src, pkg)
		for k := range f {
			funcs[k] = true
		}
		for k := range m {
			methods[k] = true
		}
		all.Write(src)
	}
	api := exportedAPI(t, dir)
	if len(api) < atLeast {
		t.Fatalf("found only %d exported %s functions and methods: %v", len(api), pkg, api)
	}
	known := map[string]bool{}
	var missing []string
	for _, name := range api {
		known[name] = true
		typ, meth, isMethod := strings.Cut(name, ".")
		used := funcs[typ]
		if isMethod {
			used = methods[meth]
		}
		if used {
			if why, ok := allow[name]; ok {
				t.Errorf("%s is allow-listed (%q) but a notebook uses it: remove the entry", name, why)
			}
			continue
		}
		why, ok := allow[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if via, ok := strings.CutPrefix(why, "via "); ok && !strings.Contains(all.String(), via) {
			t.Errorf("%s is allow-listed as used via %s, but no notebook uses %s", name, via, via)
		}
	}
	for name := range allow {
		if !known[name] {
			t.Errorf("allow-list entry %s is not an exported %s function or method", name, pkg)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d exported %s functions and methods are used in no notebook (add a cell to a notebook in src/, or an allow-list entry saying why none can run here):\n%s",
			len(missing), pkg, strings.Join(missing, "\n"))
	}
}

func TestUsedNames(t *testing.T) {
	src := "// %% [markdown]\n// gpuarray.InComment x.InComment\nx := gpuarray.Zeros(gpuarray.Shape(3)).Sum()\ns := \"gpuarray.InString\"\nfmt.Println(s)\n"
	funcs, methods := usedNames([]byte(src), "gpuarray")
	for _, f := range []string{"Zeros", "Shape"} {
		if !funcs[f] {
			t.Errorf("function %s not found in %v", f, funcs)
		}
	}
	for _, m := range []string{"Sum", "Println"} {
		if !methods[m] {
			t.Errorf("method %s not found in %v", m, methods)
		}
	}
	if funcs["InComment"] || methods["InComment"] || funcs["InString"] || methods["Zeros"] || funcs["Sum"] {
		t.Errorf("comments, strings or the wrong kind counted: funcs %v methods %v", funcs, methods)
	}
}
