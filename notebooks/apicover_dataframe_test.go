package notebooks_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/notebooks"
)

// dataframeNotInNotebooks lists the exported dataframe names that no notebook calls by name,
// with why (the same rules as notInNotebooks).
var dataframeNotInNotebooks = map[string]string{}

// TestNotebooksUseDataframeAPI fails naming every exported function and method of dataframe
// that no notebook cell uses, as TestNotebooksUseGpuarrayAPI does for gpuarray.
func TestNotebooksUseDataframeAPI(t *testing.T) {
	srcs, err := notebooks.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	funcs, methods := map[string]bool{}, map[string]bool{}
	for _, src := range srcs {
		f, m := usedNames(src, "dataframe")
		for k := range f {
			funcs[k] = true
		}
		for k := range m {
			methods[k] = true
		}
	}
	api := exportedAPI(t, "../dataframe")
	if len(api) < 50 {
		t.Fatalf("found only %d exported dataframe functions and methods: %v", len(api), api)
	}
	var missing []string
	for _, name := range api {
		typ, meth, isMethod := strings.Cut(name, ".")
		used := funcs[typ]
		if isMethod {
			used = methods[meth]
		}
		if _, ok := dataframeNotInNotebooks[name]; !used && !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d exported dataframe functions and methods are used in no notebook:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}
