// Package ptx is gpuarray's PTX generator: a kernel spec (Spec: random, constant, range,
// search and input leaves, elementwise ops, an optional full, partial or counting reduction)
// in, PTX text out (GeneratePTX, Generate against a parsed device library, Library), and the
// contract a launch keeps with the kernel: the task descriptor's layout (DescWords,
// SpecDescWords, AxesDescWords), the slicing of a task into blocks (Slices, SliceRange,
// PlanLaunches), and the 8-byte word and narrow formats of the data (EncodeWords,
// EncodeNarrow). It also writes the runtime's op-specific kernels: scans (ScanPTX), the
// device-side combination of partials (CombinePTX, WelfordCombinePTX) and weighted bincounts
// (WeightedPTX).
//
// It imports no driver: everything here runs, and is tested, on a machine without a GPU (the
// tests check generated kernels by reading them and by interpreting them, with the real device
// library, in package ptx/ptxtest, the PTX interpreter, which the runtime's tests use too).
// Package cuda (the runtime: devices, memory, transfers, linking, launches, result assembly)
// imports it, never the reverse.
//
// The library's elementwise math and the normal draw's slow path are copied into the kernel
// as the library's own PTX (ptxinline.go; consecutive calls' fast paths first, ptxsplit.go,
// their float64 constants from the constant bank, ptxconst.go); the block reductions and the
// other samplers stay calls, linked from the library's pieces a kernel needs (SplitLibrary,
// LibParts.ForKernel). The GPUNOTES_PTX_* variables of the environment select the generator's
// measured variants (Options, read once by EnvOptions, options.go); tests set them with
// SetOptions.
package ptx
