package gpuarray_test

import (
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// benchExpITheta is exp(1j*x) summed, x n standard normals in chunks of n/8: the complex
// elementwise math of a phase after an FFT, fused with its sum (the result is n e^(-1/2),
// the characteristic function of the normal at 1, within a few sqrt(n)).
func benchExpITheta(b *testing.B, n int, opts ...gpuarray.ComputeOption) {
	n = benchEnv("GPUNOTES_BENCH_N", n)
	for i := 0; i < b.N; i++ {
		x := gpuarray.NewRandomState(42).StandardNormal(gpuarray.Shape(n), gpuarray.Chunks(max(n/8, 1)))
		c, err := x.AsType(gpuarray.Complex128).Mul(gpuarray.FromSliceComplex128([]complex128{1i})).Exp().Sum().Compute(opts...)
		if err != nil {
			b.Fatal(err)
		}
		s, err := c.ToSliceComplex128()
		if err != nil {
			b.Fatal(err)
		}
		if want := float64(n) * math.Exp(-0.5); math.Abs(real(s[0])-want) > 10*math.Sqrt(float64(n)) || math.Abs(imag(s[0])) > 10*math.Sqrt(float64(n)) {
			b.Fatalf("sum of exp(1j*x) over %d normals is %v, want about %g", n, s[0], want)
		}
		if i == 0 {
			b.Logf("exp(1j*x) summed over %d: %s", n, c.Path())
		}
		c.Release()
	}
}

// BenchmarkExpIThetaGPU is exp(1j*x) summed on the GPU backend, 2^26 values.
func BenchmarkExpIThetaGPU(b *testing.B) {
	needGPUBench(b)
	benchExpITheta(b, 1<<26, gpuarray.OnGPU())
}

// BenchmarkExpITheta is exp(1j*x) summed on the CPU, 2^22 values.
func BenchmarkExpITheta(b *testing.B) { benchExpITheta(b, 1<<22) }
