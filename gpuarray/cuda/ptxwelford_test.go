package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestWelfordAxesInterpreted interprets the partial-reduction kernels of a variance along an
// axis on the host, both walks, several slices, in both welfordModes: the count is exact and
// the mean and the squared deviations are within 1e-13 relative of a two-pass reference; the
// "div" kernel divides once per element, the "rcp" one takes a reciprocal instead.
func TestWelfordAxesInterpreted(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 31))
	const base = 1 << 32
	for _, c := range []struct {
		rows bool
		k, n int64
	}{
		{false, 3, 5003}, {false, 33, 2101}, {true, 3, 17002}, {true, 2, 16001},
	} {
		s := &Spec{Rank: 2, Kept: 1, Rows: c.rows, Reduce: RWelford, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
		m := c.k * c.n
		vals := make([]float64, m)
		for i := range vals {
			vals[i] = 1000 + 3*r.NormFloat64()
		}
		for _, mode := range []string{"div", "rcp"} {
			setPTX(func(o *ptx.Options) { o.Welford = mode })
			mem := map[uint64]uint64{}
			for i, v := range vals {
				mem[base+uint64(8*i)] = math.Float64bits(v)
			}
			task := heldTask([]int64{c.k, c.n}, []Map{{Strides: []int64{c.n, 1}}}, []uint64{base}, []int64{m})
			p := axesRun(t, s, task, mem)
			for q := range c.k {
				row := vals[q*c.n : (q+1)*c.n]
				var sum float64
				for _, v := range row {
					sum += v
				}
				mean := sum / float64(c.n)
				var m2 float64
				for _, v := range row {
					m2 += (v - mean) * (v - mean)
				}
				if p.Count[q] != float64(c.n) || math.Abs(p.Mean[q]-mean) > 1e-13*math.Abs(mean) || math.Abs(p.M2[q]-m2) > 1e-13*m2 {
					t.Errorf("rows %v, %d x %d, mode %s, kept %d: (%v, %v, %v), want (%d, %v, %v)", c.rows, c.k, c.n, mode, q, p.Count[q], p.Mean[q], p.M2[q], c.n, mean, m2)
				}
			}
		}
	}
	setPTX(func(o *ptx.Options) { o.Welford = "rcp" })
	// Each of the loop's fold sites (an unrolled pass of four, then the single element) divides
	// once (div) or takes a reciprocal (rcp).
	s := &Spec{Rank: 2, Kept: 1, Reduce: RWelford, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	sites := ptx.UnrollOf(s) + 1
	for _, c := range []struct {
		mode     string
		div, rcp int
	}{{"div", sites, 0}, {"rcp", 0, sites}} {
		setPTX(func(o *ptx.Options) { o.Welford = c.mode })
		text, _, err := GeneratePTX(s, lib)
		setPTX(func(o *ptx.Options) { o.Welford = "rcp" })
		if err != nil {
			t.Fatal(err)
		}
		loop := text[strings.Index(text, "\n$L_loop_"):strings.Index(text, "\n$L_loopend_")]
		if d, r := strings.Count(loop, "div.rn.f64"), strings.Count(loop, "rcp.rn.f64"); d != c.div || r != c.rcp {
			t.Errorf("mode %s: the loop has %d divisions, %d reciprocals; want %d, %d", c.mode, d, r, c.div, c.rcp)
		}
	}
}
