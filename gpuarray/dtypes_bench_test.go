package gpuarray

import "testing"

// BenchmarkWhereCompareCPU: Where(x > 0, x, -x).Sum() over a 2000 x 2000 normal array, CPU.
func BenchmarkWhereCompareCPU(b *testing.B) {
	x := NewRandomState(1).Normal(0, 1, Shape(2000, 2000), Chunks(500, 500))
	y := Where(x.Gt(0), x, x.Neg()).Sum()
	for b.Loop() {
		if _, err := y.Float64(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMixedAddCPU: (float32 x + float64 y).Sum(), CPU.
func BenchmarkMixedAddCPU(b *testing.B) {
	rs := NewRandomState(2)
	x := rs.Normal(0, 1, Shape(2000, 2000), Chunks(500, 500), WithDType(Float32))
	y := rs.Normal(0, 1, Shape(2000, 2000), Chunks(500, 500))
	s := x.Add(y).Sum()
	for b.Loop() {
		if _, err := s.Float64(); err != nil {
			b.Fatal(err)
		}
	}
}
