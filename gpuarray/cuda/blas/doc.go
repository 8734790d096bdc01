// Package blas runs the dense block kernels of gpuarray/linalg on an NVIDIA GPU through cuBLAS
// and cuSOLVER, loaded at run time with purego (dlopen of libcublas.so.* and libcusolver.so.*),
// in the style of gpuarray/cuda/driver: the binary builds without a CUDA toolkit and runs
// without one. When the libraries are absent, Load says so (ErrNoLibrary) and callers keep
// the CPU kernels; results name the kernels that ran.
//
// Arrays are row-major and cuBLAS/cuSOLVER column-major: a row-major m x n matrix is the
// column-major n x m transpose, so products swap their operands, QR transposes its block on
// the device (cublasDgeam), and the SVD of a wide R is taken as the SVD of its transpose.
// Every call runs on the device goroutine of gpuarray/cuda (its context current).
package blas
