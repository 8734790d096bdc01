package gpuarray

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestGPUFileBacked: arrays read from .npy and Zarr files compute on the GPU (chunks read on
// the host, then copied like other inputs) to the CPU's values, and ToZarr writes what a GPU
// computed.
func TestGPUFileBacked(t *testing.T) {
	needGPU(t)
	dir := t.TempDir()
	x := NewRandomState(12).Normal(1, 3, Shape(1000, 700), Chunks(250, 350))
	npyPath, zarrPath := filepath.Join(dir, "x.npy"), filepath.Join(dir, "x.zarr")
	if err := SaveNpy(npyPath, x); err != nil {
		t.Fatal(err)
	}
	if err := x.ToZarr(zarrPath, ZarrCompressor("blosc")); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]*Array{"npy": LoadNpy(npyPath, Chunks(250, 350)), "zarr": OpenZarr(zarrPath)} {
		y := a.Mul(2).Add(a.Mean(0))
		want, err := y.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		got, err := y.ToSlice(OnGPU())
		if err != nil {
			t.Fatalf("%s on the GPU: %v", name, err)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%s element %d: GPU %v, CPU %v", name, i, got[i], want[i])
			}
		}
		s, err := a.Sum().Float64(OnGPU())
		ws, _ := a.Sum().Float64()
		if err != nil || math.Abs(s-ws) > 1e-9*math.Abs(ws) {
			t.Fatalf("%s sum on the GPU %v (%v), CPU %v", name, s, err, ws)
		}
	}
	out := filepath.Join(dir, "y.zarr")
	if err := x.Mul(3).ToZarr(out, ZarrCompute(OnGPU())); err != nil {
		t.Fatal(err)
	}
	got, err := OpenZarr(out).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := x.Mul(3).ToSlice()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("written from the GPU: element %d is %v, want %v", i, got[i], want[i])
		}
	}
}

// TestGPUFileStreamsThroughPinnedBuffers: a chunk larger than one pinned staging piece (64 MiB)
// of a C-order file (float64 in both byte orders, float32), whole and cut by a slice, goes from
// the file to the device in pieces and computes the CPU's values.
func TestGPUFileStreamsThroughPinnedBuffers(t *testing.T) {
	needGPU(t)
	dir := t.TempDir()
	x := NewRandomState(21).Normal(-2, 5, Shape(3100, 3000), Chunks(3100, 3000)) // 74 MB per chunk
	le := filepath.Join(dir, "x.npy")
	if err := SaveNpy(le, x); err != nil {
		t.Fatal(err)
	}
	v, err := x.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8*len(v))
	for i, f := range v {
		binary.BigEndian.PutUint64(b[8*i:], math.Float64bits(f))
	}
	be := filepath.Join(dir, "x.be")
	if err := os.WriteFile(be, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f4 := filepath.Join(dir, "x32.npy")
	if err := SaveNpy(f4, x.AsType(Float32)); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]*Array{
		"npy":               LoadNpy(le, Chunks(3100, 3000)),
		"npy float32":       LoadNpy(f4, Chunks(3100, 3000)),
		"raw big-endian":    FromFile(be, ">f8", []int{3100, 3000}, 0, Chunks(3100, 3000)),
		"npy, rows 7:3093":  LoadNpy(le, Chunks(3100, 3000)).Slice(Span(7, 3093)),
		"raw, columns 1:-1": FromFile(be, ">f8", []int{3100, 3000}, 0, Chunks(3100, 3000)).Slice(All(), Span(1, -1)),
	} {
		y := a.Mul(a).Sub(a.Mean(0))
		want, err := y.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		got, err := y.ToSlice(OnGPU())
		if err != nil {
			t.Fatalf("%s on the GPU: %v", name, err)
		}
		tol := 1e-12
		if a.DType() == Float32 {
			tol = 1e-5 // float32 arithmetic may round differently on the device
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%s element %d: GPU %v, CPU %v", name, i, got[i], want[i])
			}
		}
	}
}
