// Package kernels holds the CUDA C sources of the gpunotes device library, the PTX that nvcc
// generated from them (embedded in the binary), and the script that regenerates it (gen.sh, run
// on a machine with nvcc). The PTX is JIT-linked at run time by the driver with the kernels
// that package gpuarray/cuda generates for each fused expression, so no CUDA toolkit is needed
// where gpunotes runs.
//
// The ziggurat tables in zig_tables.h are generated from package gpuarray/rng (TablesHeader),
// so the GPU reads the very same bits as the CPU. Tests fail when zig_tables.h or the committed
// PTX is stale.
package kernels
