package dataframe_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// readJSON decodes the JSON file at path (what a Python script wrote) into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// runPandas runs a pandas script with args in dir, where it writes its input frames
// (Parquet) and want.json, and decodes want.json into want.
func runPandas(t *testing.T, dir, script string, want any, args ...string) {
	t.Helper()
	runPython(t, dir, script, args...)
	readJSON(t, filepath.Join(dir, "want.json"), want)
}
