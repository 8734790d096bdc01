package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

func TestBenchRead(t *testing.T) {
	dir := t.TempDir()
	x := gpuarray.Arange(0, 1200, 1).Reshape(30, 40)
	npyPath, zarrPath := filepath.Join(dir, "x.npy"), filepath.Join(dir, "x.zarr")
	if err := gpuarray.SaveNPY(npyPath, x); err != nil {
		t.Fatal(err)
	}
	if err := x.ToZarr(zarrPath, gpuarray.ZarrChunks(7, 40)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{npyPath, "--json", "--chunks", "10,40"}, {"--json", zarrPath}} {
		var out bytes.Buffer
		if err := benchRead(context.Background(), args, &out); err != nil {
			t.Fatal(err)
		}
		var r readResult
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if r.Sum != 1199*1200/2 || r.Bytes != 1200*8 || r.Seconds <= 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	if err := benchRead(context.Background(), []string{filepath.Join(dir, "missing.npy")}, &bytes.Buffer{}); err == nil {
		t.Fatal("a missing file was read")
	}
	if err := benchRead(context.Background(), []string{npyPath, "--backend", "tpu"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "unknown --backend") {
		t.Fatalf("--backend tpu: %v", err)
	}
	if gpuarray.GPUError() == nil { // the same sum through the pinned file-to-device path
		var out bytes.Buffer
		if err := benchRead(context.Background(), []string{npyPath, "--json", "--backend", "gpu"}, &out); err != nil {
			t.Fatal(err)
		}
		var r readResult
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Sum != 1199*1200/2 || r.Backend != "gpu" {
			t.Fatalf("--backend gpu: %q %v", out.String(), err)
		}
	}
}
