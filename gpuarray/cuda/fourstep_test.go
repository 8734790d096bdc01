package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// mulGo is Go's complex product a*b with every operation rounded (the explicit conversions
// forbid a fused multiply-add): re = ar*br - ai*bi, im = ar*bi + ai*br.
func mulGo(a, b complex128) complex128 {
	re := float64(real(a)*real(b)) - float64(imag(a)*imag(b))
	im := float64(real(a)*imag(b)) + float64(imag(a)*real(b))
	return complex(re, im)
}

// putPairs writes complex values to mem at base as pairs of float64 words.
func putPairs(mem map[uint64]uint64, base uint64, v []complex128) {
	for i, z := range v {
		mem[base+uint64(16*i)] = math.Float64bits(real(z))
		mem[base+uint64(16*i+8)] = math.Float64bits(imag(z))
	}
}

// samePairs checks the n pairs at base against want bit for bit (any NaN for a NaN).
func samePairs(t *testing.T, what string, mem map[uint64]uint64, base uint64, want []complex128) {
	t.Helper()
	for i, z := range want {
		for h, w := range []float64{real(z), imag(z)} {
			got, ok := mem[base+uint64(16*i+8*h)]
			if !ok {
				t.Fatalf("%s: word %d of value %d was not written", what, h, i)
			}
			g := math.Float64frombits(got)
			if got != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
				t.Fatalf("%s: value %d word %d is %v (%#x), want %v (%#x)", what, i, h, g, got, w, math.Float64bits(w))
			}
		}
	}
}

// TestTwiddlePTX interprets the four-step transform's twiddle kernel over matrices n1 x n2 (a
// row, a column, square, oblong, more rows than the grid's two blocks): element (r, c) becomes
// v * w^(r*c) with w^j the tables' product hi[j>>shift] * lo[j&mask] (fft.TwiddleTables), or
// v * conj(w^j), bit for bit as Go's complex products compute them on the host, signed zeros
// and the host four-step's own twiddle (fft.TwiddleAt) included; nothing past the matrix is
// written.
func TestTwiddlePTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(11, 12))
	const p, hiAt, loAt, blocks = 1 << 40, 1 << 41, 1 << 42, 2
	for _, s := range [][2]int{{1, 7}, {6, 1}, {3, 5}, {16, 16}, {7, 300}, {5, 513}} {
		n1, n2 := s[0], s[1]
		n := n1 * n2
		hi, lo, shift := fft.TwiddleTables(n)
		for _, conj := range []bool{false, true} {
			what := fmt.Sprintf("twiddles %d x %d conj %v", n1, n2, conj)
			x := make([]complex128, n)
			for i := range x {
				x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
			}
			x[0] = complex(math.Copysign(0, -1), 0)
			if n > 3 {
				x[3] = complex(1.5, math.Copysign(0, -1))
			}
			mem := map[uint64]uint64{}
			putPairs(mem, p, x)
			putPairs(mem, hiAt, hi)
			putPairs(mem, loAt, lo)
			want := make([]complex128, n)
			for r := range n1 {
				for c := range n2 {
					j := r * c
					w := mulGo(hi[j>>shift], lo[j&(1<<shift-1)])
					if w != fft.TwiddleAt(n, j) {
						t.Fatalf("%s: the tables' product %v is not the host's twiddle %v", what, w, fft.TwiddleAt(n, j))
					}
					if conj {
						w = complex(real(w), -imag(w))
					}
					want[r*n2+c] = mulGo(x[r*n2+c], w)
				}
			}
			prog := ptxtest.Parse(t, twiddlePTX("8.0", "sm_90", conj))
			for b := range blocks {
				ptxtest.Run(t, prog, b, 0, map[string]uint64{"p": p, "hi": hiAt, "lo": loAt, "n1": uint64(n1), "n2": uint64(n2), "shift": uint64(shift), "nctaid.x": blocks}, mem, nil)
			}
			samePairs(t, what, mem, p, want)
			if _, ok := mem[p+uint64(16*n)]; ok {
				t.Fatalf("%s: wrote past the matrix", what)
			}
		}
	}
}

// TestTransposePTX interprets the four-step transform's transpose kernel over matrices whose
// sides are below, at and past the 32-wide tiles, in a grid of three blocks that walk the
// tiles: dst[c*rows + r] is src[r*cols + c] bit for bit (NaN, infinities, signed zeros kept),
// or with a scale the value times complex(scale, 0) as Device.ScaleWords multiplies; nothing
// past the matrix is written.
func TestTransposePTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(13, 14))
	const src, dst, blocks = 1 << 40, 1 << 41, 3
	for _, s := range [][2]int{{1, 1}, {1, 40}, {40, 1}, {3, 5}, {32, 32}, {33, 70}, {70, 33}, {64, 8}} {
		rows, cols := s[0], s[1]
		x := make([]complex128, rows*cols)
		for i := range x {
			x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		special := []complex128{complex(math.Copysign(0, -1), math.Inf(1)), complex(math.NaN(), -2), complex(3, math.Copysign(0, -1)), complex(math.Inf(-1), 0)}
		for i, v := range special {
			if i < len(x) {
				x[len(x)-1-i] = v
			}
		}
		for _, scale := range []float64{1, 0.25, 1.0 / 3} {
			what := fmt.Sprintf("transpose %d x %d scale %v", rows, cols, scale)
			mem := map[uint64]uint64{}
			putPairs(mem, src, x)
			want := make([]complex128, len(x))
			for r := range rows {
				for c := range cols {
					v := x[r*cols+c]
					if scale != 1 {
						v = mulGo(v, complex(scale, 0))
					}
					want[c*rows+r] = v
				}
			}
			prog := ptxtest.Parse(t, transposePTX("8.0", "sm_90", scale != 1))
			for b := range blocks {
				ptxtest.Run(t, prog, b, 0, map[string]uint64{"dst": dst, "src": src, "rows": uint64(rows), "cols": uint64(cols), "s": math.Float64bits(scale), "nctaid.x": blocks}, mem, nil)
			}
			samePairs(t, what, mem, dst, want)
			written := 0
			for a := range mem {
				if a >= dst {
					written++
				}
			}
			if written != 2*len(x) {
				t.Fatalf("%s: %d words written, want %d", what, written, 2*len(x))
			}
		}
	}
}
