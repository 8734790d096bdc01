package gpuarray_test

import (
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// benchRfft is issue 17's FFT row: the rfft of n standard normal float64 values generated in
// chunks of n/8 (the transformed axis brought into one chunk, as dask does), the spectrum
// brought to the host. GPUNOTES_BENCH_N overrides n.
func benchRfft(b *testing.B, n int, opts ...gpuarray.ComputeOption) {
	n = benchEnv("GPUNOTES_BENCH_N", n)
	for i := 0; i < b.N; i++ {
		x := gpuarray.NewRandomState(42).StandardNormal(gpuarray.Shape(n), gpuarray.Chunks(max(n/8, 1)))
		c, err := gpuarray.Rfft(x).Compute(opts...)
		if err != nil {
			b.Fatal(err)
		}
		s, err := c.ToSliceComplex128()
		if err != nil {
			b.Fatal(err)
		}
		if len(s) != n/2+1 {
			b.Fatalf("rfft of %d values gave %d, want %d", n, len(s), n/2+1)
		}
		if i == 0 {
			b.Logf("rfft of %d: %s", n, c.Path())
		}
		c.Release()
	}
}

// BenchmarkRfftGPU is the rfft row on the GPU backend (cuFFT on the fused values), 2^26 values.
func BenchmarkRfftGPU(b *testing.B) {
	needGPUBench(b)
	benchRfft(b, 1<<26, gpuarray.OnGPU())
}

// BenchmarkRfft is the rfft row on the CPU (gonum), 2^22 values by default (2^26 with
// GPUNOTES_BENCH_N=67108864).
func BenchmarkRfft(b *testing.B) { benchRfft(b, 1<<22) }
