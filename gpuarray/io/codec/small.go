package codec

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/pierrec/lz4/v4"
)

// LZ4 is numcodecs' lz4 codec (Zarr v2): the decoded size as 4 little-endian bytes, then one
// lz4 block.
type LZ4 struct{}

// Name implements Codec.
func (LZ4) Name() string { return "lz4" }

// Encode implements Codec.
func (LZ4) Encode(src []byte) ([]byte, error) {
	out := make([]byte, 4+lz4.CompressBlockBound(len(src)))
	binary.LittleEndian.PutUint32(out, uint32(len(src)))
	lc := lz4Pool.Get().(*lz4.Compressor)
	defer lz4Pool.Put(lc)
	n, err := lc.CompressBlock(src, out[4:])
	if err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	return out[:4+n], nil
}

// Decode implements Codec.
func (LZ4) Decode(src []byte, size int) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("lz4: %d bytes, shorter than the size header", len(src))
	}
	if n := int(binary.LittleEndian.Uint32(src)); n != size {
		return nil, fmt.Errorf("lz4: holds %d bytes, want %d", n, size)
	}
	if err := fits(LZ4{}, len(src), size); err != nil {
		return nil, err
	}
	out := make([]byte, size)
	n, err := lz4.UncompressBlock(src[4:], out)
	if err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	if n != size {
		return nil, fmt.Errorf("lz4: decoded %d bytes, want %d", n, size)
	}
	return out, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is Zarr v3's crc32c codec: the data followed by its CRC-32C, 4 little-endian bytes.
type CRC32C struct{}

// Name implements Codec.
func (CRC32C) Name() string { return "crc32c" }

// Encode implements Codec.
func (CRC32C) Encode(src []byte) ([]byte, error) {
	return binary.LittleEndian.AppendUint32(append([]byte(nil), src...), crc32.Checksum(src, castagnoli)), nil
}

// Decode implements Codec. size is the size of what follows in the pipeline when known, or -1.
func (CRC32C) Decode(src []byte, size int) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("crc32c: %d bytes, shorter than the checksum", len(src))
	}
	data := src[:len(src)-4]
	if got, want := crc32.Checksum(data, castagnoli), binary.LittleEndian.Uint32(src[len(src)-4:]); got != want {
		return nil, fmt.Errorf("crc32c: checksum %08x, stored %08x: the chunk is corrupt", got, want)
	}
	if size >= 0 && len(data) != size {
		return nil, fmt.Errorf("crc32c: %d bytes, want %d", len(data), size)
	}
	return data, nil
}
