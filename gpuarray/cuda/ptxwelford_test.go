package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestWelfordBatchedAxesInterpreted interprets the partial-reduction kernels of a variance
// along an axis on the host, both walks, with reduced lengths that leave 0 to 3 values held at
// a thread's end: folded four at a time (welford4On) the count is exact and the mean and the
// squared deviations are within 1e-13 relative of a two-pass reference, as the
// element-by-element kernel's are; the batched kernel divides once per four elements.
func TestWelfordBatchedAxesInterpreted(t *testing.T) {
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
		for _, batched := range []bool{true, false} {
			welford4On = batched
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
					t.Errorf("rows %v, %d x %d, batched %v, kept %d: (%v, %v, %v), want (%d, %v, %v)", c.rows, c.k, c.n, batched, q, p.Count[q], p.Mean[q], p.M2[q], c.n, mean, m2)
				}
			}
		}
		welford4On = true
	}
	// The batched loop divides once per batch (and in the flush of up to three held values).
	s := &Spec{Rank: 2, Kept: 1, Reduce: RWelford, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
	lib, err := kernelsLib()
	if err != nil {
		t.Fatal(err)
	}
	welford4On = false
	plain, _, err := GeneratePTX(s, lib)
	welford4On = true
	if err != nil {
		t.Fatal(err)
	}
	batched, _, err := GeneratePTX(s, lib)
	if err != nil {
		t.Fatal(err)
	}
	loop := func(ptx string) string {
		return ptx[strings.Index(ptx, "\n$L_loop_"):strings.Index(ptx, "\n$L_loopend_")]
	}
	// The element-by-element loop divides once per element (an unrolled pass of four, then the
	// single one); the batched one once per merge: in each of the five places a value is folded.
	if p, b := strings.Count(loop(plain), "div.rn.f64"), strings.Count(loop(batched), "div.rn.f64"); p != unrollOf(s)+1 || b != unrollOf(s)+1 {
		t.Errorf("divisions in the loop: element by element %d, batched %d (want %d each, one per fold site)", p, b, unrollOf(s)+1)
	}
	if !strings.Contains(loop(batched), "$L_wmerge_") {
		t.Errorf("the batched loop has no merge of a batch")
	}
}
