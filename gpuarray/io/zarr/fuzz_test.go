package zarr

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

// storeSeeds are metadata documents and one stored chunk for each, for the fuzz targets.
func storeSeeds(f *testing.F) {
	for _, c := range []struct {
		format int
		comp   string
	}{{3, "zstd"}, {3, "none"}, {2, "blosc"}, {2, "gzip"}, {3, "blosc-zstd"}} {
		a, err := New(c.format, []int{6, 5}, []int{4, 5}, elem.MustParse("<f4"), c.comp)
		if err != nil {
			f.Fatal(err)
		}
		docs, err := a.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		chunk, err := a.Encode(make([]byte, a.ChunkBytes()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(docs[MetaFile(c.format)], chunk)
	}
	// A sharded v3 array: an inner chunk and the index at the end.
	f.Add([]byte(`{"zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "uint8", "fill_value": 0, "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}}, "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 4], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}], "index_location": "end"}}]}`),
		append(make([]byte, 8), make([]byte, 36)...))
}

// FuzzDecodeChunk: any metadata and stored chunk decode to the chunk's size or give an
// error, never a panic, and never more than the decoders' bound allocated for a short chunk.
func FuzzDecodeChunk(f *testing.F) {
	storeSeeds(f)
	f.Fuzz(func(t *testing.T, doc, chunk []byte) {
		a, err := Parse(doc)
		if err != nil || a.ChunkBytes() > 64<<20 {
			return
		}
		b, err := a.Decode(chunk)
		if err == nil && len(b) != a.ChunkBytes() {
			t.Fatalf("decoded %d bytes, the chunk has %d", len(b), a.ChunkBytes())
		}
	})
}

// FuzzOpenStore: a directory holding any metadata and chunk file opens and reads its first
// chunk's box, or gives an error; never a panic.
func FuzzOpenStore(f *testing.F) {
	storeSeeds(f)
	f.Fuzz(func(t *testing.T, doc, chunk []byte) {
		a, err := Parse(doc)
		if err != nil || a.ChunkBytes() > 16<<20 {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MetaFile(a.Format)), doc, 0o644); err != nil {
			t.Fatal(err)
		}
		key := filepath.Join(dir, filepath.FromSlash(a.Key(make([]int, len(a.Shape)))))
		if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, chunk, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(dir)
		if err != nil {
			return
		}
		shape := make([]int, len(b.Shape))
		for d := range shape {
			shape[d] = min(b.Shape[d], b.Chunks[d])
		}
		out, err := b.ReadBox(dir, make([]int, len(shape)), shape)
		if err == nil && int64(len(out)) != product(shape)*int64(b.Type.Size) {
			t.Fatalf("box of %d bytes for shape %v", len(out), shape)
		}
	})
}
