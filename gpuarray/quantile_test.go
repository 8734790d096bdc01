package gpuarray

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestQuantilesMatchNumPy compares Quantile, Percentile and Median with NumPy's (linear
// interpolation) over random shapes, chunkings, axes, NaNs and quantiles, bit for bit.
func TestQuantilesMatchNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(6, 2))
	var cs []check
	for i := 0; i < 40; i++ {
		r := 1 + rs.IntN(3)
		shape := npShape(rs, r, 1, 7)
		x, in := randArray(rs, "x", shape)
		if i%3 == 0 {
			x, in = nanArray(rs, "x", shape, false)
		}
		k := rs.IntN(r) - rs.IntN(2)*r
		q := []float64{0, 1, 0.5, 0.25, 0.75, rs.Float64(), rs.Float64()}[rs.IntN(7)]
		what := fmt.Sprintf("%v axis %d q %v", shape, k, q)
		cs = append(cs,
			check{what: "Quantile " + what, got: Quantile(x, q, k), code: fmt.Sprintf("np.quantile(x, %v, axis=%d)", q, k), inputs: []input{in}},
			check{what: "Percentile " + what, got: Percentile(x, q*100, k), code: fmt.Sprintf("np.percentile(x, %v, axis=%d)", q*100, k), inputs: []input{in}},
			check{what: "Median " + what, got: Median(x, k), code: fmt.Sprintf("np.median(x, axis=%d)", k), inputs: []input{in}},
			check{what: "Median int32 " + what, got: Median(x.noNaN(1).Mul(64).AsType(Int32), k), code: fmt.Sprintf("np.median((np.where(np.isnan(x), 1, x)*64).astype(np.int32), axis=%d)", k), inputs: []input{in}},
		)
	}
	runChecks(t, cs, Inline())
	if Quantile(Arange(0, 3, 1), 1.5, 0).Err() == nil || Median(Arange(0, 3, 1), 1).Err() == nil {
		t.Error("Quantile out of [0, 1] or a bad axis: no error")
	}
}
