package gpuarray_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// benchSVD runs the SVD of a random normal m x n array in chunks of rc rows, as the seed does
// (x = da.random.random(...); u, s, v = da.linalg.svd(x)), with U brought to the host when
// toHost is set (on the GPU it is otherwise left there). GPUNOTES_BENCH_ROWS overrides m.
func benchSVD(b *testing.B, m, n, rc int, toHost bool, opts ...gpuarray.ComputeOption) {
	m = benchEnv("GPUNOTES_BENCH_ROWS", m)
	rc = benchEnv("GPUNOTES_BENCH_CHUNK", rc)
	for i := 0; i < b.N; i++ {
		x := gpuarray.NewRandomState(42).Uniform(0, 1, gpuarray.Shape(m, n), gpuarray.Chunks(rc, n))
		if len(opts) == 0 {
			opts = []gpuarray.ComputeOption{gpuarray.Threads(0)}
		}
		r, err := gpuarray.SVD(x, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if s, err := r.S.ToSlice(); err != nil || len(s) != n {
			b.Fatalf("S: %d values, %v", len(s), err)
		}
		if toHost {
			if _, err := r.U.Compute(); err != nil {
				b.Fatal(err)
			}
		}
		if i == 0 {
			b.Logf("%d x %d in chunks of %d rows: %s; U on %s", m, n, rc, r.Path, r.U.Where())
		}
		r.U.Release()
	}
}

// needGPUBench skips a GPU benchmark without a GPU.
func needGPUBench(b *testing.B) {
	if err := gpuarray.GPUError(); err != nil {
		b.Skipf("no GPU: %v", err)
	}
}

// benchEnv is the whole number in the environment variable name (a benchmark's size), or def
// where it is unset or not a number.
func benchEnv(name string, def int) int {
	if r, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return r
	}
	return def
}

// squareNormals are the matrix-product benchmarks' operands: two n x n standard normal arrays
// in chunks of n/4, drawn one after the other from seed 42.
func squareNormals(n int) (x, y *gpuarray.Array) {
	rs := gpuarray.NewRandomState(42)
	x = rs.StandardNormal(gpuarray.Shape(n, n), gpuarray.Chunks(n/4, n/4))
	y = rs.StandardNormal(gpuarray.Shape(n, n), gpuarray.Chunks(n/4, n/4))
	return x, y
}

// BenchmarkSVDSeedGPU is BenchmarkSVDSeed on the GPU backend (cuBLAS/cuSOLVER block kernels).
func BenchmarkSVDSeedGPU(b *testing.B) {
	needGPUBench(b)
	benchSVD(b, 10000, 1000, 1000, false, gpuarray.OnGPU())
}

// BenchmarkSVDTallGPU is BenchmarkSVDTall on the GPU backend, U left on the device (as CuPy's
// peer leaves it); it runs only when GPUNOTES_BENCH_TALL is set.
func BenchmarkSVDTallGPU(b *testing.B) {
	needGPUBench(b)
	if os.Getenv("GPUNOTES_BENCH_TALL") == "" {
		b.Skip("set GPUNOTES_BENCH_TALL=1 to run the 1,000,000 x 1000 SVD (about 17 GB)")
	}
	benchSVD(b, 1_000_000, 1000, 100_000, false, gpuarray.OnGPU())
}

// BenchmarkSVDTallGPUToHost is BenchmarkSVDTallGPU with U brought to the host (8 GB), as the
// peer's .get() does; it needs about 17 GB of host memory.
func BenchmarkSVDTallGPUToHost(b *testing.B) {
	needGPUBench(b)
	if os.Getenv("GPUNOTES_BENCH_TALL") == "" {
		b.Skip("set GPUNOTES_BENCH_TALL=1 to run the 1,000,000 x 1000 SVD (about 17 GB)")
	}
	benchSVD(b, 1_000_000, 1000, 100_000, true, gpuarray.OnGPU())
}

// BenchmarkMatMulGPU multiplies two N x N standard normal arrays (GPUNOTES_BENCH_N, default
// 40000; chunks of N/4) on the GPU, the product left there, as cupy.matmul(x, y) does.
func BenchmarkMatMulGPU(b *testing.B) { benchMatMulGPU(b, false) }

// BenchmarkMatMulGPUToHost is BenchmarkMatMulGPU with the product brought to the host, as
// cupy.matmul(x, y).get() does.
func BenchmarkMatMulGPUToHost(b *testing.B) { benchMatMulGPU(b, true) }

func benchMatMulGPU(b *testing.B, toHost bool) {
	needGPUBench(b)
	n := benchEnv("GPUNOTES_BENCH_N", 40000)
	for i := 0; i < b.N; i++ {
		x, y := squareNormals(n)
		c, err := gpuarray.MatMul(x, y).Compute(gpuarray.OnGPU())
		if err != nil {
			b.Fatal(err)
		}
		if toHost {
			if _, err := c.Compute(); err != nil {
				b.Fatal(err)
			}
		}
		if i == 0 {
			b.Logf("%d x %d product: %s; C on %s", n, n, c.Path(), c.Where())
		}
		c.Release()
	}
}

// BenchmarkSVDSeed is seed 001's SVD: 10000 x 1000 in chunks of 1000 x 1000.
func BenchmarkSVDSeed(b *testing.B) { benchSVD(b, 10000, 1000, 1000, false) }

// BenchmarkSVDTall is a 1,000,000 x 1000 tall-and-skinny SVD in chunks of 100000 x 1000. It
// needs about 17 GB of memory and minutes on a 2-core machine, so it runs only when
// GPUNOTES_BENCH_TALL is set.
func BenchmarkSVDTall(b *testing.B) {
	if os.Getenv("GPUNOTES_BENCH_TALL") == "" {
		b.Skip("set GPUNOTES_BENCH_TALL=1 to run the 1,000,000 x 1000 SVD (about 17 GB)")
	}
	benchSVD(b, 1_000_000, 1000, 100_000, false)
}

// benchSolve solves a x = b for an N x N standard normal a and an N-vector b (GPUNOTES_BENCH_N,
// default n), generation included, with the solution brought to the host: the issue's
// "solve of a 10000 x 10000 system" row, as numpy.linalg.solve(a, b) and the CuPy peer
// (bench/cupy_linalg.py solve) do it.
func benchSolve(b *testing.B, n int, opts ...gpuarray.ComputeOption) {
	n = benchEnv("GPUNOTES_BENCH_N", n)
	for i := 0; i < b.N; i++ {
		rs := gpuarray.NewRandomState(42)
		a := rs.StandardNormal(gpuarray.Shape(n, n), gpuarray.Chunks(max(n/4, 1), max(n/4, 1)))
		v := rs.StandardNormal(gpuarray.Shape(n))
		x, err := gpuarray.Solve(a, v).Compute(opts...)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.Logf("solve of %d x %d: %s", n, n, x.Path())
		}
	}
}

// BenchmarkSolveGPU is the solve row on the GPU backend (cuSOLVER getrf and getrs on the
// fused values, which stay on the device).
func BenchmarkSolveGPU(b *testing.B) {
	needGPUBench(b)
	benchSolve(b, 10000, gpuarray.OnGPU())
}

// BenchmarkSolve is the solve row on the CPU (default N 2000: 10000 takes minutes on 2 cores).
func BenchmarkSolve(b *testing.B) { benchSolve(b, 2000) }

// BenchmarkMatMulLazyGPU is MatMul(x, y) computed with OnGPU, GPUNOTES_BENCH_N (default 10000)
// and chunks of N/4: the operands generated on the device, C kept there.
func BenchmarkMatMulLazyGPU(b *testing.B) {
	needGPUBench(b)
	n := benchEnv("GPUNOTES_BENCH_N", 10000)
	for i := 0; i < b.N; i++ {
		x, y := squareNormals(n)
		c, err := gpuarray.MatMul(x, y).Compute(gpuarray.OnGPU())
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.Logf("%d x %d lazy product: %s", n, n, c.Path())
		}
	}
}

// BenchmarkMatMulLazy is MatMul(x, y) of two N x N standard normal arrays (GPUNOTES_BENCH_N,
// default 2000; chunks of N/4) on the CPU threads, the product brought to a slice: each task a
// row chunk of x (generated by its fused kernel) by a column chunk of y.
func BenchmarkMatMulLazy(b *testing.B) {
	n := benchEnv("GPUNOTES_BENCH_N", 2000)
	for i := 0; i < b.N; i++ {
		x, y := squareNormals(n)
		if _, err := gpuarray.MatMul(x, y).ToSlice(gpuarray.Threads(0)); err != nil {
			b.Fatal(err)
		}
	}
}
