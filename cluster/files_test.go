package cluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestFileBackedArraysOnWorkers: the workers read the chunks of .npy and Zarr arrays
// themselves (a shared filesystem), and the results are bit-equal to the inline ones; a file
// the workers cannot read is an error naming the file.
func TestFileBackedArraysOnWorkers(t *testing.T) {
	dir := t.TempDir()
	x := gpuarray.NewRandomState(4).Normal(0, 1, gpuarray.Shape(300, 200), gpuarray.Chunks(70, 50))
	npyPath, zarrPath := filepath.Join(dir, "x.npy"), filepath.Join(dir, "x.zarr")
	if err := gpuarray.SaveNPY(npyPath, x); err != nil {
		t.Fatal(err)
	}
	if err := x.ToZarr(zarrPath, gpuarray.ZarrFormat(2), gpuarray.ZarrCompressor("blosc")); err != nil {
		t.Fatal(err)
	}
	want, err := standardized(x).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, cluster.Options{NWorkers: 2})
	for name, a := range map[string]*gpuarray.Array{"npy": gpuarray.LoadNPY(npyPath, gpuarray.Chunks(70, 50)), "zarr": gpuarray.OpenZarr(zarrPath)} {
		got, err := standardized(a).ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bitEqual(got, want) {
			t.Fatalf("%s: the cluster's result differs from the inline one", name)
		}
	}
	// Written through the cluster, read back inline.
	out := filepath.Join(dir, "y.npy")
	if err := gpuarray.SaveNPY(out, x.Mul(2), gpuarray.On(c)); err != nil {
		t.Fatal(err)
	}
	saved, err := gpuarray.LoadNPY(out).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := x.Mul(2).ToSlice(); !bitEqual(saved, all) {
		t.Fatal("the array saved through the cluster differs")
	}
	lazy := gpuarray.LoadNPY(npyPath)
	os.Remove(npyPath)
	if _, err := lazy.Sum().Float64(gpuarray.On(c)); err == nil || !strings.Contains(err.Error(), "x.npy") {
		t.Fatalf("a file the workers cannot read: %v", err)
	}
}
