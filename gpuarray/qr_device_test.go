package gpuarray

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/blas"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// TestTallOnDevicePlanning checks the decision QR and SVD of a tall-and-skinny matrix on a GPU
// take (tallOnDevice): with room for the input, the work and Q (U), one leaf and Q kept on the
// device (QR's outputs held there, no host assembly); with less, leaves of a quarter of the
// rows, still kept; with room for the work of quarter leaves alone, U comes to the host (SVD) and QR takes the
// host TSQR; with none, neither runs on the device. A held input takes no room.
func TestTallOnDevicePlanning(t *testing.T) {
	rows := []int{250000, 250000, 250000, 250000}
	const cols = 100
	m := 1000000
	bl := blas.Blocks{Grid: linalg.Grid{RowChunks: rows, ColChunks: []int{cols}}}
	input := uint64(m * cols * 8)
	q := uint64(m*cols*8) * 9 / 8
	quarter := (m + 3) / 4
	for _, c := range []struct {
		name     string
		input    uint64
		free     uint64
		leafRows int
		keep, ok bool
	}{
		{"room for all", input, input + blas.TallSVDBytes(bl, m, true) + q, m, true, true},
		{"held input, room for the work and Q", 0, blas.TallSVDBytes(bl, m, true) + q, m, true, true},
		{"quarter leaves", input, input + blas.TallSVDBytes(bl, quarter, true) + q, quarter, true, true},
		{"U to the host", input, input + blas.TallSVDBytes(bl, quarter, false), quarter, false, true},
		{"no room", input, input / 2, 0, false, false},
	} {
		leafRows, keep, ok := tallOnDevice(rows, cols, c.input, c.free)
		if leafRows != c.leafRows || keep != c.keep || ok != c.ok {
			t.Errorf("%s: leaf rows %d, keep %v, ok %v; want %d, %v, %v", c.name, leafRows, keep, ok, c.leafRows, c.keep, c.ok)
		}
		// QR runs on the device, its outputs held there, exactly when Q is kept.
		if onDevice := ok && keep; onDevice != (c.ok && c.keep) {
			t.Errorf("%s: QR on the device %v", c.name, onDevice)
		}
	}
}

// TestTallSkinnyFallback checks why QR and SVD on a GPU leave the device TSQR for the one that
// runs block by block (tallSkinny, tsqrThroughHost): a tall-and-skinny array in one column of
// chunks applies; several column chunks, fewer rows than columns or no columns do not, each
// named; the reason then stands in the result's Path beside the kernels that ran.
func TestTallSkinnyFallback(t *testing.T) {
	rs := NewRandomState(5)
	for _, c := range []struct {
		name string
		a    *Array
		why  string // "" where the device TSQR applies
	}{
		{"tall, one column chunk", rs.StandardNormal(Shape(100, 10), Chunks(25, 10)), ""},
		{"square", rs.StandardNormal(Shape(10, 10), Chunks(5, 10)), ""},
		{"two column chunks", rs.StandardNormal(Shape(100, 10), Chunks(25, 5)), "2 column chunks"},
		{"short and fat", rs.StandardNormal(Shape(10, 100), Chunks(10, 100)), "fewer rows than columns"},
		{"no columns", Zeros(Shape(10, 0)), "no columns"},
	} {
		if why := tallSkinny(c.a.n); (why == "") != (c.why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: %q, want %q", c.name, why, c.why)
		}
	}
	c := &linalgConfig{}
	if p := c.path("cuSOLVER"); p != "cuSOLVER" {
		t.Errorf("path with no fallback: %q", p)
	}
	c.tsqrThroughHost("SVD", tallSkinny(rs.StandardNormal(Shape(10, 100), Chunks(10, 100)).n))
	if p := c.path("cuSOLVER"); !strings.HasPrefix(p, "cuSOLVER (") || !strings.Contains(p, "through host memory") || !strings.Contains(p, "fewer rows than columns") {
		t.Errorf("path after the fallback: %q", p)
	}
}
