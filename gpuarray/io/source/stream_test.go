package source

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestReadRangeMatchesRead reads boxes of C-order float64 files (both byte orders, with a
// header offset) piece by piece with ReadRange and checks the pieces joined are Read's bytes,
// for pieces that cut runs anywhere.
func TestReadRangeMatchesRead(t *testing.T) {
	rs := rand.New(rand.NewPCG(4, 16))
	dir := t.TempDir()
	shape := []int{13, 7, 11}
	n := 13 * 7 * 11
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		typ := "<f8"
		if order == binary.BigEndian {
			typ = ">f8"
		}
		b := make([]byte, 40+8*n)
		for i := 0; i < n; i++ {
			order.PutUint64(b[40+8*i:], math.Float64bits(rs.NormFloat64()))
		}
		p := filepath.Join(dir, typ[:1]+".raw")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f := &expr.File{Format: "raw", Path: p, Offset: 40, Type: typ, Shape: shape}
		if !Streams(f) {
			t.Fatalf("%s: a C-order float64 raw file does not stream", typ)
		}
		for trial := 0; trial < 40; trial++ {
			origin, box := make([]int, 3), make([]int, 3)
			for d := range shape {
				origin[d] = rs.IntN(shape[d])
				box[d] = rs.IntN(shape[d]-origin[d]) + 1
			}
			if trial%5 == 0 { // whole trailing axes: long runs
				origin[1], box[1], origin[2], box[2] = 0, 7, 0, 11
			}
			want, err := Read(f, origin, box)
			if err != nil {
				t.Fatal(err)
			}
			total := expr.Size(box)
			got := make([]byte, 0, 8*total)
			for from := int64(0); from < total; {
				m := min(total-from, 1+rs.Int64N(40))
				piece := make([]byte, 8*m)
				if err := ReadRange(f, origin, box, from, piece); err != nil {
					t.Fatal(err)
				}
				got = append(got, piece...)
				from += m
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%s box at %v of shape %v: pieces differ from the whole read", typ, origin, box)
			}
		}
		if err := ReadRange(f, []int{0, 0, 0}, []int{2, 2, 2}, 5, make([]byte, 8*4)); err == nil {
			t.Fatal("a range past the box's end was read")
		}
	}
	for _, f := range []*expr.File{
		{Format: "npy", Type: "<f4", Shape: shape},
		{Format: "npy", Type: "<f8", Shape: shape, Fortran: true},
		{Format: "zarr", Type: "<f8", Shape: shape},
		{Format: "raw", Type: "<f8", Shape: shape, Sel: []expr.Sel{{Step: 2}, {Step: 1}, {Step: 1}}},
	} {
		if Streams(f) {
			t.Errorf("%+v streams as float64 words", f)
		}
	}
}
