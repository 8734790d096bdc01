package preload

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traefik/yaegi/extract"
)

// TestGeneratedTablesAreCurrent fails when an exported API changed without go generate.
func TestGeneratedTablesAreCurrent(t *testing.T) {
	for _, path := range Packages {
		ext := extract.Extractor{Dest: "preload"}
		var buf bytes.Buffer
		if _, err := ext.Extract(path, "", &buf); err != nil {
			t.Fatalf("extract %s: %v", path, err)
		}
		name := strings.NewReplacer("/", "-", ".", "_").Replace(path) + ".go"
		got, err := os.ReadFile(filepath.Join(".", name))
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./interp/preload)", name, err)
		}
		// The committed header names the command line; compare the tables only.
		if body(got) != body(buf.Bytes()) {
			t.Errorf("%s is stale: run go generate ./interp/preload", name)
		}
	}
}

func body(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "package "); i >= 0 {
		s = s[i:]
	}
	return s
}

func TestSymbolsLoaded(t *testing.T) {
	for _, p := range Packages {
		name := p[strings.LastIndexByte(p, '/')+1:]
		if len(Symbols[p+"/"+name]) == 0 {
			t.Errorf("no symbols for %s", p)
		}
	}
}
