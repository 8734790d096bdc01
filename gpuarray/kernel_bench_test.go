package gpuarray

import "testing"

// The kernel builds the graph the built-ins build, so both compute in the same time; Apply
// costs a walk of the expression (microseconds), Elementwise a parse.
func benchKernelInput() *Array {
	return NewRandomState(1).StandardNormal(Shape(2000, 2000), Chunks(500, 500))
}

func BenchmarkElementwiseKernel(b *testing.B) {
	k, err := Elementwise("x", "where(x > 0, x * x, exp(x)) + 1")
	if err != nil {
		b.Fatal(err)
	}
	x := benchKernelInput()
	for b.Loop() {
		if _, err := k.Apply(x).Sum().Float64(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkElementwiseBuiltins(b *testing.B) {
	x := benchKernelInput()
	for b.Loop() {
		if _, err := Where(x.Gt(0), x.Mul(x), x.Exp()).Add(1).Sum().Float64(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkElementwiseDefine(b *testing.B) {
	for b.Loop() {
		if _, err := Elementwise("x, y", "where(x > 0, sqrt(x) * y, -y) + log1p(abs(x))"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkElementwiseApply(b *testing.B) {
	k, err := Elementwise("x, y", "where(x > 0, sqrt(x) * y, -y) + log1p(abs(x))")
	if err != nil {
		b.Fatal(err)
	}
	x, y := benchKernelInput(), benchKernelInput()
	for b.Loop() {
		if err := k.Apply(x, y).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
