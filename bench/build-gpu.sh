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
# The main binary links NVML (cluster/) through cgo; the GPU test binaries need no cgo.
go build -o .devcarry/gpunotes . || echo "warning: gpunotes binary not built; bench/gpu.sh falls back to the test binary's benchmark"
CGO_ENABLED=0 go test -c -o .devcarry/cuda.test ./gpuarray/cuda
CGO_ENABLED=0 go test -c -o .devcarry/kernels.test ./kernels
CGO_ENABLED=0 go test -c -o .devcarry/gpuarray.test ./gpuarray
CGO_ENABLED=0 go test -c -o .devcarry/blas.test ./gpuarray/cuda/blas
CGO_ENABLED=0 go test -c -o .devcarry/cufft.test ./gpuarray/cuda/cufft
CGO_ENABLED=0 go test -c -o .devcarry/devsort.test ./gpuarray/cuda/devsort
# The cluster's GPU worker tests start workers from .devcarry/gpunotes; like it, they link NVML.
go test -c -o .devcarry/cluster.test ./cluster || echo "warning: cluster.test not built; bench/gpu.sh test skips the GPU worker tests"
# The cluster tests start gpunotes workers on the GPUs (NVML through cgo, as the main binary).
go test -c -o .devcarry/cluster.test ./cluster
git rev-parse --short HEAD >.devcarry/COMMIT
echo "built into .devcarry/ at $(cat .devcarry/COMMIT); on the GPU machine: bash bench/gpu.sh all"
