package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// hostLines is what the host path hands cuFFT for l (cpu.ApplyCall and cufft.InverseReal): the
// lines padded with zeros to Len, converted to complex128 (or float64: the real parts), then
// conjugated, then the imaginary parts of elements 0 and Last set to +0.
func hostLines(src dtype.Slice, l LineLayout) []float64 {
	padded := dtype.Make(src.DType(), int(l.Outer*l.Len*l.Inner))
	run := int(l.SrcLen * l.Inner)
	for o := 0; o < int(l.Outer); o++ {
		at := o * int(l.Len*l.Inner)
		dtype.Copy(padded.Slice(at, at+run), src.Slice(o*run, (o+1)*run))
	}
	if !l.DstComplex {
		return dtype.Convert(padded, dtype.Float64).Float64s()
	}
	x := dtype.Convert(padded, dtype.Complex128).Complex128s()
	if l.Conj {
		for i, v := range x {
			x[i] = complex(real(v), -imag(v))
		}
	}
	if l.ZeroEnds {
		for i := range x {
			j := int64(i) / l.Inner % l.Len
			if j == 0 || j == l.Last {
				x[i] = complex(real(x[i]), 0)
			}
		}
	}
	w := make([]float64, 2*len(x))
	for i, v := range x {
		w[2*i], w[2*i+1] = real(v), imag(v)
	}
	return w
}

// TestPrepareLinesPTX interprets the kernel that turns a transform's fused values into cuFFT's
// input on the device, for every combination of its flags, lines contiguous and strided, whole
// and padded: its words have the bits of the host path's (hostLines), signed zeros included
// (a padded zero conjugated is -0, a zeroed end +0), over a grid of two blocks.
func TestPrepareLinesPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(8, 9))
	const src, dst, blocks = 1 << 40, 1 << 41, 2
	for flags := range 16 {
		for _, shape := range [][3]int64{{3, 7, 1}, {2, 5, 3}, {1, 600, 1}, {4, 4, 5}} {
			for _, pad := range []int64{0, 3} {
				l := LineLayout{Outer: shape[0], SrcLen: shape[1], Inner: shape[2], Len: shape[1] + pad,
					SrcComplex: flags&1 != 0, DstComplex: flags&2 != 0, Conj: flags&4 != 0, ZeroEnds: flags&8 != 0}
				if l.ZeroEnds && l.Len%2 == 0 {
					l.Last = l.Len - 1
				}
				if !l.DstComplex && (l.Conj || l.ZeroEnds) {
					continue // flags of imaginary parts
				}
				count := int(l.Outer * l.SrcLen * l.Inner)
				var in dtype.Slice
				if l.SrcComplex {
					v := make([]complex128, count)
					for i := range v {
						v[i] = complex(rs.NormFloat64(), rs.NormFloat64())
					}
					v[0] = complex(math.Copysign(0, -1), 0)
					in = dtype.OfComplex128(v)
				} else {
					v := make([]float64, count)
					for i := range v {
						v[i] = rs.NormFloat64()
					}
					v[0] = math.Copysign(0, -1)
					in = dtype.OfFloat64(v)
				}
				mem := map[uint64]uint64{}
				for i, w := range EncodeWords(in) {
					mem[src+uint64(8*i)] = math.Float64bits(w)
				}
				want := hostLines(in, l)
				p := ptxtest.Parse(t, linesPTX("8.0", "sm_90", l))
				last := l.Last
				for b := range blocks {
					ptxtest.Run(t, p, b, 0, map[string]uint64{"dst": dst, "src": src, "n": uint64(l.Outer * l.Len * l.Inner),
						"inner": uint64(l.Inner), "srclen": uint64(l.SrcLen), "len": uint64(l.Len), "last": uint64(last), "nctaid.x": blocks}, mem, nil)
				}
				for i, w := range want {
					if got := mem[dst+uint64(8*i)]; got != math.Float64bits(w) {
						t.Fatalf("%s %+v: word %d is %v (%#x), host path %v (%#x)", l.name(), l, i, math.Float64frombits(got), got, w, math.Float64bits(w))
					}
				}
				if _, ok := mem[dst+uint64(8*len(want))]; ok {
					t.Fatalf("%s %+v: wrote past its %d words", l.name(), l, len(want))
				}
			}
		}
	}
}
