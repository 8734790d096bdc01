package zarr

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

func TestWriteReadBox(t *testing.T) {
	shape, chunks := []int{13, 7, 5}, []int{4, 3, 5}
	vals := make([]byte, 13*7*5*4)
	for i := 0; i < 13*7*5; i++ {
		binary.NativeEndian.PutUint32(vals[4*i:], math.Float32bits(float32(i)*0.5-3))
	}
	for _, f := range []int{2, 3} {
		for _, comp := range []string{"none", "zstd", "gzip", "blosc", "blosc-zstd"} {
			dir := t.TempDir()
			a, err := New(f, shape, chunks, elem.MustParse("<f4"), comp)
			if err != nil {
				t.Fatal(err)
			}
			g := a.Grid()
			eachIndex([]int{0, 0, 0}, []int{g[0] - 1, g[1] - 1, g[2] - 1}, func(idx []int) bool {
				origin, size := make([]int, 3), make([]int, 3)
				for d := range idx {
					origin[d] = idx[d] * chunks[d]
					size[d] = min(chunks[d], shape[d]-origin[d])
				}
				box := make([]byte, 4*size[0]*size[1]*size[2])
				copyBox(box, 0, cStrides(size), vals, origin[0]*35+origin[1]*5+origin[2], cStrides(shape), size, 4)
				if err = a.WriteBox(dir, idx, box); err != nil {
					return false
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.WriteMeta(dir); err != nil {
				t.Fatal(err)
			}
			b, err := Open(dir)
			if err != nil {
				t.Fatalf("v%d %s: %v", f, comp, err)
			}
			got, err := b.ReadBox(dir, []int{0, 0, 0}, shape)
			if err != nil {
				t.Fatalf("v%d %s: %v", f, comp, err)
			}
			if !bytes.Equal(got, vals) {
				t.Fatalf("v%d %s: the array read back differs", f, comp)
			}
			part, err := b.ReadBox(dir, []int{3, 2, 1}, []int{6, 4, 3})
			if err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 4*6*4*3)
			copyBox(want, 0, cStrides([]int{6, 4, 3}), vals, 3*35+2*5+1, cStrides(shape), []int{6, 4, 3}, 4)
			if !bytes.Equal(part, want) {
				t.Fatalf("v%d %s: a box read back differs", f, comp)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, doc := range []string{
		`{"zarr_format": 4}`,
		`{"zarr_format": 2, "shape": [4], "chunks": [0], "dtype": "<f8", "order": "C"}`,
		`{"zarr_format": 2, "shape": [4], "chunks": [2, 2], "dtype": "<f8", "order": "C"}`,
		`{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "order": "X"}`,
		`{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": [["a", "<f8"]], "order": "C"}`,
		`{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "order": "C", "compressor": {"id": "bz2"}}`,
		`{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "order": "C", "filters": [{"id": "delta"}]}`,
		`{"zarr_format": 3, "node_type": "group"}`,
		`{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float64", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "zstd"}]}`,
		`{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float64", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "sharding_indexed"}]}`,
		`{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "string", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "bytes"}]}`,
	} {
		if a, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s parsed as %+v", doc, a)
		}
	}
}

// FuzzParse: any metadata document parses or gives an error, never a panic; what parses
// has a consistent chunk shape and keys.
func FuzzParse(f *testing.F) {
	a, _ := New(3, []int{10, 20}, []int{3, 7}, elem.MustParse("<f8"), "blosc")
	docs, _ := a.Marshal()
	f.Add(docs["zarr.json"])
	b, _ := New(2, []int{5}, []int{2}, elem.MustParse(">i4"), "zstd")
	docs, _ = b.Marshal()
	f.Add(docs[".zarray"])
	f.Add([]byte(`{"zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "complex64", "fill_value": ["NaN", 1], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 4]}}, "chunk_key_encoding": {"name": "v2"}, "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}, {"name": "crc32c"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		a, err := Parse(doc)
		if err != nil {
			return
		}
		if a.ChunkBytes() <= 0 && len(a.Shape) > 0 {
			t.Fatalf("chunk of %d bytes", a.ChunkBytes())
		}
		idx := make([]int, len(a.Shape))
		if k := a.Key(idx); k == "" || strings.Contains(k, "..") {
			t.Fatalf("key %q", k)
		}
		// Decoding garbage is an error, not a panic.
		if a.ChunkBytes() < 1<<24 {
			_, _ = a.Decode([]byte("not a chunk"))
		}
	})
}
