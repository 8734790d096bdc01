package npy

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Type: elem.MustParse("<f8"), Shape: []int{3, 4}},
		{Type: elem.MustParse(">i4"), Fortran: true, Shape: []int{7}},
		{Type: elem.MustParse("|b1"), Shape: []int{}},
		{Type: elem.MustParse("<c16"), Shape: []int{1, 0, 5}},
		{Type: elem.MustParse("<u2"), Shape: slices.Repeat([]int{1}, 9000)}, // a header over 64 KiB: version 2.0
	} {
		b := AppendHeader(nil, h)
		got, off, err := ReadHeader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%v: %v", h.Type, err)
		}
		if off != int64(len(b)) || off%64 != 0 {
			t.Fatalf("%v: data offset %d, header %d bytes", h.Type, off, len(b))
		}
		if got.Type != h.Type || got.Fortran != h.Fortran || !slices.Equal(got.Shape, h.Shape) {
			t.Fatalf("header %+v read back as %+v", h, got)
		}
	}
}

func TestParseHeaderErrors(t *testing.T) {
	for _, text := range []string{
		"",
		"{'descr': '<f8', 'fortran_order': False}",
		"{'descr': '<f8', 'shape': (2,)}",
		"{'descr': '<f8', 'fortran_order': False, 'shape': (2, -1), }",
		"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), } trailing",
		"{'descr': '<U8', 'fortran_order': False, 'shape': (2,), }",
		"{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
		"{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
	} {
		if h, err := ParseHeader(text); err == nil {
			t.Errorf("%q parsed as %+v", text, h)
		}
	}
	if _, _, err := ReadHeader(strings.NewReader("\x93NUMPY\x01\x00\xff")); err == nil {
		t.Error("a header cut short was read")
	}
	if _, _, err := ReadHeader(strings.NewReader("PK\x03\x04 not npy")); err == nil || !strings.Contains(err.Error(), "not a .npy") {
		t.Errorf("zip file: %v", err)
	}
}

// FuzzReadHeader: any bytes give a header or an error, never a panic, and a header that
// reads back writes and reads again the same.
func FuzzReadHeader(f *testing.F) {
	f.Add(AppendHeader(nil, Header{Type: elem.MustParse("<f8"), Shape: []int{3, 4}}))
	f.Add(AppendHeader(nil, Header{Type: elem.MustParse(">c8"), Fortran: true, Shape: []int{}}))
	f.Add([]byte("\x93NUMPY\x03\x00\x10\x00\x00\x00{'descr': [('a', '<f8')]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _, err := ReadHeader(bytes.NewReader(b))
		if err != nil {
			return
		}
		h2, _, err := ReadHeader(bytes.NewReader(AppendHeader(nil, h)))
		if err != nil || h2.Type != h.Type || h2.Fortran != h.Fortran || !slices.Equal(h2.Shape, h.Shape) {
			t.Fatalf("%+v wrote and read back as %+v, %v", h, h2, err)
		}
	})
}
