// Package kernels holds the CUDA C sources of the gpunotes device library, the PTX that nvcc
// generated from them (embedded in the binary), and the script that regenerates it (gen.sh, run
// on a machine with nvcc). The PTX is JIT-linked at run time by the driver with the kernels
// that package gpuarray/cuda generates for each fused expression, so no CUDA toolkit is needed
// where gpunotes runs. The linker inlines nothing across modules, so gpuarray/cuda copies the
// bodies of the elementwise math functions and of gpn_normal_slow into its kernels (the same
// PTX, so the same bits) and calls the rest.
//
// The ziggurat tables in zig_tables.h are generated from package gpuarray/rng (TablesHeader),
// so the GPU reads the very same bits as the CPU. Tests fail when zig_tables.h or the committed
// PTX is stale.
package kernels
