package cuda

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
)

// TestCompactUnit: a selected row is copied in the widest unit of 8, 4, 2 and 1 bytes that
// divides its bytes.
func TestCompactUnit(t *testing.T) {
	for _, c := range []struct{ elem, row, unit, words int64 }{
		{8, 1, 8, 1}, {16, 1, 8, 2}, {1, 1, 1, 1}, {1, 8, 8, 1}, {2, 3, 2, 3}, {4, 2, 8, 1}, {4, 3, 4, 3}, {8, 3, 8, 3},
	} {
		if u, w := CompactUnit(c.elem, c.row); u != c.unit || w != c.words {
			t.Errorf("%d-byte elements, rows of %d: unit %d x %d, want %d x %d", c.elem, c.row, u, w, c.unit, c.words)
		}
	}
}

// TestCompactPTX runs the compaction kernels in the PTX interpreter: counts per segment, the
// counts' running sums (as the scan kernel leaves them), then the copy of the selected rows in
// order; the output is the host's selection, byte for byte, for masks of bytes and of words and
// rows of every unit.
func TestCompactPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(3, 32))
	const maskAt, countsAt, srcAt, outAt = 1 << 20, 1 << 24, 1 << 28, 1 << 32
	for _, c := range []struct {
		maskBytes      int
		elemBytes, row int64
		n              int64
		density        float64
	}{
		{1, 8, 1, 9000, 0.3}, {8, 8, 1, 70, 1}, {1, 1, 1, 1000, 0.5}, {8, 2, 3, 333, 0.1}, {1, 4, 1, 257, 0}, {1, 16, 1, 100, 0.7}, {8, 8, 2, 8200, 0.02},
	} {
		unit, words := CompactUnit(c.elemBytes, c.row)
		mem := map[uint64]uint64{}
		put := func(base uint64, data []byte) {
			for i := 0; i < len(data); i += 8 {
				var w uint64
				for j := 0; j < 8 && i+j < len(data); j++ {
					w |= uint64(data[i+j]) << (8 * j)
				}
				mem[base+uint64(i)] = w
			}
		}
		mask := make([]bool, c.n)
		maskData := make([]byte, c.n*int64(c.maskBytes))
		for i := range mask {
			mask[i] = rs.Float64() < c.density
			if mask[i] {
				maskData[i*c.maskBytes+c.maskBytes-1] = 0x3f // 1.0's high byte for words
			}
		}
		rowBytes := c.elemBytes * c.row
		src := make([]byte, c.n*rowBytes)
		for i := range src {
			src[i] = byte(rs.Uint32())
		}
		put(maskAt, maskData)
		put(srcAt, src)
		var want []byte
		for i, m := range mask {
			if m {
				want = append(want, src[int64(i)*rowBytes:int64(i+1)*rowBytes]...)
			}
		}
		segs := (c.n + ptx.CompactSeg - 1) / ptx.CompactSeg
		blocks := int((segs + BlockSize - 1) / BlockSize)
		count, _, err := ptx.CompactPTX("8.0", "sm_90", c.maskBytes, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		p := ptxtest.Parse(t, count)
		for b := range blocks {
			ptxtest.Run(t, p, b, 0, map[string]uint64{"mask": maskAt, "n": uint64(c.n), "counts": countsAt}, mem, nil)
		}
		var run uint64
		for s := range segs {
			run += mem[countsAt+uint64(8*s)]
			mem[countsAt+uint64(8*s)] = run
		}
		if int(run)*int(rowBytes) != len(want) {
			t.Fatalf("%+v: %d selected, want %d", c, run, int64(len(want))/rowBytes)
		}
		for i := int64(0); i < (int64(len(want))+7)/8; i++ {
			mem[outAt+uint64(8*i)] = 0 // the allocation's words
		}
		scatter, _, err := ptx.CompactPTX("8.0", "sm_90", c.maskBytes, int(unit), true)
		if err != nil {
			t.Fatal(err)
		}
		p = ptxtest.Parse(t, scatter)
		for b := range blocks {
			ptxtest.Run(t, p, b, 0, map[string]uint64{"mask": maskAt, "n": uint64(c.n), "counts": countsAt, "src": srcAt, "out": outAt, "words": uint64(words)}, mem, nil)
		}
		got := make([]byte, len(want))
		for i := range got {
			at := uint64(outAt + i)
			got[i] = byte(mem[at&^7] >> (8 * (at & 7)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: the compacted bytes differ from the host's selection", c)
		}
	}
	if _, _, err := ptx.CompactPTX("8.0", "sm_90", 4, 8, true); err == nil {
		t.Error("a mask of 4-byte elements did not fail")
	}
}
