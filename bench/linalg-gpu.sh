#!/usr/bin/env bash
# GPU linear-algebra benchmarks (issue 7), run on the GPU machine from the repository root with
# the test binaries of bench/build-gpu.sh in DIR (default .devcarry): gpuarray's SVD (seed
# 001's 10000 x 1000, and 1,000,000 x 1000 in chunks of 100000 x 1000) and a 40000 x 40000
# product, each large result left on the device and then brought to the host, then the CuPy
# peers of bench/cupy_linalg.py in the same run.
#   bash bench/linalg-gpu.sh [DIR]
set -uo pipefail
D=${1:-.devcarry}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "commit $(cat "$D/COMMIT" 2>/dev/null)"
export GPUNOTES_GPU_TESTS=1 GPUNOTES_REQUIRE_GPU=1
"$D/gpuarray.test" -test.run '^$' -test.bench 'SVDSeedGPU$' -test.benchtime 3x -test.v 2>&1 | grep -E "Benchmark|linalg_bench"
# The product and the tall SVD twice: the result left on the device, and brought to the host.
"$D/gpuarray.test" -test.run '^$' -test.bench 'MatMulGPU' -test.benchtime 2x -test.v 2>&1 | grep -E "Benchmark|linalg_bench"
GPUNOTES_BENCH_TALL=1 "$D/gpuarray.test" -test.run '^$' -test.bench 'SVDTallGPU' -test.benchtime 2x -test.v 2>&1 | grep -E "Benchmark|linalg_bench"
python3 bench/cupy_linalg.py svd_seed svd_tall matmul 40000
