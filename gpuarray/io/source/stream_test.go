package source

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestReadRangeMatchesRead reads boxes of C-order raw files (float64 in both byte orders with
// a header offset, float32, int32 big-endian, uint8, bool) piece by piece with ReadRange and
// checks the pieces joined are Read's values as float64, bit for bit, for pieces that cut runs
// anywhere.
func TestReadRangeMatchesRead(t *testing.T) {
	rs := rand.New(rand.NewPCG(4, 16))
	dir := t.TempDir()
	shape := []int{13, 7, 11}
	n := 13 * 7 * 11
	for _, typ := range []string{"<f8", ">f8", "<f4", ">i4", "|u1", "|b1"} {
		sz := map[byte]int{'8': 8, '4': 4, '1': 1}[typ[2]]
		var order binary.ByteOrder = binary.LittleEndian
		if typ[0] == '>' {
			order = binary.BigEndian
		}
		b := make([]byte, 40+sz*n)
		for i := 0; i < n; i++ {
			e := b[40+sz*i:]
			v := rs.NormFloat64() * 1000
			switch typ[1:] {
			case "f8":
				order.PutUint64(e, math.Float64bits(v))
			case "f4":
				order.PutUint32(e, math.Float32bits(float32(v)))
			case "i4":
				order.PutUint32(e, uint32(int32(v)))
			case "u1":
				e[0] = byte(int(v))
			case "b1":
				e[0] = byte(rs.IntN(2))
			}
		}
		p := filepath.Join(dir, typ[1:]+typ[:1]+".raw")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f := &expr.File{Format: "raw", Path: p, Offset: 40, Type: typ, Shape: shape}
		if !Streams(f) {
			t.Fatalf("%s: a C-order raw file does not stream", typ)
		}
		for trial := 0; trial < 30; trial++ {
			origin, box := make([]int, 3), make([]int, 3)
			for d := range shape {
				origin[d] = rs.IntN(shape[d])
				box[d] = rs.IntN(shape[d]-origin[d]) + 1
			}
			if trial%5 == 0 { // whole trailing axes: long runs
				origin[1], box[1], origin[2], box[2] = 0, 7, 0, 11
			}
			vals, err := Read(f, origin, box)
			if err != nil {
				t.Fatal(err)
			}
			want := vals.ToFloat64()
			total := expr.Size(box)
			got := make([]float64, 0, total)
			for from := int64(0); from < total; {
				m := min(total-from, 1+rs.Int64N(40))
				piece := make([]float64, m)
				if err := ReadRange(f, origin, box, from, piece); err != nil {
					t.Fatal(err)
				}
				got = append(got, piece...)
				from += m
			}
			if !dtype.Equal(dtype.OfFloat64(got), dtype.OfFloat64(want)) {
				t.Fatalf("%s box at %v of shape %v: pieces differ from the whole read", typ, origin, box)
			}
		}
		if err := ReadRange(f, []int{0, 0, 0}, []int{2, 2, 2}, 5, make([]float64, 4)); err == nil {
			t.Fatal("a range past the box's end was read")
		}
	}
	for _, f := range []*expr.File{
		{Format: "npy", Type: "<c16", Shape: shape},
		{Format: "npy", Type: "<f8", Shape: shape, Fortran: true},
		{Format: "zarr", Type: "<f8", Shape: shape},
		{Format: "raw", Type: "<f8", Shape: shape, Sel: []expr.Sel{{Step: 2}, {Step: 1}, {Step: 1}}},
	} {
		if Streams(f) {
			t.Errorf("%+v streams as float64 words", f)
		}
	}
}
