package main

import (
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
		"gpuarray/expr/ops_gen.go":    exprFile(),
		"gpuarray/cpu/ops_gen.go":     cpuFile(),
		"gpuarray/cuda/ptxops_gen.go": cudaFile(),
		"gpuarray/ops_gen.go":         apiFile(),
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
