package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func sample(n int) []byte {
	b := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(math.Sin(float64(i)/50)*1000))
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	src := sample(100000)
	for _, c := range []Codec{
		Gzip{Level: 5}, Zlib{Level: 1}, Zstd{}, Zstd{Level: 9}, LZ4{}, CRC32C{},
		Blosc{CName: "lz4", CLevel: 5, Shuffle: 1, TypeSize: 8},
		Blosc{CName: "lz4", CLevel: 5, Shuffle: 0, TypeSize: 8, BlockSize: 1000},
		Blosc{CName: "zstd", CLevel: 3, Shuffle: 1, TypeSize: 8},
		Blosc{CName: "zlib", CLevel: 3, Shuffle: 1, TypeSize: 4},
		Blosc{CName: "lz4", CLevel: 0, TypeSize: 8},
	} {
		for _, in := range [][]byte{src, src[:13], {}} {
			enc, err := c.Encode(in)
			if err != nil {
				t.Fatalf("%T%+v: %v", c, c, err)
			}
			dec, err := c.Decode(enc, len(in))
			if err != nil {
				t.Fatalf("%T%+v: %v", c, c, err)
			}
			if !bytes.Equal(dec, in) {
				t.Fatalf("%T%+v: %d bytes came back different", c, c, len(in))
			}
			if len(in) > 0 {
				if _, err := c.Decode(enc, len(in)+1); err == nil {
					t.Fatalf("%T%+v: decoded to the wrong size without an error", c, c)
				}
			}
		}
	}
}

func TestBloscRejects(t *testing.T) {
	enc, _ := Blosc{CName: "lz4", CLevel: 5, Shuffle: 1, TypeSize: 8}.Encode(sample(5000))
	bad := bytes.Clone(enc)
	bad[2] = bad[2]&^0xe0 | 2<<5 // snappy
	if _, err := (Blosc{}).Decode(bad, 40000); err == nil {
		t.Fatal("a snappy frame decoded")
	}
	bad = bytes.Clone(enc)
	bad[2] |= bloscBitShuffle
	bad[2] &^= bloscShuffle
	if _, err := (Blosc{}).Decode(bad, 40000); err == nil {
		t.Fatal("a bit-shuffled frame decoded")
	}
	if _, err := (Blosc{}).Decode(enc[:len(enc)-10], 40000); err == nil {
		t.Fatal("a truncated frame decoded")
	}
}

// FuzzBloscDecode: any frame decodes or gives an error, never a panic.
func FuzzBloscDecode(f *testing.F) {
	for _, c := range []Blosc{{CName: "lz4", CLevel: 5, Shuffle: 1, TypeSize: 8}, {CName: "zstd", CLevel: 1, TypeSize: 2, BlockSize: 128}} {
		enc, _ := c.Encode(sample(300))
		f.Add(enc, 2400)
	}
	f.Fuzz(func(t *testing.T, frame []byte, size int) {
		if size < 0 || size > 1<<20 {
			return
		}
		out, err := Blosc{}.Decode(frame, size)
		if err == nil && len(out) != size {
			t.Fatalf("decoded %d bytes, want %d", len(out), size)
		}
	})
}
