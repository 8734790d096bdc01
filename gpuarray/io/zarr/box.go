package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/io/codec"
	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

// ReadBox reads the box of the array in dir that starts at origin and has shape: its
// elements in C order and native byte order, chunk by chunk.
func (a *Array) ReadBox(dir string, origin, shape []int) ([]byte, error) {
	n := int64(a.Type.Size)
	for _, s := range shape {
		n *= int64(max(s, 0))
	}
	out := make([]byte, n)
	if err := a.ReadBoxInto(dir, origin, shape, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadBoxInto is ReadBox into out, which holds exactly the box's bytes.
func (a *Array) ReadBoxInto(dir string, origin, shape []int, out []byte) error {
	r := len(a.Shape)
	if len(origin) != r || len(shape) != r {
		return fmt.Errorf("zarr %s: box of %d axes for an array of %d", dir, len(origin), r)
	}
	n := int64(a.Type.Size)
	for d := range shape {
		if origin[d] < 0 || shape[d] < 0 || origin[d]+shape[d] > a.Shape[d] {
			return fmt.Errorf("zarr %s: box at %v of shape %v outside the array's shape %v", dir, origin, shape, a.Shape)
		}
		n *= int64(shape[d])
	}
	if int64(len(out)) != n {
		return fmt.Errorf("zarr %s: %d bytes for a box of %d", dir, len(out), n)
	}
	if n == 0 {
		return nil
	}
	lo, hi := make([]int, r), make([]int, r)
	for d := range shape {
		lo[d] = origin[d] / a.Chunks[d]
		hi[d] = (origin[d] + shape[d] - 1) / a.Chunks[d]
	}
	sz := a.Type.Size
	dstStr := cStrides(shape)
	srcStr := make([]int, r) // element strides of the logical axes in a decoded chunk
	st := 1
	for k := r - 1; k >= 0; k-- {
		srcStr[a.Order[k]] = st
		st *= a.Chunks[a.Order[k]]
	}
	if a.direct(origin, shape) {
		// The box is exactly one whole chunk, stored as it is laid out here: decode it
		// straight into out (no decoded copy, no extra buffer).
		idx := make([]int, r)
		for d := range idx {
			idx[d] = lo[d]
		}
		return a.readChunkInto(dir, idx, out)
	}
	var err error
	eachIndex(lo, hi, func(idx []int) bool {
		var chunk []byte
		if chunk, err = a.ReadChunk(dir, idx); err != nil {
			return false
		}
		// The intersection of the chunk and the box, in array coordinates.
		from, size := make([]int, r), make([]int, r)
		srcOff, dstOff := 0, 0
		for d := 0; d < r; d++ {
			c0 := idx[d] * a.Chunks[d]
			from[d] = max(c0, origin[d])
			to := min(c0+a.Chunks[d], origin[d]+shape[d])
			size[d] = to - from[d]
			srcOff += (from[d] - c0) * srcStr[d]
			dstOff += (from[d] - origin[d]) * dstStr[d]
		}
		if chunk == nil {
			fillBox(out, dstOff, dstStr, size, a.Fill)
			return true
		}
		a.Type.ToNative(chunk)
		copyBox(out, dstOff, dstStr, chunk, srcOff, srcStr, size, sz)
		return true
	})
	if err != nil {
		return fmt.Errorf("zarr %s: %w", dir, err)
	}
	return nil
}

// direct reports whether the box at origin with shape is exactly one whole chunk whose
// decoded bytes are the box's (C order, native byte order) and whose codecs can decode in
// place.
func (a *Array) direct(origin, shape []int) bool {
	if !a.Type.Native() || len(a.Codecs) > 1 {
		return false
	}
	if len(a.Codecs) == 1 {
		if _, ok := a.Codecs[0].(codec.Into); !ok {
			return false
		}
	}
	for d := range shape {
		if a.Order[d] != d || shape[d] != a.Chunks[d] || origin[d]%a.Chunks[d] != 0 {
			return false
		}
	}
	return true
}

// readChunkInto reads chunk idx into out (its whole decoded size); a missing chunk is the
// fill value.
func (a *Array) readChunkInto(dir string, idx []int, out []byte) error {
	path := filepath.Join(dir, filepath.FromSlash(a.Key(idx)))
	raw, release, err := readPooled(path)
	if errors.Is(err, fs.ErrNotExist) {
		fillBox(out, 0, cStrides(a.Chunks), a.Chunks, a.Fill)
		return nil
	}
	if err != nil {
		return &ChunkError{path, idx, err}
	}
	defer release()
	if len(a.Codecs) == 0 {
		if len(raw) != len(out) {
			err = fmt.Errorf("%d bytes, the chunk shape %v of %s needs %d", len(raw), a.Chunks, a.Type, len(out))
		} else {
			copy(out, raw)
		}
	} else {
		err = a.Codecs[0].(codec.Into).DecodeInto(out, raw)
	}
	if err != nil {
		return &ChunkError{path, idx, err}
	}
	return nil
}

var rawPool sync.Pool // *[]byte: buffers for stored chunks, reused across reads

// readPooled reads a file into a pooled buffer; release returns the buffer to the pool.
func readPooled(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	n := int(st.Size())
	bp, _ := rawPool.Get().(*[]byte)
	if bp == nil || cap(*bp) < n {
		b := make([]byte, n)
		bp = &b
	}
	buf := (*bp)[:n]
	if _, err := io.ReadFull(f, buf); err != nil {
		rawPool.Put(bp)
		return nil, nil, err
	}
	return buf, func() { rawPool.Put(bp) }, nil
}

// WriteBox writes the chunk idx from box: the chunk's part of the array (clipped at the
// array's edge), C order and native byte order; the rest of an edge chunk is the fill value.
func (a *Array) WriteBox(dir string, idx []int, box []byte) error {
	r := len(a.Shape)
	size := make([]int, r)
	for d := range size {
		size[d] = min(a.Chunks[d], a.Shape[d]-idx[d]*a.Chunks[d])
	}
	sz := a.Type.Size
	need := sz
	for _, s := range size {
		need *= s
	}
	if len(box) != need {
		return &ChunkError{filepath.Join(dir, a.Key(idx)), idx, fmt.Errorf("%d bytes for a box of shape %v of %s", len(box), size, a.Type)}
	}
	chunk := make([]byte, a.ChunkBytes())
	dstStr := make([]int, r)
	st := 1
	for k := r - 1; k >= 0; k-- {
		dstStr[a.Order[k]] = st
		st *= a.Chunks[a.Order[k]]
	}
	full := true
	for d := range size {
		full = full && size[d] == a.Chunks[d]
	}
	if !full {
		fillBox(chunk, 0, dstStr, a.Chunks, a.Fill)
	}
	copyBox(chunk, 0, dstStr, box, 0, cStrides(size), size, sz)
	a.Type.ToNative(chunk) // swapping is its own inverse: native to stored
	return a.WriteChunk(dir, idx, chunk)
}

func cStrides(shape []int) []int {
	s := make([]int, len(shape))
	st := 1
	for d := len(shape) - 1; d >= 0; d-- {
		s[d] = st
		st *= shape[d]
	}
	return s
}

// eachIndex calls f with every index between lo and hi (inclusive), row-major, until f
// returns false. A rank-0 range has one (empty) index.
func eachIndex(lo, hi []int, f func(idx []int) bool) {
	idx := append([]int(nil), lo...)
	for {
		if !f(idx) {
			return
		}
		d := len(idx) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] <= hi[d] {
				break
			}
			idx[d] = lo[d]
		}
		if d < 0 {
			return
		}
	}
}

// copyBox copies a box of size elements (of sz bytes) between two strided layouts (element
// strides per axis; offsets in elements).
func copyBox(dst []byte, dOff int, dStr []int, src []byte, sOff int, sStr []int, size []int, sz int) {
	r := len(size)
	if r == 0 {
		copy(dst[dOff*sz:dOff*sz+sz], src[sOff*sz:sOff*sz+sz])
		return
	}
	for _, s := range size {
		if s == 0 {
			return
		}
	}
	inner := size[r-1]
	contiguous := dStr[r-1] == 1 && sStr[r-1] == 1
	zero := make([]int, r-1)
	hi := make([]int, r-1)
	for d := range hi {
		hi[d] = size[d] - 1
	}
	eachIndex(zero, hi, func(pos []int) bool {
		do, so := dOff, sOff
		for d, p := range pos {
			do += p * dStr[d]
			so += p * sStr[d]
		}
		if contiguous {
			copy(dst[do*sz:(do+inner)*sz], src[so*sz:(so+inner)*sz])
			return true
		}
		ds, ss := dStr[r-1], sStr[r-1]
		for i := 0; i < inner; i++ {
			copy(dst[(do+i*ds)*sz:(do+i*ds+1)*sz], src[(so+i*ss)*sz:(so+i*ss+1)*sz])
		}
		return true
	})
}

// fillBox sets a box of dst to the element fill.
func fillBox(dst []byte, dOff int, dStr []int, size []int, fill []byte) {
	sz := len(fill)
	allZero := bytes.Count(fill, []byte{0}) == sz
	r := len(size)
	if r == 0 {
		copy(dst[dOff*sz:], fill)
		return
	}
	for _, s := range size {
		if s == 0 {
			return
		}
	}
	zero := make([]int, r)
	hi := make([]int, r)
	for d := range hi {
		hi[d] = size[d] - 1
	}
	hi[r-1] = 0
	eachIndex(zero, hi, func(pos []int) bool {
		do := dOff
		for d, p := range pos {
			do += p * dStr[d]
		}
		for i := 0; i < size[r-1]; i++ {
			o := (do + i*dStr[r-1]) * sz
			if allZero {
				clear(dst[o : o+sz])
			} else {
				copy(dst[o:o+sz], fill)
			}
		}
		return true
	})
}

// New returns the metadata of a new array of format 2 or 3, C order, little endian, with
// compressor comp ("none", "zstd", "gzip", "zlib", "blosc" (lz4 inside, byte shuffle) or
// "blosc-zstd") at its default level, and fill value 0.
func New(format int, shape, chunks []int, t elem.Type, comp string) (*Array, error) {
	if format != 2 && format != 3 {
		return nil, fmt.Errorf("zarr format %d (2 or 3)", format)
	}
	a := &Array{Format: format, Shape: append([]int(nil), shape...), Chunks: append([]int(nil), chunks...),
		Type: t.WithOrder('<'), Order: identityOrder(len(shape)), Fill: make([]byte, t.Size), Attrs: map[string]any{}}
	if format == 3 {
		a.Prefix, a.Sep = "c", "/"
	} else {
		a.Sep = "."
	}
	shuffle := 1
	if t.Size == 1 {
		shuffle = 0
	}
	switch strings.ToLower(comp) {
	case "", "none":
	case "zstd":
		a.Codecs = []codec.Codec{codec.Zstd{Level: 3}}
	case "gzip":
		a.Codecs = []codec.Codec{codec.Gzip{Level: 5}}
	case "zlib":
		if format == 3 {
			return nil, fmt.Errorf("zarr v3 has no zlib codec (gzip is the same compression)")
		}
		a.Codecs = []codec.Codec{codec.Zlib{Level: 5}}
	case "blosc", "blosc-lz4":
		a.Codecs = []codec.Codec{codec.Blosc{CName: "lz4", CLevel: 5, Shuffle: shuffle, TypeSize: t.Size}}
	case "blosc-zstd":
		a.Codecs = []codec.Codec{codec.Blosc{CName: "zstd", CLevel: 5, Shuffle: shuffle, TypeSize: t.Size}}
	default:
		return nil, fmt.Errorf("compressor %q (none, zstd, gzip, zlib, blosc, blosc-zstd)", comp)
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

// Marshal returns the metadata documents of the array: file name to contents (zarr.json; or
// .zarray and .zattrs).
func (a *Array) Marshal() (map[string][]byte, error) {
	fill, err := fillJSON(a.Type.NativeType(), a.Fill)
	if err != nil {
		return nil, err
	}
	attrs := a.Attrs
	if attrs == nil {
		attrs = map[string]any{}
	}
	for i, o := range a.Order {
		if o != i {
			return nil, fmt.Errorf("zarr: writing axis order %v is not supported (C order only)", a.Order)
		}
	}
	if a.Format == 2 {
		var comp any
		if len(a.Codecs) > 1 {
			return nil, fmt.Errorf("zarr v2: one compressor at most")
		}
		if len(a.Codecs) == 1 {
			comp, err = codecJSON(a.Codecs[0], 2)
			if err != nil {
				return nil, err
			}
		}
		m := map[string]any{"zarr_format": 2, "shape": a.Shape, "chunks": a.Chunks, "dtype": a.Type.String(),
			"compressor": comp, "fill_value": fill, "order": "C", "filters": nil, "dimension_separator": a.Sep}
		zarray, err := json.MarshalIndent(m, "", "    ")
		if err != nil {
			return nil, err
		}
		zattrs, err := json.MarshalIndent(attrs, "", "    ")
		if err != nil {
			return nil, fmt.Errorf("zarr attributes: %w", err)
		}
		return map[string][]byte{".zarray": zarray, ".zattrs": zattrs}, nil
	}
	endian := "little"
	if a.Type.Order == '>' {
		endian = "big"
	}
	codecs := []any{map[string]any{"name": "bytes", "configuration": map[string]any{"endian": endian}}}
	if a.Type.Size == 1 {
		codecs = []any{map[string]any{"name": "bytes"}}
	}
	for _, c := range a.Codecs {
		j, err := codecJSON(c, 3)
		if err != nil {
			return nil, err
		}
		codecs = append(codecs, j)
	}
	enc := map[string]any{"name": "default", "configuration": map[string]any{"separator": a.Sep}}
	if a.Prefix == "" {
		enc["name"] = "v2"
	}
	m := map[string]any{"zarr_format": 3, "node_type": "array", "shape": a.Shape, "data_type": a.Type.Name(),
		"chunk_grid":         map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": a.Chunks}},
		"chunk_key_encoding": enc, "fill_value": fill, "codecs": codecs, "attributes": attrs}
	doc, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("zarr metadata: %w", err)
	}
	return map[string][]byte{"zarr.json": doc}, nil
}

func codecJSON(c codec.Codec, format int) (any, error) {
	conf := map[string]any{}
	switch x := c.(type) {
	case codec.Zstd:
		conf["level"] = x.Level
		if format == 3 {
			conf["checksum"] = false
		}
	case codec.Gzip:
		conf["level"] = x.Level
	case codec.Zlib:
		conf["level"] = x.Level
	case codec.Blosc:
		conf["cname"], conf["clevel"], conf["blocksize"] = x.CName, x.CLevel, 0
		if format == 3 {
			conf["shuffle"] = []string{"noshuffle", "shuffle", "bitshuffle"}[x.Shuffle]
			conf["typesize"] = x.TypeSize
		} else {
			conf["shuffle"] = x.Shuffle
		}
	case codec.CRC32C:
	case codec.LZ4:
		conf["acceleration"] = 1
	default:
		return nil, fmt.Errorf("zarr: codec %s cannot be written", c.Name())
	}
	if format == 2 {
		conf["id"] = c.Name()
		return conf, nil
	}
	return map[string]any{"name": c.Name(), "configuration": conf}, nil
}

func fillJSON(t elem.Type, b []byte) (any, error) {
	if t.Kind == 'c' {
		half := elem.Type{Kind: 'f', Size: t.Size / 2, Order: t.Order}
		re, err := fillJSON(half, b[:half.Size])
		if err != nil {
			return nil, err
		}
		im, err := fillJSON(half, b[half.Size:])
		return []any{re, im}, err
	}
	v := make([]float64, 1)
	if err := t.ToFloat64(v, b); err != nil {
		return nil, err
	}
	switch {
	case t.Kind == 'b':
		return v[0] != 0, nil
	case math.IsNaN(v[0]):
		return "NaN", nil
	case math.IsInf(v[0], 1):
		return "Infinity", nil
	case math.IsInf(v[0], -1):
		return "-Infinity", nil
	case t.Kind != 'f':
		return int64(v[0]), nil
	}
	return v[0], nil
}
