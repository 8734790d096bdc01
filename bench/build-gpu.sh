#!/usr/bin/env bash
# Builds, on a machine with Go (no CUDA needed), what the GPU machine runs: the gpunotes binary
# and the GPU test binaries, into the git-ignored .devcarry/. Then, on the GPU machine, from the
# repository root with .devcarry/ beside it: `bash bench/gpu.sh [test|bench|gen|all]` (the CuPy
# peers are bench/cupy_seed.py and bench/cupy_linalg.py, run by its python3; `bash bench/ops-gpu.sh`
# runs the op table of `gpunotes bench ops` against bench/cupy_ops.py). `make bench-gpu`.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devcarry
export GOOS=linux GOARCH=amd64
# Without symbol tables and DWARF (-s -w; Go's tracebacks keep their function names and lines):
# the nine binaries compress to about 29 MB instead of 59 MB, under the device tool's 64 MiB
# carry with the working tree (measured at e76d593).
ld='-s -w'
# The main binary links NVML (cluster/) through cgo; the GPU test binaries need no cgo.
go build -ldflags="$ld" -o .devcarry/gpunotes . || echo "warning: gpunotes binary not built; bench/gpu.sh falls back to the test binary's benchmark"
CGO_ENABLED=0 go test -c -ldflags="$ld" -o .devcarry/cuda.test ./gpuarray/cuda
CGO_ENABLED=0 go test -c -ldflags="$ld" -o .devcarry/ptx.test ./gpuarray/cuda/ptx
CGO_ENABLED=0 go test -c -ldflags="$ld" -o .devcarry/kernels.test ./kernels
CGO_ENABLED=0 go test -c -ldflags="$ld" -o .devcarry/gpuarray.test ./gpuarray
CGO_ENABLED=0 go test -c -ldflags="$ld" -o .devcarry/blas.test ./gpuarray/cuda/blas
CGO_ENABLED=0 go test -c -ldflags="$ld" -o .devcarry/cufft.test ./gpuarray/cuda/cufft
CGO_ENABLED=0 go test -c -ldflags="$ld" -o .devcarry/devsort.test ./gpuarray/cuda/devsort
# The cluster's GPU worker tests start workers from .devcarry/gpunotes; like it, they link NVML.
go test -c -ldflags="$ld" -o .devcarry/cluster.test ./cluster || echo "warning: cluster.test not built; bench/gpu.sh test skips the GPU worker tests"
git rev-parse --short HEAD >.devcarry/COMMIT
echo "built into .devcarry/ at $(cat .devcarry/COMMIT); on the GPU machine: bash bench/gpu.sh all"
