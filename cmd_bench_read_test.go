package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
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

// TestBenchReadParquet: bench read of a Parquet dataset persists it and sums its first numeric
// column (on a GPU too, where one is).
func TestBenchReadParquet(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "ds")
	v := make([]int64, 1000)
	for i := range v {
		v[i] = int64(i)
	}
	f := dataframe.FromSlices([]string{"s", "v", "b"}, []any{make([]string, 1000), v, make([]bool, 1000)}, dataframe.NPartitions(3))
	if err := f.ToParquet(ds); err != nil {
		t.Fatal(err)
	}
	backends := []string{"cpu"}
	if gpuarray.GPUError() == nil {
		backends = append(backends, "gpu")
	}
	for _, b := range backends {
		var out bytes.Buffer
		if err := benchRead(context.Background(), []string{ds, "--json", "--backend", b}, &out); err != nil {
			t.Fatal(err)
		}
		var r readResult
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if r.Format != "parquet" || r.Rows != 1000 || r.Columns != 3 || r.Sum != 999*1000/2 || r.Chunks[0] != 3 || r.Bytes != 1000*(8+8+1) {
			t.Fatalf("--backend %s: %+v", b, r)
		}
		if b == "gpu" && !strings.Contains(r.Steps, "pinned buffers") {
			t.Fatalf("--backend gpu: path %q", r.Steps)
		}
	}
}
