package dataframe

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUParquetReadStreamsToDevice reads a Parquet dataset of every column type on a GPU,
// with Compute and with Persist: the columns are held on the GPU, Path names the pipeline,
// and the frame equals the CPU's read bit for bit; a filter and a sum on the GPU over the
// held columns equal the CPU's. One partition of 9.4 million rows (75 MB of float64s) is
// larger than a pinned staging piece (64 MiB), so its copy goes in pieces.
func TestGPUParquetReadStreamsToDevice(t *testing.T) {
	needGPU(t)
	dir := filepath.Join(t.TempDir(), "ds")
	if err := pipeFrame(200_003, 7).ToParquet(dir); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big.parquet")
	if err := pipeFrame(9_400_000, 1).Select("f64", "i64", "b").ToParquet(big); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, big} {
		want, err := ReadParquet(path).Compute()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadParquet(path).Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatalf("%s on the GPU: %v", path, err)
		}
		if p := got.Path(); !strings.Contains(p, "through pinned buffers") || !strings.Contains(p, "gpu 0") {
			t.Fatalf("Path %q does not name the pipeline to gpu 0", p)
		}
		if w := got.Where(); !strings.Contains(w, "gpu") {
			t.Fatalf("the read's columns are held on %q", w)
		}
		sameFrames(t, path+" computed on the GPU", got, want, 0)
		held := ReadParquet(path).Persist(gpuarray.OnGPU())
		if err := held.Err(); err != nil {
			t.Fatal(err)
		}
		if w := held.Where(); !strings.Contains(w, "gpu") {
			t.Fatalf("the persisted read is held on %q", w)
		}
		sameFrames(t, path+" persisted on the GPU", held, want, 0)
		q := func(f *Frame) *Frame { return f.Filter(Col("b").Not()).Sum("f64", "i64") }
		gs, err := q(held).Compute(gpuarray.OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		ws, err := q(want).Compute()
		if err != nil {
			t.Fatal(err)
		}
		// f64 is positive: summed in any order, n values lose at most n·2^-52 of the sum
		// relative, 2e-9 for 9.4 million (the tree sums of both sides lose far less).
		sameFrames(t, path+" filtered sum", gs, ws, 3e-9)
	}
}
