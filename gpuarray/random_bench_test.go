package gpuarray

import "testing"

// BenchmarkRandomSum draws 1e7 values of each distribution and sums them (fused: the draws
// are never stored), on all cores. bench/random_peer.py times NumPy's Generator on the same.
func BenchmarkRandomSum(b *testing.B) {
	const n = 10_000_000
	for _, d := range []struct {
		name string
		f    func(r *RandomState, o ...ArrayOption) *Array
	}{
		{"normal", func(r *RandomState, o ...ArrayOption) *Array { return r.Normal(0, 1, o...) }},
		{"exponential", func(r *RandomState, o ...ArrayOption) *Array { return r.Exponential(1, o...) }},
		{"gamma2.5", func(r *RandomState, o ...ArrayOption) *Array { return r.Gamma(2.5, 1, o...) }},
		{"gamma0.5", func(r *RandomState, o ...ArrayOption) *Array { return r.Gamma(0.5, 1, o...) }},
		{"beta2,5", func(r *RandomState, o ...ArrayOption) *Array { return r.Beta(2, 5, o...) }},
		{"poisson4", func(r *RandomState, o ...ArrayOption) *Array { return r.Poisson(4, append(o, WithDType(Float64))...) }},
		{"poisson100", func(r *RandomState, o ...ArrayOption) *Array { return r.Poisson(100, append(o, WithDType(Float64))...) }},
		{"binomial50,0.3", func(r *RandomState, o ...ArrayOption) *Array {
			return r.Binomial(50, 0.3, append(o, WithDType(Float64))...)
		}},
	} {
		b.Run(d.name, func(b *testing.B) {
			r := NewRandomState(1)
			for b.Loop() {
				if _, err := d.f(r, Shape(n), Chunks(n/16)).Sum().Float64(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
