package codec

import "fmt"

// A decoder is told the size a chunk must decode to, from the array's metadata (up to 8 GiB
// a chunk), and allocates it before decoding. A chunk of a few bytes whose metadata claims a
// large size made every decoder allocate the claimed size first: 8 GiB for 10 bytes of
// "gzip". No format can expand its input beyond a fixed ratio, so each decoder refuses a size
// its input cannot hold before it allocates:
//   - deflate (gzip, zlib): at most 258 bytes from 2 bits per symbol, a ratio under 1032;
//   - an lz4 block: a match costs at least one byte per 255 bytes it copies;
//   - zstd: a block decodes to at most 128 KiB and takes at least 4 bytes (an RLE block);
//   - blosc: blocks of lz4, zstd or zlib, so zstd's ratio bounds it.
const (
	deflateRatio = 1032
	lz4Ratio     = 255
	zstdRatio    = 32 << 10
	// slack covers formats' headers and a last block decoded from very few bytes.
	slack = 128 << 10
)

// MaxDecoded returns the most bytes c can decode n stored bytes into (-1: no bound is known).
func MaxDecoded(c Codec, n int) int64 {
	var ratio int64
	switch c.(type) {
	case Gzip, Zlib:
		ratio = deflateRatio
	case LZ4:
		ratio = lz4Ratio
	case Zstd, Blosc:
		ratio = zstdRatio
	case CRC32C:
		return int64(n)
	default:
		return -1
	}
	return ratio*int64(n) + slack
}

// fits refuses a size that n stored bytes of c cannot decode to.
func fits(c Codec, n, size int) error {
	if size < 0 {
		return fmt.Errorf("%s: negative size %d", c.Name(), size)
	}
	if m := MaxDecoded(c, n); m >= 0 && int64(size) > m {
		return fmt.Errorf("%s: %d stored bytes cannot decode to %d bytes (at most %d): the chunk or its metadata is corrupt", c.Name(), n, size, m)
	}
	return nil
}
