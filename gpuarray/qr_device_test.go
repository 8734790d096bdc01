package gpuarray

import (
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
