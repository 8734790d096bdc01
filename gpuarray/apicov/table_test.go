package apicov_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/apicov"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
)

// exported returns gpuarray's exported package functions ("Fft") and methods of *Array
// ("(*Array).Sum"), read from its source.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			if fd.Recv == nil {
				names[fd.Name.Name] = true
				continue
			}
			if st, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := st.X.(*ast.Ident); ok && id.Name == "Array" {
					names["(*Array)."+fd.Name.Name] = true
				}
			}
		}
	}
	return names
}

// TestTableNamesExist fails when a gpunotes name of the table is not in gpuarray's API, and
// when an exported function that follows the naming rule for a missing row exists.
func TestTableNamesExist(t *testing.T) {
	api := exported(t)
	if len(api) < 100 {
		t.Fatalf("read only %d exported names of gpuarray", len(api))
	}
	for _, r := range apicov.Rows {
		if r.Go != "" {
			if !api[r.Go] {
				t.Errorf("%s: %s is not in gpuarray's exported API", r.API, r.Go)
			}
			if r.GPU == "" {
				t.Errorf("%s: no GPU column", r.API)
			}
			continue
		}
		guess := ""
		for _, part := range strings.Split(r.API, "_") {
			guess += strings.ToUpper(part[:1]) + part[1:]
		}
		if api[guess] || api["(*Array)."+guess] {
			t.Errorf("%s: the table says missing, but gpuarray has %s", r.API, guess)
		}
	}
}

// TestREADMECurrent fails when the README's coverage section is not what the table generates.
func TestREADMECurrent(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := apicov.Splice(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(b) {
		t.Fatal("README.md's Array API coverage is stale: run go generate ./gpuarray/apicov")
	}
}

func TestCountsDistinctFunctions(t *testing.T) {
	have, total := apicov.Count()
	if total != 160 || have <= 0 || have > total {
		t.Fatalf("coverage %d of %d; the standard 2023.12 has 160 distinct functions", have, total)
	}
}

// TestElementwiseRowsFollowTheOpTable: the elementwise row of an op of gpuarray/optable (those
// of the standard) says "fused kernel" exactly when the table gives the op a GPU body for real
// operands (the README's elementwise table says which dtypes run where).
func TestElementwiseRowsFollowTheOpTable(t *testing.T) {
	rows := map[string]apicov.Row{}
	for _, r := range apicov.Rows {
		if r.Group == "elementwise" {
			rows[r.API] = r
		}
	}
	for _, o := range optable.Ops {
		r, ok := rows[o.Name]
		if !ok {
			continue // not in the 2023.12 standard (nextafter, reciprocal)
		}
		want := apicov.Host
		if o.PTX != "" || o.PTXInt != "" {
			want = apicov.Fused
		}
		if r.GPU != want {
			t.Errorf("%s: the row says %q, the op table %q", o.Name, r.GPU, want)
		}
	}
}

// TestNDArrayMethods fails when NumPy's ndarray has a method or attribute that NDArrayRows
// does not list (read from the NumPy of GPUNOTES_PYTHON when set, which must also match the
// committed ndarray_methods.txt), when a row names a method *Array does not have, and when a
// row without a method gives no reason.
func TestNDArrayMethods(t *testing.T) {
	b, err := os.ReadFile("ndarray_methods.txt")
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Fields(string(b))
	if py := os.Getenv("GPUNOTES_PYTHON"); py != "" {
		out, err := exec.Command(py, "-c", apicov.NDArrayListCommand).Output()
		if err != nil {
			t.Fatalf("%s -c %q: %v", py, apicov.NDArrayListCommand, err)
		}
		if got := strings.Fields(string(out)); !slices.Equal(got, names) {
			t.Errorf("ndarray_methods.txt is not this NumPy's list: regenerate it with\n%s -c %q > gpuarray/apicov/ndarray_methods.txt\nNumPy lists %v", py, apicov.NDArrayListCommand, got)
			names = got
		}
	}
	api := exported(t)
	rows := map[string]apicov.NDArrayRow{}
	for _, r := range apicov.NDArrayRows {
		rows[r.NumPy] = r
		if r.Go == "" {
			if r.Note == "" {
				t.Errorf("ndarray.%s: no method and no reason", r.NumPy)
			}
			continue
		}
		if !api["(*Array)."+r.Go] {
			t.Errorf("ndarray.%s: (*Array).%s is not in gpuarray's exported API", r.NumPy, r.Go)
		}
	}
	have := 0
	for _, n := range names {
		r, ok := rows[n]
		if !ok {
			t.Errorf("ndarray.%s has no row in apicov.NDArrayRows", n)
			continue
		}
		if r.Go != "" {
			have++
		}
		delete(rows, n)
	}
	for n := range rows {
		t.Errorf("apicov.NDArrayRows lists ndarray.%s, which NumPy's ndarray does not have", n)
	}
	t.Logf("%d of NumPy's %d ndarray methods and attributes are *Array methods", have, len(names))
}
