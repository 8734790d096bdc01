package codec

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// Blosc is the blosc codec, version-1 frames (what numcodecs and zarr-python write): a
// 16-byte header, block offsets, and blocks compressed one by one after an optional byte
// shuffle. Decoding reads lz4, zstd and zlib blocks, byte shuffle and unshuffled data, split
// or not; blosclz, snappy and bit shuffle are reported as unsupported. Encoding writes one
// stream per block (no split), as c-blosc does for these compressors.
type Blosc struct {
	CName     string // "lz4" (default), "zstd" or "zlib"
	CLevel    int    // 0-9 (0: stored uncompressed)
	Shuffle   int    // 0 none, 1 byte shuffle (default for typesize > 1)
	TypeSize  int    // element size, for the shuffle
	BlockSize int    // bytes per block; 0: chosen here
}

// Name implements Codec.
func (Blosc) Name() string { return "blosc" }

// Blosc header flags.
const (
	bloscShuffle    = 0x1
	bloscMemcpyed   = 0x2
	bloscBitShuffle = 0x4
	bloscDontSplit  = 0x10
	bloscHeader     = 16
	bloscMaxSplits  = 16
	bloscMinBuffer  = 128
)

// compressor format codes (bits 5-7 of the flags).
var bloscFormats = map[int]string{0: "blosclz", 1: "lz4", 2: "snappy", 3: "zlib", 4: "zstd"}

// Decode implements Codec.
func (b Blosc) Decode(src []byte, size int) ([]byte, error) {
	if err := fits(Blosc{}, len(src), size); err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if err := b.DecodeInto(out, src); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeInto implements Into.
func (Blosc) DecodeInto(out, src []byte) error {
	size := len(out)
	if len(src) < bloscHeader {
		return fmt.Errorf("blosc: frame of %d bytes is shorter than its header", len(src))
	}
	flags := src[2]
	typesize := int(src[3])
	nbytes := int(binary.LittleEndian.Uint32(src[4:]))
	blocksize := int(binary.LittleEndian.Uint32(src[8:]))
	cbytes := int(binary.LittleEndian.Uint32(src[12:]))
	if src[0] > 2 {
		return fmt.Errorf("blosc: frame version %d (only version-1 frames, format 2, are read)", src[0])
	}
	if nbytes != size {
		return fmt.Errorf("blosc: frame holds %d bytes, want %d", nbytes, size)
	}
	if cbytes != len(src) {
		return fmt.Errorf("blosc: frame says %d bytes, chunk has %d", cbytes, len(src))
	}
	if flags&bloscMemcpyed != 0 {
		if len(src) < bloscHeader+nbytes {
			return fmt.Errorf("blosc: stored frame of %d bytes for %d data bytes", len(src), nbytes)
		}
		copy(out, src[bloscHeader:])
		return nil
	}
	if nbytes == 0 {
		return nil
	}
	if blocksize <= 0 || typesize <= 0 {
		return fmt.Errorf("blosc: bad block size %d or type size %d", blocksize, typesize)
	}
	if flags&bloscBitShuffle != 0 && blocksize >= typesize {
		return fmt.Errorf("blosc: bit shuffle is not supported (byte shuffle and no shuffle are)")
	}
	cname := bloscFormats[int(flags>>5)]
	var dec func(dst, src []byte) error
	switch cname {
	case "lz4":
		dec = func(dst, s []byte) error {
			n, err := lz4.UncompressBlock(s, dst)
			if err != nil {
				return err
			}
			if n != len(dst) {
				return fmt.Errorf("lz4 block gave %d bytes, want %d", n, len(dst))
			}
			return nil
		}
	case "zstd":
		dec = func(dst, s []byte) error {
			b, err := zstdDecode(s, len(dst))
			copy(dst, b)
			return err
		}
	case "zlib":
		dec = func(dst, s []byte) error {
			b, err := zlibDecode(s, len(dst))
			copy(dst, b)
			return err
		}
	default:
		if cname == "" {
			cname = fmt.Sprintf("code %d", flags>>5)
		}
		return fmt.Errorf("blosc: compressor %s is not supported (lz4, zstd and zlib are)", cname)
	}
	nblocks := (nbytes + blocksize - 1) / blocksize
	if bloscHeader+4*nblocks > len(src) {
		return fmt.Errorf("blosc: %d block offsets do not fit a frame of %d bytes", nblocks, len(src))
	}
	shuffle := flags&bloscShuffle != 0 && typesize > 1
	tmp := make([]byte, blocksize)
	for j := 0; j < nblocks; j++ {
		bsize := blocksize
		leftover := j == nblocks-1 && nbytes%blocksize != 0
		if leftover {
			bsize = nbytes % blocksize
		}
		nsplits := 1
		if flags&bloscDontSplit == 0 && typesize <= bloscMaxSplits && blocksize/typesize >= bloscMinBuffer && !leftover {
			nsplits = typesize
		}
		neblock := bsize / nsplits
		pos := int(binary.LittleEndian.Uint32(src[bloscHeader+4*j:]))
		dst := out[j*blocksize : j*blocksize+bsize]
		work := dst
		if shuffle {
			work = tmp[:bsize]
		}
		for s := 0; s < nsplits; s++ {
			if pos < 0 || pos+4 > len(src) {
				return fmt.Errorf("blosc: block %d: offset %d outside the frame", j, pos)
			}
			cb := int(int32(binary.LittleEndian.Uint32(src[pos:])))
			pos += 4
			if cb < 0 || pos+cb > len(src) {
				return fmt.Errorf("blosc: block %d: %d compressed bytes outside the frame", j, cb)
			}
			part := work[s*neblock : (s+1)*neblock]
			if cb == neblock {
				copy(part, src[pos:pos+cb])
			} else if err := dec(part, src[pos:pos+cb]); err != nil {
				return fmt.Errorf("blosc: block %d (%s): %w", j, cname, err)
			}
			pos += cb
		}
		if shuffle {
			unshuffle(dst, work, typesize)
		}
	}
	return nil
}

// shuffle groups byte k of every element together: dst[k*n + i] = src[i*ts + k]; bytes
// after the last whole element are copied.
func shuffle(dst, src []byte, ts int) {
	n := len(src) / ts
	for i := 0; i < n; i++ {
		for k := 0; k < ts; k++ {
			dst[k*n+i] = src[i*ts+k]
		}
	}
	copy(dst[n*ts:], src[n*ts:])
}

func unshuffle(dst, src []byte, ts int) {
	n := len(src) / ts
	if ts == 8 { // the common case, unrolled
		for i := 0; i < n; i++ {
			d := dst[8*i : 8*i+8]
			d[0], d[1], d[2], d[3] = src[i], src[n+i], src[2*n+i], src[3*n+i]
			d[4], d[5], d[6], d[7] = src[4*n+i], src[5*n+i], src[6*n+i], src[7*n+i]
		}
	} else {
		for i := 0; i < n; i++ {
			for k := 0; k < ts; k++ {
				dst[i*ts+k] = src[k*n+i]
			}
		}
	}
	copy(dst[n*ts:], src[n*ts:])
}

var lz4Pool = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// Encode implements Codec.
func (c Blosc) Encode(src []byte) ([]byte, error) {
	cname := c.CName
	if cname == "" {
		cname = "lz4"
	}
	code := -1
	for k, v := range bloscFormats {
		if v == cname && (v == "lz4" || v == "zstd" || v == "zlib") {
			code = k
		}
	}
	if code < 0 {
		return nil, fmt.Errorf("blosc: compressor %q is not supported for writing (lz4, zstd, zlib)", cname)
	}
	ts := max(c.TypeSize, 1)
	if ts > 255 {
		ts = 1
	}
	if len(src) > 1<<31-bloscHeader-1 {
		return nil, fmt.Errorf("blosc: a chunk of %d bytes is larger than blosc's 2 GiB limit", len(src))
	}
	bs := c.BlockSize
	if bs <= 0 {
		bs = 256 << 10
	}
	bs = max(bs/ts*ts, ts)
	if bs > len(src) {
		bs = len(src)
	}
	flags := byte(bloscDontSplit) | byte(code<<5)
	shuf := c.Shuffle == 1 && ts > 1
	if shuf {
		flags |= bloscShuffle
	}
	hdr := make([]byte, bloscHeader, bloscHeader+len(src)/2)
	hdr[0], hdr[1], hdr[3] = 2, 1, byte(ts)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(src)))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(bs))
	if c.CLevel == 0 || len(src) == 0 {
		hdr[2] = flags | bloscMemcpyed
		out := append(hdr, src...)
		binary.LittleEndian.PutUint32(out[12:], uint32(len(out)))
		return out, nil
	}
	nblocks := (len(src) + bs - 1) / bs
	out := append(hdr, make([]byte, 4*nblocks)...)
	tmp := make([]byte, bs)
	comp := make([]byte, lz4.CompressBlockBound(bs))
	for j := 0; j < nblocks; j++ {
		blk := src[j*bs : min((j+1)*bs, len(src))]
		if shuf {
			shuffle(tmp[:len(blk)], blk, ts)
			blk = tmp[:len(blk)]
		}
		binary.LittleEndian.PutUint32(out[bloscHeader+4*j:], uint32(len(out)))
		var cb []byte
		switch cname {
		case "lz4":
			lc := lz4Pool.Get().(*lz4.Compressor)
			n, err := lc.CompressBlock(blk, comp)
			lz4Pool.Put(lc)
			if err != nil {
				return nil, fmt.Errorf("blosc lz4: %w", err)
			}
			cb = comp[:n]
		case "zstd":
			b, err := zstdEncode(blk, zstdLevelOfBlosc(c.CLevel))
			if err != nil {
				return nil, fmt.Errorf("blosc: %w", err)
			}
			cb = b
		case "zlib":
			b, err := zlibEncode(blk, c.CLevel)
			if err != nil {
				return nil, fmt.Errorf("blosc: %w", err)
			}
			cb = b
		}
		if len(cb) == 0 || len(cb) >= len(blk) { // incompressible: stored as is
			cb = blk
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(cb)))
		out = append(out, cb...)
	}
	out[2] = flags
	binary.LittleEndian.PutUint32(out[12:], uint32(len(out)))
	return out, nil
}

// zstdLevelOfBlosc maps blosc's 1-9 onto zstd levels (c-blosc uses clevel*2 - 1, at most 22).
func zstdLevelOfBlosc(l int) int { return min(max(2*l-1, 1), 22) }
