// Package fft computes discrete Fourier transforms of row-major blocks along one axis, on the
// CPU, with gonum's dsp/fourier (FFTPACK's algorithms: any length, no Bluestein error growth).
//
// gonum was chosen after measuring it against go-dsp (github.com/mjibson/go-dsp, unmaintained
// since 2018) in one run on a loaded 2-core machine: complex 2^20 points 139 ms vs 298 ms,
// 10^6 points 149 ms vs 2.66 s (go-dsp's Bluestein path, which also lost accuracy: 1e-6 apart
// from gonum), 2^22 points 0.77 s vs 1.46 s; gonum's real transform took 0.6x its complex
// one. The radix-2-only packages that advertise more speed (argusdusty/gofft and its forks)
// could not be fetched through the module proxy.
//
// A long line with cores to spare (rfft of 2^22 values in one chunk: NumPy and dask took half
// gonum's time there) is split in four steps (fourstep.go): short transforms down the columns
// and along the rows of the line seen as a matrix, on all cores, the short ones of
// power-of-two length by this package's radix-4 Stockham transform (4-5x gonum's at 1024 and
// 2048 points), other lengths by gonum's; a real line of even length n is the complex line of
// its n/2 value pairs, then one pass that separates the two halves' spectra (and the inverse
// real transform the same way backwards).
//
// The GPU counterpart is package gpuarray/cuda/cufft. Both follow NumPy's conventions: the
// forward transform is sum_j x[j] exp(-2 pi i jk/n), the inverse uses +i, and a scale factor
// (1, 1/n or 1/sqrt(n), NumPy's norm) is applied by the caller's choice.
package fft
