package npy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

// TestReadHeaderAllocatesWhatIsThere: a file of 12 bytes that declares a header of 1 MiB is an
// error without a buffer of 1 MiB (the header was allocated at its declared length first).
func TestReadHeaderAllocatesWhatIsThere(t *testing.T) {
	b := append([]byte(Magic), 2, 0)
	b = binary.LittleEndian.AppendUint32(b, maxHeader)
	var a, z runtime.MemStats
	runtime.ReadMemStats(&a)
	_, _, err := ReadHeader(bytes.NewReader(b))
	runtime.ReadMemStats(&z)
	if err == nil {
		t.Fatal("a header of 1 MiB read from 12 bytes")
	}
	if n := z.TotalAlloc - a.TotalAlloc; n > 256<<10 {
		t.Fatalf("allocated %d bytes for a file of %d", n, len(b))
	}
}

// npzOf is a .npz archive of one member name.npy holding data, stored or deflated.
func npzOf(name string, data []byte, method uint16) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, _ := z.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: method})
	w.Write(data)
	z.Close()
	return buf.Bytes()
}

// FuzzNpz: any archive lists its members or gives an error, never a panic; a member's data
// as its header and the directory give it reads back or fails, within what it holds.
func FuzzNpz(f *testing.F) {
	h := Header{Type: elem.MustParse("<f8"), Shape: []int{3}}
	member := append(AppendHeader(nil, h), make([]byte, 24)...)
	f.Add(npzOf("a", member, zip.Store))
	f.Add(npzOf("b", member, zip.Deflate))
	f.Add(npzOf("c", AppendHeader(nil, Header{Type: elem.MustParse("<f8"), Shape: []int{1 << 40}}), zip.Deflate))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := Members(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.Offset >= 0 && (m.Offset > int64(len(b)) || m.Header.DataBytes() > int64(len(b))-m.Offset) {
				t.Fatalf("member %s: data at %d (+%d) outside the archive of %d bytes", m.Name, m.Offset, m.Header.DataBytes(), len(b))
			}
			if m.DataBytes() > m.MaxDataBytes() {
				continue // the archive's directory lies; reading stops at its data
			}
			rc, err := m.Open()
			if err != nil {
				continue
			}
			io.Copy(io.Discard, io.LimitReader(rc, 64<<20))
			rc.Close()
		}
	})
}
