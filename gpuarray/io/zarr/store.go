package zarr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/gpunotes/gpunotes/gpuarray/io/codec"
)

// Open reads the metadata of the array stored in directory dir (zarr.json, or .zarray with
// .zattrs).
func Open(dir string) (*Array, error) {
	doc, err := os.ReadFile(filepath.Join(dir, "zarr.json"))
	if errors.Is(err, fs.ErrNotExist) {
		doc, err = os.ReadFile(filepath.Join(dir, ".zarray"))
		if errors.Is(err, fs.ErrNotExist) {
			if k, _ := Kind(dir); k == "group" {
				names, _ := List(dir)
				return nil, fmt.Errorf("zarr %s: a group, not an array (it holds %v)", dir, names)
			}
			return nil, fmt.Errorf("zarr %s: no zarr.json or .zarray: not a Zarr array", dir)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("zarr %s: %w", dir, err)
	}
	a, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("zarr %s: %w", dir, err)
	}
	if a.Format == 2 {
		attrs, err := readAttrs(filepath.Join(dir, ".zattrs"))
		if err != nil {
			return nil, fmt.Errorf("zarr %s: %w", dir, err)
		}
		a.Attrs = attrs
	}
	return a, nil
}

func readAttrs(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return m, nil
}

// Kind says what directory dir holds: "array", "group", or "" (not a Zarr node).
func Kind(dir string) (string, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "zarr.json")); err == nil {
		var m struct {
			NodeType string `json:"node_type"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return "", fmt.Errorf("zarr %s: zarr.json: %w", dir, err)
		}
		return m.NodeType, nil
	}
	if _, err := os.Stat(filepath.Join(dir, ".zarray")); err == nil {
		return "array", nil
	}
	if _, err := os.Stat(filepath.Join(dir, ".zgroup")); err == nil {
		return "group", nil
	}
	return "", nil
}

// Attrs returns the attributes of the array or group in dir.
func Attrs(dir string) (map[string]any, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "zarr.json")); err == nil {
		var m struct {
			Attrs map[string]any `json:"attributes"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("zarr %s: zarr.json: %w", dir, err)
		}
		if m.Attrs == nil {
			m.Attrs = map[string]any{}
		}
		return m.Attrs, nil
	}
	k, err := Kind(dir)
	if err != nil {
		return nil, err
	}
	if k == "" {
		return nil, fmt.Errorf("zarr %s: not a Zarr array or group", dir)
	}
	a, err := readAttrs(filepath.Join(dir, ".zattrs"))
	if err != nil {
		return nil, fmt.Errorf("zarr %s: %w", dir, err)
	}
	return a, nil
}

// List returns the names of the arrays and groups directly inside group dir, sorted, with a
// trailing "/" on groups.
func List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("zarr %s: %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		k, err := Kind(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		switch k {
		case "array":
			out = append(out, e.Name())
		case "group":
			out = append(out, e.Name()+"/")
		}
	}
	sort.Strings(out)
	return out, nil
}

// ChunkError is an error about one chunk: its file and index.
type ChunkError struct {
	Path  string
	Index []int
	Err   error
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("zarr chunk %v (%s): %v", e.Index, e.Path, e.Err)
}

func (e *ChunkError) Unwrap() error { return e.Err }

// ReadChunk reads and decodes chunk idx of the array in dir: the chunk's bytes in the
// stored axis order (Order) and byte order (Type), or nil when the chunk is missing (it then
// holds the fill value everywhere).
func (a *Array) ReadChunk(dir string, idx []int) ([]byte, error) {
	path := filepath.Join(dir, filepath.FromSlash(a.Key(idx)))
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &ChunkError{path, idx, err}
	}
	b, err := a.Decode(raw)
	if err != nil {
		return nil, &ChunkError{path, idx, err}
	}
	return b, nil
}

// Decode runs the codec pipeline backwards on a stored chunk.
func (a *Array) Decode(raw []byte) ([]byte, error) {
	b := raw
	for i := len(a.Codecs) - 1; i >= 0; i-- {
		size := -1
		if i == 0 {
			size = a.ChunkBytes()
		}
		c := a.Codecs[i]
		if _, ok := c.(codec.CRC32C); !ok && size < 0 {
			return nil, fmt.Errorf("codec %s after another compressor is not supported", c.Name())
		}
		var err error
		if b, err = c.Decode(b, size); err != nil {
			return nil, err
		}
	}
	if len(b) != a.ChunkBytes() {
		return nil, fmt.Errorf("%d bytes, the chunk shape %v of %s needs %d", len(b), a.Chunks, a.Type, a.ChunkBytes())
	}
	return b, nil
}

// Encode runs the codec pipeline on a chunk's bytes (stored axis and byte order).
func (a *Array) Encode(b []byte) ([]byte, error) {
	for _, c := range a.Codecs {
		var err error
		if b, err = c.Encode(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// WriteChunk encodes a whole chunk (stored axis and byte order) and writes it to the store
// in dir, creating its directories.
func (a *Array) WriteChunk(dir string, idx []int, b []byte) error {
	path := filepath.Join(dir, filepath.FromSlash(a.Key(idx)))
	if len(b) != a.ChunkBytes() {
		return &ChunkError{path, idx, fmt.Errorf("%d bytes for a chunk of %d", len(b), a.ChunkBytes())}
	}
	enc, err := a.Encode(b)
	if err != nil {
		return &ChunkError{path, idx, err}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return &ChunkError{path, idx, err}
	}
	if err := os.WriteFile(path, enc, 0o644); err != nil {
		return &ChunkError{path, idx, err}
	}
	return nil
}

// WriteMeta writes the array's metadata documents into dir (which must exist). Writers call
// it after the chunks, so a store is an array only once all its chunks are there.
func (a *Array) WriteMeta(dir string) error {
	docs, err := a.Marshal()
	if err != nil {
		return err
	}
	for name, b := range docs {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("zarr %s: %w", dir, err)
		}
	}
	return nil
}
