package zarr

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/io/codec"
	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

// sharding is v3's sharding_indexed codec, read only: a stored chunk (a shard) holds inner
// chunks, each encoded by the inner codecs, and an index of (offset, length) pairs, one per
// inner chunk in C order, at the shard's end or start. Decoding gives the shard's elements in
// C order and native byte order; inner chunks the index marks missing are the fill value.
type sharding struct {
	inner    *Array // Shape: the shard's shape; Chunks: the inner chunks'; the inner pipeline
	indexCRC bool
	indexEnd bool
}

func newSharding(a *Array, c v3Codec, t elem.Type) (*sharding, error) {
	var conf struct {
		ChunkShape    []int     `json:"chunk_shape"`
		Codecs        []v3Codec `json:"codecs"`
		IndexCodecs   []v3Codec `json:"index_codecs"`
		IndexLocation string    `json:"index_location"`
	}
	if err := json.Unmarshal(c.Conf, &conf); err != nil {
		return nil, fmt.Errorf("sharding configuration: %w", err)
	}
	if len(conf.ChunkShape) != len(a.Shape) {
		return nil, fmt.Errorf("sharding: inner chunk shape %v for %d axes", conf.ChunkShape, len(a.Shape))
	}
	for d, n := range conf.ChunkShape {
		if n <= 0 || a.Chunks[d]%n != 0 {
			return nil, fmt.Errorf("sharding: inner chunk shape %v does not divide the shard shape %v", conf.ChunkShape, a.Chunks)
		}
	}
	s := &sharding{indexEnd: conf.IndexLocation != "start"}
	if conf.IndexLocation != "" && conf.IndexLocation != "start" && conf.IndexLocation != "end" {
		return nil, fmt.Errorf("sharding: index_location %q", conf.IndexLocation)
	}
	for i, ic := range conf.IndexCodecs {
		switch {
		case ic.Name == "bytes" && i == 0:
			var e struct {
				Endian string `json:"endian"`
			}
			_ = json.Unmarshal(ic.Conf, &e)
			if e.Endian == "big" {
				return nil, errors.New("sharding: a big-endian index is not supported")
			}
		case ic.Name == "crc32c" && i == len(conf.IndexCodecs)-1:
			s.indexCRC = true
		default:
			return nil, fmt.Errorf("sharding: index codec %q is not supported (bytes, crc32c)", ic.Name)
		}
	}
	s.inner = &Array{Format: 3, Shape: append([]int(nil), a.Chunks...), Chunks: conf.ChunkShape, Type: t, Fill: a.Fill}
	if err := s.inner.pipeline(conf.Codecs, t, 1); err != nil {
		return nil, fmt.Errorf("sharding: inner codecs: %w", err)
	}
	if err := s.inner.check(); err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	return s, nil
}

// Name implements codec.Codec.
func (*sharding) Name() string { return "sharding_indexed" }

// Encode implements codec.Codec: writing shards is not supported.
func (*sharding) Encode([]byte) ([]byte, error) {
	return nil, errors.New("writing sharded arrays is not supported")
}

// Decode implements codec.Codec.
func (s *sharding) Decode(src []byte, size int) ([]byte, error) {
	in := s.inner
	grid := in.Grid()
	n := 1
	for _, g := range grid {
		n *= g
	}
	ilen := 16 * n
	if s.indexCRC {
		ilen += 4
	}
	if len(src) < ilen {
		return nil, fmt.Errorf("shard of %d bytes is shorter than its index of %d", len(src), ilen)
	}
	index := src[:ilen]
	if s.indexEnd {
		index = src[len(src)-ilen:]
	}
	if s.indexCRC {
		var err error
		if index, err = (codec.CRC32C{}).Decode(index, 16*n); err != nil {
			return nil, fmt.Errorf("shard index: %w", err)
		}
	}
	sz := in.Type.Size
	shardStr := cStrides(in.Shape)
	if size != len(in.Fill)*int(product(in.Shape)) {
		return nil, fmt.Errorf("shard of shape %v holds %d bytes, want %d", in.Shape, len(in.Fill)*int(product(in.Shape)), size)
	}
	out := make([]byte, size)
	innerStr := make([]int, len(in.Shape))
	st := 1
	for k := len(in.Shape) - 1; k >= 0; k-- {
		innerStr[in.Order[k]] = st
		st *= in.Chunks[in.Order[k]]
	}
	zero := make([]int, len(grid))
	hi := make([]int, len(grid))
	for d := range hi {
		hi[d] = grid[d] - 1
	}
	var err error
	i := 0
	eachIndex(zero, hi, func(idx []int) bool {
		off := binary.LittleEndian.Uint64(index[16*i:])
		nb := binary.LittleEndian.Uint64(index[16*i+8:])
		i++
		dstOff := 0
		for d := range idx {
			dstOff += idx[d] * in.Chunks[d] * shardStr[d]
		}
		if off == math.MaxUint64 && nb == math.MaxUint64 {
			fillBox(out, dstOff, shardStr, in.Chunks, in.Fill)
			return true
		}
		if off > uint64(len(src)) || nb > uint64(len(src))-off {
			err = fmt.Errorf("inner chunk %v at %d (+%d bytes) outside the shard of %d bytes", idx, off, nb, len(src))
			return false
		}
		var dec []byte
		if dec, err = in.Decode(src[off : off+nb]); err != nil {
			err = fmt.Errorf("inner chunk %v: %w", idx, err)
			return false
		}
		in.Type.ToNative(dec)
		copyBox(out, dstOff, shardStr, dec, 0, innerStr, in.Chunks, sz)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func product(s []int) int64 {
	p := int64(1)
	for _, d := range s {
		p *= int64(d)
	}
	return p
}
