package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestScanWalks: many or short lines are scanned a thread per line (the CPU's order); few long
// lines by segments of at least scanMinSeg elements, about scanWarps warps in all.
func TestScanWalks(t *testing.T) {
	for _, c := range []struct {
		shape []int
		axis  int
		want  scanLines
		segs  int64
	}{
		{[]int{1 << 20}, 0, scanLines{1, 1 << 20, 1}, 1 << 10},
		{[]int{3, 1 << 17}, 1, scanLines{3, 1 << 17, 1}, 128},
		{[]int{1 << 17, 3}, 0, scanLines{1, 1 << 17, 3}, 128},
		{[]int{40000, 8}, 1, scanLines{40000, 8, 1}, 0},
		{[]int{300, 20000}, 0, scanLines{1, 300, 20000}, 0},
		{[]int{2, 1 << 15, 5}, 1, scanLines{2, 1 << 15, 5}, 0}, // short lines
		{[]int{8, 1 << 24}, 1, scanLines{8, 1 << 24, 1}, 1024},
	} {
		l := linesOf(c.shape, c.axis)
		if l != c.want || l.segments() != c.segs {
			t.Errorf("%v along %d: lines %+v segments %d, want %+v and %d", c.shape, c.axis, l, l.segments(), c.want, c.segs)
		}
	}
}

// TestScanPTX: both walks generate for every dtype a scan's result takes, with the CPU's op
// (integer wrap-around, float32 rounding after each op, complex products as pairs of floats),
// loads and stores of the dtype's words, and shuffles only in the segmented walk.
func TestScanPTX(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.Int64, dtype.Uint64, dtype.Float32, dtype.Float64, dtype.Complex64, dtype.Complex128} {
		for _, op := range []expr.Op{expr.OpAdd, expr.OpMul} {
			for _, seg := range []bool{false, true} {
				text, name, err := ptx.ScanPTX("8.0", "sm_90", dt, op, seg)
				if err != nil {
					t.Fatalf("%v %v seg %v: %v", dt, op, seg, err)
				}
				if !strings.Contains(text, ".visible .entry "+name+"(") {
					t.Errorf("%s: no entry", name)
				}
				want := map[expr.Op]string{expr.OpAdd: "add.rn.f64", expr.OpMul: "mul.rn.f64"}[op]
				if ptx.LaneOf(dt) == ptx.LaneI {
					want = map[expr.Op]string{expr.OpAdd: "add.s64", expr.OpMul: "mul.lo.s64"}[op]
				}
				if !strings.Contains(text, want) {
					t.Errorf("%s lacks %q", name, want)
				}
				if round := strings.Contains(text, "cvt.rn.f32.f64"); round != (dt == dtype.Float32 || dt == dtype.Complex64) {
					t.Errorf("%s: float32 rounding %v", name, round)
				}
				if dt.IsComplex() && op == expr.OpMul && !strings.Contains(text, "sub.rn.f64") {
					t.Errorf("%s: no complex product", name)
				}
				if shfl := strings.Contains(text, "shfl.sync.up.b32"); shfl != seg {
					t.Errorf("%s: shuffles %v", name, shfl)
				}
				if strings.Contains(text, "fma.") || strings.Contains(text, "call ") {
					t.Errorf("%s: fma or a call", name)
				}
			}
		}
	}
}

// TestHostScanOp: the host chains segment totals with the kernels' ops.
func TestHostScanOp(t *testing.T) {
	w := func(v int64) []float64 { return []float64{math.Float64frombits(uint64(v))} }
	got := hostScanOp(dtype.Int64, expr.OpMul, w(math.MaxInt64), w(3))
	if int64(math.Float64bits(got[0])) != math.MaxInt64-2 { // (2^63-1)*3 wraps to 2^63-3

		t.Errorf("int64 product %d", int64(math.Float64bits(got[0])))
	}
	if got := hostScanOp(dtype.Float32, expr.OpAdd, []float64{1}, []float64{0x1p-30}); got[0] != 1 {
		t.Errorf("float32 sum %v, want 1 (rounded)", got[0])
	}
	if got := hostScanOp(dtype.Complex128, expr.OpMul, []float64{1, 2}, []float64{3, 4}); got[0] != -5 || got[1] != 10 {
		t.Errorf("complex product %v", got)
	}
}

// TestScanTilePTX runs the tiled scan of contiguous lines in the PTX interpreter, for every
// dtype a scan's result takes, both ops, lines that fill a block or not (several blocks) and
// lengths that do not fill the last tile: every word is the CPU's running value, in the CPU's
// order (hostScanOp along each line), bit for bit.
func TestScanTilePTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(32, 2))
	const buf = 1 << 20
	for _, dt := range []dtype.DType{dtype.Int64, dtype.Uint64, dtype.Float32, dtype.Float64, dtype.Complex64, dtype.Complex128} {
		for _, op := range []expr.Op{expr.OpAdd, expr.OpMul} {
			for _, sz := range [][2]int{{70, 37}, {5, 1}, {33, 130}} {
				lines, n := sz[0], sz[1]
				vals := make([]complex128, lines*n)
				for i := range vals {
					vals[i] = complex(rs.NormFloat64()*3, rs.NormFloat64())
					if op == expr.OpMul {
						vals[i] = complex(1+rs.NormFloat64()/8, rs.NormFloat64()/8)
					}
				}
				words := EncodeWords(dtype.Convert(dtype.OfComplex128(vals), dt))
				w := Words(dt)
				want := make([]float64, len(words))
				for ln := range lines {
					at := ln * n * w
					acc := words[at : at+w]
					copy(want[at:at+w], acc)
					for k := 1; k < n; k++ {
						o := at + k*w
						acc = hostScanOp(dt, op, acc, words[o:o+w])
						copy(want[o:o+w], acc)
					}
				}
				mem := map[uint64]uint64{}
				for i, v := range words {
					mem[buf+uint64(8*i)] = math.Float64bits(v)
				}
				text, _, err := ptx.ScanTilePTX("8.0", "sm_90", dt, op)
				if err != nil {
					t.Fatal(err)
				}
				p := ptxtest.Parse(t, text)
				for b := range (lines + ptx.ScanTileLines - 1) / ptx.ScanTileLines {
					ptxtest.Run(t, p, b, 0, map[string]uint64{"buf": buf, "lines": uint64(lines), "n": uint64(n)}, mem, nil)
				}
				for i, v := range want {
					if got := mem[buf+uint64(8*i)]; got != math.Float64bits(v) {
						t.Fatalf("%v %v %d x %d: word %d is %#x, want %#x (%v)", dt, op, lines, n, i, got, math.Float64bits(v), v)
					}
				}
				if len(mem) != len(words) {
					t.Fatalf("%v %v %d x %d: %d words written, want %d (nothing outside the lines)", dt, op, lines, n, len(mem), len(words))
				}
			}
		}
	}
}
