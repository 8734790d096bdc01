package rng

import "testing"

// Per-element cost of the strided draws on one core (b.N blocks of 4096 values).
func BenchmarkStrided(b *testing.B) {
	k := KeyOf(1, 0)
	dst := make([]float64, 4096)
	for _, c := range []struct {
		name string
		f    func(start uint64)
	}{
		{"uniform", func(s uint64) { k.UniformStrided(dst, s, 1, 0, 1) }},
		{"normal", func(s uint64) { k.NormalStrided(dst, s, 1, 0, 1) }},
		{"exponential", func(s uint64) { k.ExponentialStrided(dst, s, 1, 1) }},
		{"gamma2.5", func(s uint64) { k.GammaStrided(dst, s, 1, 2.5, 1) }},
		{"poisson4", func(s uint64) { k.PoissonStrided(dst, s, 1, 4) }},
		{"poisson100", func(s uint64) { k.PoissonStrided(dst, s, 1, 100) }},
		{"binomial50,0.3", func(s uint64) { k.BinomialStrided(dst, s, 1, 50, 0.3) }},
		{"beta0.5,0.5", func(s uint64) { k.BetaStrided(dst, s, 1, 0.5, 0.5) }},
		{"beta0.001,0.001", func(s uint64) { k.BetaStrided(dst, s, 1, 0.001, 0.001) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := uint64(0)
			for b.Loop() {
				c.f(s)
				s += uint64(len(dst))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(dst)), "ns/value")
		})
	}
}

// The strided draws (first blocks eight at a time) equal the scalar ones, for a negative
// stride and a length that leaves a tail.
func TestDistStridedMatchesScalar(t *testing.T) {
	k := KeyOf(42, 3)
	dst := make([]float64, 1003)
	g, g25, p, pl, bi, bb := NewGamma(0.7), NewGamma(2.5), NewPoisson(3.5), NewPoisson(250), NewBinomial(30, 0.8), NewBinomial(500, 0.4)
	be, bs := NewBeta(0.5, 0.9), NewBeta(0.001, 0.002)
	for _, c := range []struct {
		name   string
		fill   func()
		scalar func(idx uint64) float64
	}{
		{"exponential", func() { k.ExponentialStrided(dst, 9000, -7, 2) }, func(i uint64) float64 { return 2 * k.Exponential(i) }},
		{"gamma", func() { k.GammaStrided(dst, 9000, -7, 0.7, 3) }, func(i uint64) float64 { return 3 * k.Gamma(i, g) }},
		{"gamma 2.5", func() { k.GammaStrided(dst, 9000, -7, 2.5, 3) }, func(i uint64) float64 { return 3 * k.Gamma(i, g25) }},
		{"gamma 0", func() { k.GammaStrided(dst, 9000, -7, 0, 3) }, func(i uint64) float64 { return 3 * k.Gamma(i, NewGamma(0)) }},
		{"poisson", func() { k.PoissonStrided(dst, 9000, -7, 3.5) }, func(i uint64) float64 { return k.Poisson(i, p) }},
		{"poisson ptrs", func() { k.PoissonStrided(dst, 9000, -7, 250) }, func(i uint64) float64 { return k.Poisson(i, pl) }},
		{"binomial", func() { k.BinomialStrided(dst, 9000, -7, 30, 0.8) }, func(i uint64) float64 { return k.Binomial(i, bi) }},
		{"binomial btrs", func() { k.BinomialStrided(dst, 9000, -7, 500, 0.4) }, func(i uint64) float64 { return k.Binomial(i, bb) }},
		{"beta", func() { k.BetaStrided(dst, 9000, -7, 0.5, 0.9) }, func(i uint64) float64 { return k.Beta(i, be) }},
		{"beta logs", func() { k.BetaStrided(dst, 9000, -7, 0.001, 0.002) }, func(i uint64) float64 { return k.Beta(i, bs) }},
	} {
		c.fill()
		for i, v := range dst {
			idx := uint64(9000 - 7*i)
			if want := c.scalar(idx); v != want {
				t.Fatalf("%s element %d: %v != %v", c.name, idx, v, want)
			}
		}
	}
}
