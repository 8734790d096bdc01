// Package linalg is the linear algebra of gpuarray on blocks of chunked matrices: a tiled
// matrix multiply whose partial products are summed per output block in a fixed order, QR of
// tall-and-skinny matrices by TSQR (a QR per row block, then QRs of the stacked R factors up a
// fixed tree), the SVD of tall-and-skinny matrices (TSQR, then the SVD of the small R), and the
// randomized SVD of matrices chunked in both dimensions, whose test matrix comes from the
// counter-based generator of gpuarray/rng so the factors do not depend on chunking or backend.
//
// Matrices are described by a Grid (chunk sizes along rows and columns) and a BlockFunc that
// produces one block on demand, so an input that is itself a computation (random numbers, a
// fused expression) is generated block by block right before its first use and never held
// whole. The dense work on blocks goes through a Kernels implementation: CPU (gonum's BLAS and
// LAPACK, the default) or the GPU one of gpuarray/cuda/blas (cuBLAS and cuSOLVER). Results say
// which kernels ran.
//
// All matrices are float64 and row-major. Tree shapes and summation orders depend only on the
// chunk sizes, never on scheduling, so results are reproducible run to run.
package linalg
