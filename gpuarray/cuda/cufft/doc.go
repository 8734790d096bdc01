// Package cufft binds NVIDIA's cuFFT at run time (dlopen through purego, as cuda/blas binds
// cuBLAS), and runs batched double-precision transforms of row-major blocks along one axis on
// a gpuarray/cuda Device. Without the library, Load returns an error wrapping ErrNoLibrary
// that says which names were tried, and callers run package gpuarray/fft on the CPU instead.
package cufft
