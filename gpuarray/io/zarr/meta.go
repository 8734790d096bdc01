// Package zarr reads and writes Zarr arrays in local directory stores, format v2 (.zarray,
// .zattrs, .zgroup; chunk keys i.j or i/j; C or F order) and v3 (zarr.json; the codec
// pipeline transpose, bytes with its endian, then gzip, zstd, blosc, crc32c; chunk keys c/i/j
// or the v2 encoding), and lists groups and their attributes. Chunks are read and written
// one at a time, so callers read and write in parallel; a missing chunk reads as the fill
// value, as the Zarr specs say. Sharded v3 arrays (sharding_indexed) are read, a shard at a
// time; they are not written.
package zarr

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/io/codec"
	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

// Array is the metadata of a Zarr array: what it takes to find, decode and encode its chunks.
type Array struct {
	Format int // 2 or 3
	Shape  []int
	Chunks []int     // the chunk shape
	Type   elem.Type // the chunk bytes' element type, with their byte order
	// Order is the order in which the axes are laid out in a decoded chunk, slowest first:
	// 0, 1, … for C order; reversed for F order (v2) or a v3 transpose.
	Order  []int
	Codecs []codec.Codec // bytes to bytes, applied in this order when encoding
	Fill   []byte        // one element, native byte order
	Sep    string        // chunk key separator: "." or "/"
	Prefix string        // "c" for v3's default chunk keys, "" otherwise
	Attrs  map[string]any
	Raw    json.RawMessage // the metadata document it was parsed from (nil when made here)
}

// MetaFile is the name of the metadata document of an array of format f.
func MetaFile(f int) string {
	if f == 3 {
		return "zarr.json"
	}
	return ".zarray"
}

// Parse parses an array's metadata document: a v3 zarr.json or a v2 .zarray, told apart by
// its zarr_format.
func Parse(doc []byte) (*Array, error) {
	var probe struct {
		Format   int    `json:"zarr_format"`
		NodeType string `json:"node_type"`
	}
	if err := json.Unmarshal(doc, &probe); err != nil {
		return nil, fmt.Errorf("zarr metadata: %w", err)
	}
	var a *Array
	var err error
	switch probe.Format {
	case 2:
		a, err = parseV2(doc)
	case 3:
		if probe.NodeType != "array" {
			return nil, fmt.Errorf("zarr metadata: node_type %q, not an array", probe.NodeType)
		}
		a, err = parseV3(doc)
	default:
		return nil, fmt.Errorf("zarr metadata: zarr_format %d (2 and 3 are read)", probe.Format)
	}
	if err != nil {
		return nil, fmt.Errorf("zarr v%d metadata: %w", probe.Format, err)
	}
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("zarr v%d metadata: %w", probe.Format, err)
	}
	a.Raw = append(json.RawMessage(nil), doc...)
	return a, nil
}

func (a *Array) check() error {
	if len(a.Chunks) != len(a.Shape) {
		return fmt.Errorf("chunk shape %v has %d axes, shape %v has %d", a.Chunks, len(a.Chunks), a.Shape, len(a.Shape))
	}
	n := int64(a.Type.Size)
	for i, d := range a.Shape {
		if d < 0 {
			return fmt.Errorf("negative length in shape %v", a.Shape)
		}
		if a.Chunks[i] <= 0 {
			return fmt.Errorf("chunk shape %v must be positive", a.Chunks)
		}
		if n > (1<<33)/int64(a.Chunks[i]) { // 8 GiB per chunk at most
			return fmt.Errorf("chunk shape %v is too large", a.Chunks)
		}
		n *= int64(a.Chunks[i])
	}
	if len(a.Order) != len(a.Shape) {
		return fmt.Errorf("axis order %v for %d axes", a.Order, len(a.Shape))
	}
	seen := make([]bool, len(a.Order))
	for _, o := range a.Order {
		if o < 0 || o >= len(seen) || seen[o] {
			return fmt.Errorf("axis order %v is not a permutation", a.Order)
		}
		seen[o] = true
	}
	if len(a.Fill) != a.Type.Size {
		return fmt.Errorf("fill value of %d bytes for %s", len(a.Fill), a.Type)
	}
	return nil
}

// ChunkBytes returns the size of one decoded chunk.
func (a *Array) ChunkBytes() int {
	n := a.Type.Size
	for _, c := range a.Chunks {
		n *= c
	}
	return n
}

// Grid returns the number of chunks along each axis.
func (a *Array) Grid() []int {
	g := make([]int, len(a.Shape))
	for i, d := range a.Shape {
		g[i] = (d + a.Chunks[i] - 1) / a.Chunks[i]
	}
	return g
}

// Key returns the store key (a relative file path) of chunk idx.
func (a *Array) Key(idx []int) string {
	parts := make([]string, 0, len(idx)+1)
	if a.Prefix != "" {
		parts = append(parts, a.Prefix)
	}
	for _, i := range idx {
		parts = append(parts, strconv.Itoa(i))
	}
	if len(idx) == 0 {
		if a.Prefix != "" {
			return a.Prefix
		}
		return "0"
	}
	return strings.Join(parts, a.Sep)
}

func identityOrder(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = i
	}
	return o
}

type v2Meta struct {
	Format    int               `json:"zarr_format"`
	Shape     []int             `json:"shape"`
	Chunks    []int             `json:"chunks"`
	DType     json.RawMessage   `json:"dtype"`
	Comp      json.RawMessage   `json:"compressor"`
	Fill      json.RawMessage   `json:"fill_value"`
	Order     string            `json:"order"`
	Filters   []json.RawMessage `json:"filters"`
	Separator string            `json:"dimension_separator,omitempty"`
}

func parseV2(doc []byte) (*Array, error) {
	var m v2Meta
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	var ts string
	if err := json.Unmarshal(m.DType, &ts); err != nil {
		return nil, fmt.Errorf("dtype %s: structured dtypes are not supported", m.DType)
	}
	t, err := elem.Parse(ts)
	if err != nil {
		return nil, err
	}
	a := &Array{Format: 2, Shape: m.Shape, Chunks: m.Chunks, Type: t, Sep: ".", Attrs: map[string]any{}}
	if a.Shape == nil || a.Chunks == nil {
		return nil, errors.New("no shape or chunks")
	}
	switch m.Separator {
	case "", ".":
	case "/":
		a.Sep = "/"
	default:
		return nil, fmt.Errorf("dimension_separator %q", m.Separator)
	}
	switch m.Order {
	case "C":
		a.Order = identityOrder(len(a.Shape))
	case "F":
		a.Order = identityOrder(len(a.Shape))
		for i, j := 0, len(a.Order)-1; i < j; i, j = i+1, j-1 {
			a.Order[i], a.Order[j] = a.Order[j], a.Order[i]
		}
	default:
		return nil, fmt.Errorf("order %q (C or F)", m.Order)
	}
	if len(m.Filters) > 0 {
		return nil, fmt.Errorf("filters %s are not supported", m.Filters)
	}
	if len(m.Comp) > 0 && string(m.Comp) != "null" {
		c, err := v2Codec(m.Comp, t)
		if err != nil {
			return nil, err
		}
		a.Codecs = []codec.Codec{c}
	}
	if a.Fill, err = fillBytes(t.NativeType(), m.Fill); err != nil {
		return nil, err
	}
	return a, nil
}

func v2Codec(raw json.RawMessage, t elem.Type) (codec.Codec, error) {
	var c struct {
		ID        string `json:"id"`
		Level     *int   `json:"level"`
		CName     string `json:"cname"`
		CLevel    int    `json:"clevel"`
		Shuffle   int    `json:"shuffle"`
		BlockSize int    `json:"blocksize"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("compressor %s: %w", raw, err)
	}
	lvl := -1
	if c.Level != nil {
		lvl = *c.Level
	}
	switch c.ID {
	case "zlib":
		return codec.Zlib{Level: lvl}, nil
	case "gzip":
		return codec.Gzip{Level: lvl}, nil
	case "zstd":
		return codec.Zstd{Level: max(lvl, 0)}, nil
	case "blosc":
		sh := c.Shuffle
		if sh < 0 { // AUTOSHUFFLE: byte shuffle, bit shuffle for one-byte types
			sh = 1
			if t.Size == 1 {
				sh = 2
			}
		}
		return codec.Blosc{CName: c.CName, CLevel: c.CLevel, Shuffle: sh, TypeSize: t.Size, BlockSize: c.BlockSize}, nil
	case "lz4":
		return codec.LZ4{}, nil
	}
	return nil, fmt.Errorf("compressor %q is not supported (zlib, gzip, zstd, blosc, lz4)", c.ID)
}

type v3Codec struct {
	Name string          `json:"name"`
	Conf json.RawMessage `json:"configuration,omitempty"`
}

type v3Meta struct {
	Format    int             `json:"zarr_format"`
	NodeType  string          `json:"node_type"`
	Shape     []int           `json:"shape"`
	DataType  json.RawMessage `json:"data_type"`
	ChunkGrid struct {
		Name string `json:"name"`
		Conf struct {
			ChunkShape []int `json:"chunk_shape"`
		} `json:"configuration"`
	} `json:"chunk_grid"`
	KeyEnc struct {
		Name string `json:"name"`
		Conf struct {
			Separator string `json:"separator"`
		} `json:"configuration"`
	} `json:"chunk_key_encoding"`
	Fill         json.RawMessage   `json:"fill_value"`
	Codecs       []v3Codec         `json:"codecs"`
	Attrs        map[string]any    `json:"attributes"`
	Transformers []json.RawMessage `json:"storage_transformers"`
}

func parseV3(doc []byte) (*Array, error) {
	var m v3Meta
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	var name string
	if err := json.Unmarshal(m.DataType, &name); err != nil {
		return nil, fmt.Errorf("data_type %s is not supported", m.DataType)
	}
	t, err := elem.FromName(name)
	if err != nil {
		return nil, err
	}
	if m.ChunkGrid.Name != "regular" {
		return nil, fmt.Errorf("chunk grid %q (regular only)", m.ChunkGrid.Name)
	}
	if len(m.Transformers) > 0 {
		return nil, errors.New("storage transformers are not supported")
	}
	a := &Array{Format: 3, Shape: m.Shape, Chunks: m.ChunkGrid.Conf.ChunkShape, Type: t, Attrs: m.Attrs}
	if a.Shape == nil || a.Chunks == nil {
		return nil, errors.New("no shape or chunk shape")
	}
	if a.Attrs == nil {
		a.Attrs = map[string]any{}
	}
	sep := m.KeyEnc.Conf.Separator
	switch m.KeyEnc.Name {
	case "default":
		a.Prefix, a.Sep = "c", "/"
		if sep == "." {
			a.Sep = "."
		}
	case "v2":
		a.Sep = "."
		if sep == "/" {
			a.Sep = "/"
		}
	default:
		return nil, fmt.Errorf("chunk key encoding %q", m.KeyEnc.Name)
	}
	if sep != "" && sep != "." && sep != "/" {
		return nil, fmt.Errorf("chunk key separator %q", sep)
	}
	if a.Fill, err = fillBytes(t.NativeType(), m.Fill); err != nil {
		return nil, err
	}
	if err := a.pipeline(m.Codecs, t, 0); err != nil {
		return nil, err
	}
	return a, nil
}

// pipeline sets a's axis order, stored byte order and bytes codecs from a v3 codec list (a
// sharded array's list is one sharding codec, whose inner list is parsed the same way).
func (a *Array) pipeline(codecs []v3Codec, t elem.Type, depth int) error {
	a.Order = identityOrder(len(a.Shape))
	stage := 0 // 0: array->array codecs, 1: bytes->bytes codecs
	for _, c := range codecs {
		switch c.Name {
		case "transpose":
			if stage != 0 {
				return errors.New("transpose after the bytes codec")
			}
			var conf struct {
				Order []int `json:"order"`
			}
			if err := json.Unmarshal(c.Conf, &conf); err != nil {
				return fmt.Errorf("transpose configuration: %w", err)
			}
			if len(conf.Order) != len(a.Order) {
				return fmt.Errorf("transpose order %v for %d axes", conf.Order, len(a.Order))
			}
			next := make([]int, len(a.Order))
			for i, o := range conf.Order {
				if o < 0 || o >= len(a.Order) {
					return fmt.Errorf("transpose order %v", conf.Order)
				}
				next[i] = a.Order[o]
			}
			a.Order = next
		case "bytes":
			if stage != 0 {
				return errors.New("two array-to-bytes codecs")
			}
			stage = 1
			var conf struct {
				Endian string `json:"endian"`
			}
			if len(c.Conf) > 0 {
				if err := json.Unmarshal(c.Conf, &conf); err != nil {
					return fmt.Errorf("bytes configuration: %w", err)
				}
			}
			switch conf.Endian {
			case "little", "":
				a.Type = a.Type.WithOrder('<')
			case "big":
				a.Type = a.Type.WithOrder('>')
			default:
				return fmt.Errorf("bytes endian %q", conf.Endian)
			}
		case "sharding_indexed":
			if stage != 0 || depth > 0 {
				return errors.New("sharding_indexed must be the only codec of the outer list")
			}
			sc, err := newSharding(a, c, t)
			if err != nil {
				return err
			}
			stage = 1
			a.Type, a.Order = t.NativeType(), identityOrder(len(a.Shape))
			a.Codecs = []codec.Codec{sc}
		default:
			if stage != 1 {
				return fmt.Errorf("codec %q before the bytes codec", c.Name)
			}
			cc, err := v3BytesCodec(c, t)
			if err != nil {
				return err
			}
			a.Codecs = append(a.Codecs, cc)
		}
	}
	if stage != 1 {
		return errors.New("no bytes codec")
	}
	return nil
}

func v3BytesCodec(c v3Codec, t elem.Type) (codec.Codec, error) {
	var conf struct {
		Level     *int   `json:"level"`
		CName     string `json:"cname"`
		CLevel    int    `json:"clevel"`
		Shuffle   string `json:"shuffle"`
		TypeSize  int    `json:"typesize"`
		BlockSize int    `json:"blocksize"`
	}
	if len(c.Conf) > 0 {
		if err := json.Unmarshal(c.Conf, &conf); err != nil {
			return nil, fmt.Errorf("codec %s configuration: %w", c.Name, err)
		}
	}
	lvl := -1
	if conf.Level != nil {
		lvl = *conf.Level
	}
	switch c.Name {
	case "gzip":
		return codec.Gzip{Level: lvl}, nil
	case "zstd":
		return codec.Zstd{Level: max(lvl, 0)}, nil
	case "crc32c":
		return codec.CRC32C{}, nil
	case "blosc":
		sh := map[string]int{"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
		s, ok := sh[conf.Shuffle]
		if !ok {
			return nil, fmt.Errorf("blosc shuffle %q", conf.Shuffle)
		}
		ts := conf.TypeSize
		if ts == 0 {
			ts = t.Size
		}
		return codec.Blosc{CName: conf.CName, CLevel: conf.CLevel, Shuffle: s, TypeSize: ts, BlockSize: conf.BlockSize}, nil
	}
	return nil, fmt.Errorf("codec %q is not supported (transpose, bytes, gzip, zstd, blosc, crc32c)", c.Name)
}

// fillBytes encodes a JSON fill value as one element of t (native byte order). null reads as
// zero (v2 allows it: no fill value).
func fillBytes(t elem.Type, raw json.RawMessage) ([]byte, error) {
	out := make([]byte, t.Size)
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("fill_value %s: %w", raw, err)
	}
	if t.Kind == 'c' {
		parts, ok := v.([]any)
		if !ok || len(parts) != 2 {
			return nil, fmt.Errorf("fill_value %s of a complex array must be [re, im]", raw)
		}
		half := elem.Type{Kind: 'f', Size: t.Size / 2, Order: t.Order}
		for i, p := range parts {
			b, err := fillBytes(half, mustJSON(p))
			if err != nil {
				return nil, err
			}
			copy(out[i*half.Size:], b)
		}
		return out, nil
	}
	switch x := v.(type) {
	case bool:
		f := 0.0
		if x {
			f = 1
		}
		return out, t.FromFloat64(out, []float64{f})
	case json.Number:
		if t.Kind == 'i' || t.Kind == 'u' || t.Kind == 'b' {
			if t.Kind == 'u' {
				u, err := strconv.ParseUint(string(x), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("fill_value %s for %s: %w", raw, t.Name(), err)
				}
				putUint(out, u)
				return out, nil
			}
			i, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("fill_value %s for %s: %w", raw, t.Name(), err)
			}
			putUint(out, uint64(i))
			return out, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("fill_value %s: %w", raw, err)
		}
		return out, t.FromFloat64(out, []float64{f})
	case string:
		var f float64
		switch x {
		case "NaN":
			f = math.Float64frombits(0x7ff8000000000000) // NumPy's NaN (Go's has a payload bit)
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			if strings.HasPrefix(x, "0x") && t.Kind == 'f' {
				b, err := hex.DecodeString(x[2:])
				if err != nil || len(b) != t.Size {
					return nil, fmt.Errorf("fill_value %s: not %d hex bytes", raw, t.Size)
				}
				// The hex string is the big-endian bit pattern.
				for i := range b {
					out[i] = b[len(b)-1-i]
				}
				if nativeBig() {
					copy(out, b)
				}
				return out, nil
			}
			return nil, fmt.Errorf("fill_value %s is not supported", raw)
		}
		if t.Kind != 'f' {
			return nil, fmt.Errorf("fill_value %s for %s", raw, t.Name())
		}
		return out, t.FromFloat64(out, []float64{f})
	}
	return nil, fmt.Errorf("fill_value %s is not supported", raw)
}

func putUint(out []byte, u uint64) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], u)
	if nativeBig() {
		copy(out, b[8-len(out):])
	} else {
		copy(out, b[:len(out)])
	}
}

func nativeBig() bool { return elem.MustParse("=i2").Order == '>' }

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
