package gpuarray_test

import (
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// benchReshapeSum is the reshape row of `bench ops` (issue 20): sum(x.reshape(n/2, 2, n),
// axis=1) of an n x n standard normal array in chunks of n/4, a result half the input's size
// (6.4 GB at n = 40000). toHost also brings the result to host memory (ToSlice), as the CuPy
// peer's .get() does. GPUNOTES_BENCH_N overrides n (default 40000).
func benchReshapeSum(b *testing.B, toHost bool) {
	needGPUBench(b)
	n := benchEnv("GPUNOTES_BENCH_N", 40000)
	for i := 0; i < b.N; i++ {
		x := gpuarray.NewRandomState(42).StandardNormal(gpuarray.Shape(n, n), gpuarray.Chunks(n/4, n/4))
		c, err := x.Reshape(n/2, 2, n).Sum(1).Compute(gpuarray.OnGPU())
		if err != nil {
			b.Fatal(err)
		}
		if toHost {
			v, err := c.ToSlice()
			if err != nil {
				b.Fatal(err)
			}
			if len(v) != n/2*n {
				b.Fatalf("%d values, want %d", len(v), n/2*n)
			}
		}
		if i == 0 {
			b.Logf("reshape sum of %d x %d: %s (held on %q)", n, n, c.Path(), c.Where())
		}
		c.Release()
	}
}

// BenchmarkReshapeSumGPU times the reshape row's Compute on a GPU.
func BenchmarkReshapeSumGPU(b *testing.B) { benchReshapeSum(b, false) }

// BenchmarkReshapeSumGPUToHost times its Compute and ToSlice.
func BenchmarkReshapeSumGPUToHost(b *testing.B) { benchReshapeSum(b, true) }

// BenchmarkMatMulLazyFusedGPU is BenchmarkMatMulLazyGPU with elementwise work after the
// product (2 x y - 3): the product is a stage a later kernel reads, GPUNOTES_BENCH_N (default
// 10000), chunks of N/4, the result kept on the device.
func BenchmarkMatMulLazyFusedGPU(b *testing.B) {
	needGPUBench(b)
	n := benchEnv("GPUNOTES_BENCH_N", 10000)
	for i := 0; i < b.N; i++ {
		x, y := squareNormals(n)
		c, err := gpuarray.MatMul(x, y).Mul(2).Sub(3).Compute(gpuarray.OnGPU())
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.Logf("%d x %d lazy product, then 2 x y - 3: %s", n, n, c.Path())
		}
		c.Release()
	}
}
