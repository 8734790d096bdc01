package main

import (
	"github.com/gpunotes/gpunotes/gpuarray/optable"
	"go/format"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesCurrent fails when the files and README rows the table generates differ
// from what is committed (run go generate ./gpuarray/optable).
func TestGeneratedFilesCurrent(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for path, src := range map[string]string{
		"gpuarray/expr/ops_gen.go":        exprFile(),
		"gpuarray/cpu/ops_gen.go":         cpuFile(),
		"gpuarray/cuda/ptx/ptxops_gen.go": cudaFile(),
		"gpuarray/ops_gen.go":             apiFile(),
	} {
		want, err := format.Source([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s is stale (%v): run go generate ./gpuarray/optable", path, err)
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want, err := readmeWith(string(readme)); err != nil || want != string(readme) {
		t.Errorf("README.md's elementwise table is stale (%v): run go generate ./gpuarray/optable", err)
	}
}

// TestEveryOpHasAGPUBody fails when an op of the table lacks a GPU body for a kind of operand
// the CPU computes it for (float and bool, integer, complex) without saying why in Host.
func TestEveryOpHasAGPUBody(t *testing.T) {
	for _, o := range optable.Ops {
		kinds, gpu := lanes(o)
		if len(kinds) == 0 {
			t.Errorf("%s: no CPU expression at all", o.Name)
		}
		for i, k := range kinds {
			if !gpu[i] && o.Host == "" {
				t.Errorf("%s: %s operands have no GPU body and Host gives no reason", o.Name, k)
			}
		}
		if o.Host != "" && gpuKinds(o) == "all dtypes" {
			t.Errorf("%s: Host says %q, but every kind of operand has a GPU body", o.Name, o.Host)
		}
	}
}
