package codec

import (
	"runtime"
	"testing"
)

// allCodecs are the decoders the fuzz target picks from by its first input.
var allCodecs = []Codec{Gzip{}, Zlib{}, Zstd{}, LZ4{}, CRC32C{}, Blosc{}}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestDecodersRefuseSizesTheirInputCannotHold: a chunk of a few bytes whose metadata claims
// 8 GiB is an error before anything is allocated (every decoder allocated the size first).
func TestDecodersRefuseSizesTheirInputCannotHold(t *testing.T) {
	frame := []byte("0123456789abcdef0123456789abcdef")
	for _, c := range allCodecs {
		var err error
		n := allocated(func() { _, err = c.Decode(frame, 8<<30) })
		if err == nil {
			t.Errorf("%s: 32 bytes decoded to 8 GiB", c.Name())
		}
		if n > 1<<20 {
			t.Errorf("%s: allocated %d bytes before refusing (%v)", c.Name(), n, err)
		}
		if in, ok := c.(Into); ok {
			dst := make([]byte, 1<<20)
			if err := in.DecodeInto(dst, frame[:4]); err == nil {
				t.Errorf("%s: 4 bytes decoded into 1 MiB", c.Name())
			}
		}
	}
}

// FuzzDecoders: any stored bytes decode to the size asked, or give an error; never a panic,
// and never a size beyond what the input can hold (MaxDecoded).
func FuzzDecoders(f *testing.F) {
	src := sample(300)
	for i, c := range []Codec{Gzip{Level: 5}, Zlib{Level: 1}, Zstd{}, LZ4{}, CRC32C{}, Blosc{CName: "lz4", CLevel: 5, Shuffle: 1, TypeSize: 8}} {
		enc, err := c.Encode(src)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), enc, len(src))
	}
	f.Fuzz(func(t *testing.T, kind uint8, frame []byte, size int) {
		c := allCodecs[int(kind)%len(allCodecs)]
		if size > 64<<20 {
			size = 64 << 20 // what the fuzzer's memory can hold; larger sizes are refused above
		}
		out, err := c.Decode(frame, size)
		if err != nil {
			return
		}
		if len(out) != size {
			t.Fatalf("%s decoded %d bytes, want %d", c.Name(), len(out), size)
		}
		if m := MaxDecoded(c, len(frame)); m >= 0 && int64(size) > m {
			t.Fatalf("%s decoded %d bytes from %d, more than MaxDecoded %d", c.Name(), size, len(frame), m)
		}
		if in, ok := c.(Into); ok {
			dst := make([]byte, size)
			if err := in.DecodeInto(dst, frame); err != nil {
				t.Fatalf("%s: Decode took it, DecodeInto says %v", c.Name(), err)
			}
		}
	})
}
