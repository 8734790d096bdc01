// Package codec compresses and decompresses chunks the way Zarr stores them: gzip, zlib,
// zstd (klauspost/compress) and blosc (its version-1 frame, written here: lz4 inside through
// pierrec/lz4, zstd and zlib inside too; byte shuffle). Every decoder is told the size the
// chunk must decode to, and a different size is an error, so a corrupt or hostile chunk
// cannot make it allocate more.
package codec

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Codec turns a chunk's bytes into stored bytes and back.
type Codec interface {
	// Name is the codec's name in Zarr metadata ("gzip", "zlib", "zstd", "blosc").
	Name() string
	// Encode compresses src.
	Encode(src []byte) ([]byte, error)
	// Decode decompresses src, which must give exactly size bytes.
	Decode(src []byte, size int) ([]byte, error)
}

// Into is implemented by codecs that decode straight into a caller's buffer of the exact
// decoded size (no allocation, no copy): zstd and blosc.
type Into interface {
	DecodeInto(dst, src []byte) error
}

// Gzip is the gzip codec (level 0-9; -1: the library's default).
type Gzip struct{ Level int }

// Name implements Codec.
func (Gzip) Name() string { return "gzip" }

// Encode implements Codec.
func (c Gzip) Encode(src []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, level(c.Level))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return b.Bytes(), nil
}

// Decode implements Codec.
func (Gzip) Decode(src []byte, size int) ([]byte, error) {
	if err := fits(Gzip{}, len(src), size); err != nil {
		return nil, err
	}
	r, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return readExactly("gzip", r, size)
}

// Zlib is the zlib codec (level 0-9; -1: the library's default).
type Zlib struct{ Level int }

// Name implements Codec.
func (Zlib) Name() string { return "zlib" }

// Encode implements Codec.
func (c Zlib) Encode(src []byte) ([]byte, error) { return zlibEncode(src, c.Level) }

// Decode implements Codec.
func (Zlib) Decode(src []byte, size int) ([]byte, error) { return zlibDecode(src, size) }

func zlibEncode(src []byte, lvl int) ([]byte, error) {
	var b bytes.Buffer
	w, err := zlib.NewWriterLevel(&b, level(lvl))
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	return b.Bytes(), nil
}

func zlibDecode(src []byte, size int) ([]byte, error) {
	if err := fits(Zlib{}, len(src), size); err != nil {
		return nil, err
	}
	r, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	return readExactly("zlib", r, size)
}

func level(l int) int {
	if l < 0 || l > 9 {
		return flate.DefaultCompression
	}
	return l
}

// readExactly reads all of r, which must hold size bytes.
func readExactly(what string, r io.Reader, size int) ([]byte, error) {
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("%s: decoded fewer than %d bytes: %w", what, size, err)
	}
	var one [1]byte
	if n, _ := r.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("%s: decodes to more than %d bytes", what, size)
	}
	if c, ok := r.(io.Closer); ok {
		if err := c.Close(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return out, nil
}

// Zstd is the zstd codec (level as zstd numbers them, 1-22; 0: default).
type Zstd struct{ Level int }

// Name implements Codec.
func (Zstd) Name() string { return "zstd" }

var (
	zdecOnce sync.Once
	zdec     *zstd.Decoder
	zdecErr  error
	zencMu   sync.Mutex
	zencs    = map[zstd.EncoderLevel]*zstd.Encoder{}
)

func zstdDecoder() (*zstd.Decoder, error) {
	zdecOnce.Do(func() {
		zdec, zdecErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<34))
	})
	return zdec, zdecErr
}

func zstdEncoder(l int) (*zstd.Encoder, error) {
	lv := zstd.SpeedDefault
	if l > 0 {
		lv = zstd.EncoderLevelFromZstd(l)
	}
	zencMu.Lock()
	defer zencMu.Unlock()
	if e, ok := zencs[lv]; ok {
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(lv), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	zencs[lv] = e
	return e, nil
}

// Encode implements Codec.
func (c Zstd) Encode(src []byte) ([]byte, error) { return zstdEncode(src, c.Level) }

func zstdEncode(src []byte, l int) ([]byte, error) {
	e, err := zstdEncoder(l)
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return e.EncodeAll(src, make([]byte, 0, len(src)/2+64)), nil
}

// Decode implements Codec.
func (Zstd) Decode(src []byte, size int) ([]byte, error) { return zstdDecode(src, size) }

// DecodeInto implements Into.
func (Zstd) DecodeInto(dst, src []byte) error {
	if err := fits(Zstd{}, len(src), len(dst)); err != nil {
		return err
	}
	d, err := zstdDecoder()
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	out, err := d.DecodeAll(src, dst[:0])
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	if len(out) != len(dst) || &out[0] != &dst[0] {
		return fmt.Errorf("zstd: decoded %d bytes, want %d", len(out), len(dst))
	}
	return nil
}

func zstdDecode(src []byte, size int) ([]byte, error) {
	if err := fits(Zstd{}, len(src), size); err != nil {
		return nil, err
	}
	d, err := zstdDecoder()
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	out, err := d.DecodeAll(src, make([]byte, 0, size))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("zstd: decoded %d bytes, want %d", len(out), size)
	}
	return out, nil
}
