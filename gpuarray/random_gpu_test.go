package gpuarray

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// The distributions' GPU kernels (kernels/random.cu, called from generated kernels) against
// the CPU: the same blocks and the same operations, so values agree to the last bits of log,
// exp, pow and lgamma, and a rejection sampler's decision may differ very rarely.
func TestGPURandomDistributionsMatchCPU(t *testing.T) {
	needGPU(t)
	for i, d := range distDraws() {
		what := fmt.Sprintf("%s%v", d.name, d.params)
		x := d.draw(NewRandomState(int64(300+i)), Shape(300, 700), Chunks(100, 350), WithDType(Float64))
		want, err := x.ToSlice()
		if err != nil {
			t.Fatalf("%s on the CPU: %v", what, err)
		}
		c, err := x.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s on the GPU: %v", what, err)
		}
		if strings.Contains(c.Path(), "host") {
			t.Errorf("%s: part of it ran on the host: %s", what, c.Path())
		}
		got, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		exact, far, maxRel := 0, 0, 0.0
		for k := range want {
			if got[k] == want[k] {
				exact++
				continue
			}
			rel := math.Abs(got[k]-want[k]) / math.Max(math.Abs(want[k]), math.SmallestNonzeroFloat64)
			if rel > 1e-13 {
				far++
			}
			if !math.IsNaN(rel) {
				maxRel = max(maxRel, rel)
			}
		}
		t.Logf("%s: %d of %d equal, %d beyond 1e-13 (max relative difference %.3g)", what, exact, len(want), far, maxRel)
		if far > len(want)/10000 {
			t.Errorf("%s: %d of %d values differ beyond 1e-13 between the GPU and the CPU", what, far, len(want))
		}
	}
	// Counts in their default int64 dtype, and the permutations (a sort of keys).
	for _, x := range []*Array{
		NewRandomState(1).Poisson(3, Shape(1000), Chunks(300)),
		NewRandomState(2).Binomial(100, 0.3, Shape(1000), Chunks(300)),
		NewRandomState(3).Permutation(1000),
		NewRandomState(4).Choice(Arange(0, 50, 1), 20, false, nil),
	} {
		want, err := x.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		c, err := x.Compute(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v: GPU values differ from the CPU's (path %s)", x, c.Path())
		}
		t.Logf("%v %v: %s", x.DType(), x.Shape(), c.Path())
	}
}
