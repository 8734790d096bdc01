// Package cuda is the NVIDIA GPU executor of gpuarray: it lowers a fused chunk computation
// (a plan.Kernel) to a kernel spec (Spec, Lower), has package cuda/ptx generate its PTX, links
// it with the embedded device library (package kernels) through the driver's JIT linker,
// caches the module per spec, and runs many chunks (Tasks) per launch without storing any
// intermediate array; it keeps devices, the memory pool, transfers, launches and the assembly
// of results. The generator (inlined library bodies, deferred slow draws, tiles, mirrors,
// scans) is package cuda/ptx, which imports no driver; the tests interpret generated kernels on
// the host with package cuda/ptx/ptxtest. Only the driver (libcuda.so.1, bound by
// package cuda/driver) is needed; without one, Devices and Open return an error wrapping
// ErrNoDriver ("no NVIDIA driver found: libcuda.so.1").
//
// How gpuarray calls it:
//
//	devs, err := cuda.Devices()            // none (and ErrNoDriver) on machines without a driver
//	d, err := cuda.Open(i)                 // i: index among visible GPUs (CUDA_VISIBLE_DEVICES)
//	res, err := d.Run(ctx, spec, tasks, cuda.Options{})
//	res, err := cuda.RunOn(ctx, []*cuda.Device{d0, d1}, spec, tasks, cuda.Options{}) // OnGPUs
//
// A Task gives the chunk's iteration space (Dims) and, per leaf, an affine index map (Off +
// sum Strides[k]*i_k) into the random array as created (the element index that seeds Philox)
// or into the leaf's input buffer; strided slices, transposes and broadcasts are such maps, so
// a sliced random array generates only the elements it keeps. Result holds, per task, the
// partial (sum, min, max), the arg index, the Welford triple (mean/var/std), or the stored
// elements (no reduction). Each partial is computed in a fixed order (BlockSize threads,
// ElemsPerBlock elements per block, slices combined pairwise), so it does not depend on timing
// or on which GPU ran it; the caller combines chunk partials in its own fixed tree order.
//
// A reduction over some axes only (Spec.Kept) gives one partial per kept element (Result.Axes):
// eight warps per 32 kept elements and slice walk the reduced elements in order (neighbouring
// lanes on neighbouring kept elements: a column sum reads contiguously) and merge through
// shared memory; when the innermost axis is reduced over long runs (Spec.Rows), a warp per
// kept element and slice whose lanes read neighbouring elements and merge by shuffles in a
// fixed order; over runs of at most 32 elements (Spec.Short: a reshape's pairs, a few rows), a
// thread per kept element walks its whole run, one slice, nothing to merge. Slices are
// combined in slice order, then a result's tasks in the host's tree order: for sums, means,
// variances and standard deviations by a generated kernel on the device (RunPlanSumKeep,
// RunPlanWelfordKeep, reduce_keep.go, the host's bits), for the others on the host; how many
// slices a task has depends on its shape alone. Range leaves (Arange,
// Linspace) are computed in the kernel as the CPU computes them, bit for bit.
//
// Integer reductions (sum, min, max, argmin, argmax; counts of bools) accumulate in 64-bit
// integer registers, compared signed or unsigned by the dtype (Result.Ints, Partial.Ints), so
// any order gives the CPU's bits; complex sums accumulate pairs of floats (Result.Imag) in the
// float sums' fixed order (ptx/reduce_lanes.go, lanes.go). Cumulative sums and products, and products along
// an axis, are generated scans over a task's values left on the device (scan.go).
//
// Random numbers follow package gpuarray/rng exactly: uniforms and integers are bit-identical
// to the CPU, normals agree within 2 ulp (measured: 1 ulp at most). A kernel that draws
// normals defers an element whose draw leaves the ziggurat's fast path (1.5% of draws), so the
// warp does not wait on one lane's slow draw at every step (ptx/ptxdefer.go): a reduction holds a
// thread's values in batches (32 words), the warp's lanes compute the batch's slow draws
// together, then the batch is added in element order, so the bits are those of the same
// reduction of the values stored; an elementwise or counting kernel, whose order does not
// matter, queues slow elements and computes them when the queue is full or at its last one.
package cuda
