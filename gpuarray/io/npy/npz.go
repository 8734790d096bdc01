package npy

import (
	"archive/zip"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Member is one array of a .npz archive (a zip of .npy files).
type Member struct {
	Name   string // the array's name: the file name without ".npy"
	Header Header
	// Offset is where the member's data starts in the archive file when the member is
	// stored uncompressed (np.savez): the data can then be read in place. It is -1 for a
	// compressed member (np.savez_compressed), which must be read through Open.
	Offset  int64
	f       *zip.File
	dataOff int64 // where the data starts in the member, after its header
}

// DataBytes is how many data bytes the archive's directory says the member holds after its
// header (0 when its sizes are inconsistent).
func (m *Member) DataBytes() int64 {
	n := int64(m.f.UncompressedSize64) - m.dataOff
	if n < 0 || m.f.UncompressedSize64 > math.MaxInt64 {
		return 0
	}
	return n
}

// CompressedBytes is the member's size in the archive.
func (m *Member) CompressedBytes() int64 { return int64(min(m.f.CompressedSize64, math.MaxInt64)) }

// MaxDataBytes is the most data the member's compressed bytes can give: deflate expands at
// most 1032 times (zip.Store: its size).
func (m *Member) MaxDataBytes() int64 {
	c := m.CompressedBytes()
	if m.f.Method == zip.Store {
		return c
	}
	return min(c, math.MaxInt64/1032)*1032 + 1<<10
}

// Open returns a reader of the member's data (decompressed), after its header.
func (m *Member) Open() (io.ReadCloser, error) {
	rc, err := m.f.Open()
	if err != nil {
		return nil, fmt.Errorf("npz member %s: %w", m.Name, err)
	}
	if _, _, err := ReadHeader(rc); err != nil {
		rc.Close()
		return nil, fmt.Errorf("npz member %s: %w", m.Name, err)
	}
	return rc, nil
}

// Members lists the arrays of the .npz archive read by r (size bytes), sorted by name.
func Members(r io.ReaderAt, size int64) ([]*Member, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	var out []*Member
	for _, f := range z.File {
		if !strings.HasSuffix(f.Name, ".npy") {
			continue
		}
		m := &Member{Name: strings.TrimSuffix(f.Name, ".npy"), Offset: -1, f: f}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("npz member %s: %w", f.Name, err)
		}
		h, off, err := ReadHeader(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("npz member %s: %w", f.Name, err)
		}
		m.Header, m.dataOff = h, off
		if f.Method == zip.Store {
			d, err := f.DataOffset()
			if err != nil {
				return nil, fmt.Errorf("npz member %s: %w", f.Name, err)
			}
			if int64(f.UncompressedSize64) < off+h.DataBytes() {
				return nil, fmt.Errorf("npz member %s: %d bytes, header and data need %d", f.Name, f.UncompressedSize64, off+h.DataBytes())
			}
			m.Offset = d + off
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
