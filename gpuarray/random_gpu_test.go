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
		tol := 1e-13
		if d.name == "beta" {
			tol = betaTol(d.params[0], d.params[1])
		}
		for k := range want {
			if got[k] == want[k] {
				exact++
				continue
			}
			rel := math.Abs(got[k]-want[k]) / math.Max(math.Abs(want[k]), math.SmallestNonzeroFloat64)
			if math.Abs(got[k]-want[k]) > tol*math.Abs(want[k])+2*math.SmallestNonzeroFloat64 {
				far++
			}
			if !math.IsNaN(rel) {
				maxRel = max(maxRel, rel)
			}
		}
		t.Logf("%s: %d of %d equal, %d beyond %.3g (max relative difference %.3g)", what, exact, len(want), far, tol, maxRel)
		if far > len(want)/10000 {
			t.Errorf("%s: %d of %d values differ beyond %.3g between the GPU and the CPU", what, far, len(want), tol)
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

// Beta at the ends of its parameters on the GPU: Johnk's log-space form with 1/a = +Inf, and
// the gamma ratio halved against overflow, as on the CPU and never NaN.
func TestGPURandomBetaExtremes(t *testing.T) {
	needGPU(t)
	tiny := math.SmallestNonzeroFloat64
	for i, ab := range [][2]float64{{tiny, tiny}, {1e-300, 1e-300}, {1e-310, 0.3}, {1, 1e-320}, {0.001, 0.001}, {0.5, 1e-5}, {math.MaxFloat64, math.MaxFloat64}, {1e308, 0.5}} {
		x := NewRandomState(int64(60+i)).Beta(ab[0], ab[1], Shape(100000), Chunks(40000))
		want, err := x.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		c, err := x.Compute(OnGPU())
		if err != nil {
			t.Fatalf("Beta%v on the GPU: %v", ab, err)
		}
		got, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		bad, far, tol := 0, 0, betaTol(ab[0], ab[1])
		for k := range got {
			if !(got[k] >= 0 && got[k] <= 1) {
				bad++
			}
			if math.Abs(got[k]-want[k]) > tol*math.Abs(want[k])+2*math.SmallestNonzeroFloat64 {
				far++
			}
		}
		t.Logf("Beta%v: %d outside [0, 1], %d beyond %.3g of the CPU (path %s)", ab, bad, far, tol, c.Path())
		if bad != 0 || far > len(got)/10000 {
			t.Errorf("Beta%v on the GPU: %d values NaN or outside [0, 1], %d beyond %.3g of the CPU", ab, bad, far, tol)
		}
	}
}

// betaTol is how far a Beta(a, b) value may be from the CPU's on the GPU, relatively (plus
// two units of the smallest subnormal). Johnk's log-space form divides log(u)-log(v) by
// min(a, b): a last-bit difference of log(u) and log(v) between the libraries moves the value
// relatively by up to (|log u|+|log v|)*2^-52/min(a, b) <= 1.7e-14/min(a, b) (u, v >= 2^-54).
// The gamma ratio (a or b above 1) keeps the general 1e-13.
func betaTol(a, b float64) float64 {
	if a > 1 || b > 1 {
		return 1e-13
	}
	return max(1e-13, 2e-14/min(a, b))
}
