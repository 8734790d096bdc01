// Package gpuarray is chunked, lazy N-d arrays in the spirit of dask.array: operations build an
// expression graph, and Compute plans it into fused per-chunk tasks that a scheduler runs on a
// backend, the CPU (Inline, Threads) or NVIDIA GPUs (OnGPU, OnGPUs), or on a cluster (On).
//
//	rs := gpuarray.NewRandomState(42)
//	x := rs.Normal(10, 1, gpuarray.Shape(20000, 20000), gpuarray.Chunks(10000, 10000))
//	y := x.Add(1).Slice(gpuarray.Every(2), gpuarray.Every(2))
//	s, err := y.Sum().Float64(gpuarray.Threads(0))
//
// Random numbers are counter-based (package gpuarray/rng): an element's value depends only on
// the seed and its index, never on chunking, scheduler or backend, and a strided slice of a
// random array generates only the elements it keeps. Chains of random numbers, elementwise
// operations, views and a reduction run as one pass per chunk, with no intermediate arrays.
//
// The vocabulary is the Python Array API's (name_with_parts becomes NameWithParts, a package
// function and, where NumPy has one, a method). Reshapes, joins (Concat, Stack, Roll, Tile),
// flips, new axes and broadcasts fuse into the same pass and copy nothing by themselves; a
// reshape of a slice, a transpose or a broadcast computes its operand first, as NumPy copies.
// Take, TakeAlongAxis and Indices read positions an integer array gives, and Mask (NumPy's
// x[mask]) gives an array whose length is unknown (-1, shown as nan) until the mask is
// computed, as dask's chunks of NaN size: ComputeChunkSizes resolves it, and an operation that
// needs the length before says so. A computed array prints as NumPy prints it.
//
// MatMul (Dot) is lazy like every other op: Compute runs it, one task per row chunk of a and
// column chunk of b. The factorizations (QR, SVD, SVDCompressed) run when they are called, with
// the options given to them. On a GPU large results (a product computed with OnGPU, U of a tall
// SVD) stay in device memory until read (Where, Release): later GPU products, SVDs and fused
// kernels read them in place, and ToSlice or Compute copy them to the host once.
//
// Errors made while building an expression (shapes that do not broadcast, bad indices) are
// kept in the array they produce and in every array built from it: Err reports them, and
// Compute returns them. Arrays are immutable and safe for concurrent use.
//
// The package is the API: arrays and their creation (array.go, create.go, random.go, files.go),
// ops (ops.go, ops_gen.go, methods.go), manipulation and indexing (manip.go, index.go),
// statistics, sorting, searching and sets (stats.go, sort.go, search.go, unique.go), FFT and
// linear algebra (fft.go, linalg.go), printing (repr.go, format.go). Beside it, the execution
// that works on arrays' graphs: Compute's stage loop (compute.go), the GPU scheduler (gpu.go),
// library calls and result assembly on GPUs (gpu_calls.go, gpu_results.go, matmul_gpu.go),
// residency and persistence (resident.go, persist.go, persist_host.go). What needs no array
// (the CPU schedulers, progress, host-fallback notes, host memory of held copies) is package
// gpuarray/engine, which dataframe can use too; planning is gpuarray/plan, the executors
// gpuarray/cpu and gpuarray/cuda.
package gpuarray
