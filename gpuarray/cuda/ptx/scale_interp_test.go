package ptx_test

import (
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
)

// TestScalePTXAsGoMultiplies interprets the kernels of cuda.Device.ScaleWords (a call's output scaled
// on the device, as an inverse FFT's is) over values with signed zeros, infinities, NaN and
// subnormals: every word is the one Go's x*scale, or x*complex(scale, 0), gives on the host.
func TestScalePTXAsGoMultiplies(t *testing.T) {
	vals := []float64{1.5, -2.25, 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, -1e308, 3.141592653589793, 1e-310, 7}
	const p = 1 << 20
	for _, scale := range []float64{0.25, 1.0 / 3, -2, 1e300} {
		for _, pairs := range []bool{false, true} {
			mem := map[uint64]uint64{}
			for i, v := range vals {
				mem[p+uint64(8*i)] = math.Float64bits(v)
			}
			n := len(vals)
			if pairs {
				n /= 2
			}
			text := ptx.ScalePTX("8.0", "sm_90", "gpn_scale", pairs)
			ptxtest.Run(t, ptxtest.Parse(t, text), 0, 0, map[string]uint64{"p": p, "n": uint64(n), "s": math.Float64bits(scale), "nctaid.x": 1}, mem, nil)
			for i := range n {
				var want []float64
				if pairs {
					z := complex(vals[2*i], vals[2*i+1]) * complex(scale, 0)
					want = []float64{real(z), imag(z)}
				} else {
					want = []float64{vals[i] * scale}
				}
				for j, w := range want {
					at := i*len(want) + j
					got := math.Float64frombits(mem[p+uint64(8*at)])
					if math.Float64bits(got) != math.Float64bits(w) && !(math.IsNaN(got) && math.IsNaN(w)) {
						t.Errorf("scale %v, pairs %v: word %d (of %v) is %v, want %v", scale, pairs, at, vals[at], got, w)
					}
				}
			}
		}
	}
}
