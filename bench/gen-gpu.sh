#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the binaries of bench/build-gpu.sh in
# $C (default .devcarry): the switches of issue 20's generation work, both on by default now
# (GPUNOTES_PTX_DEFER_AXES, deferred slow normal draws in axis reductions; GPUNOTES_PTX_MIRROR,
# mirrored f(x, x.T) reductions). First the GPU tests with both on
# (TestGPUNormalReductionsMatchCPU checks exactly these kernels against the CPU), then the op
# table's rows they touch, off (=0) and on. Record the run in bench/RESULTS.md. Usage: bash bench/gen-gpu.sh [N] [CHUNK] (default 40000 10000); logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
N=${1:-40000}
CH=${2:-10000}
C=${C:-.devcarry}
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
export GPUNOTES_PYTHON=${GPUNOTES_PYTHON:-$(command -v python3)}
on=(GPUNOTES_PTX_DEFER_AXES=1 GPUNOTES_PTX_MIRROR=1)
echo "commit $(cat "$C/COMMIT" 2>/dev/null); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
rc=0
env "${on[@]}" GPUNOTES_GPU_TESTS=1 "$C/cuda.test" -test.v -test.count=1 -test.timeout=300s >"$OUT/gen_test.log" 2>&1 || rc=1
env "${on[@]}" GPUNOTES_GPU_TESTS=1 "$C/gpuarray.test" -test.v -test.count=1 -test.run GPU -test.timeout=300s >>"$OUT/gen_test.log" 2>&1 || rc=1
grep -E '^--- FAIL' "$OUT/gen_test.log"
echo "GPU tests with ${on[*]}: passed $(grep -c -- '^--- PASS' "$OUT/gen_test.log"), failed $(grep -c -- '^--- FAIL' "$OUT/gen_test.log")"
for op in sum 'sum(x + x.T)' 'sum(axis=0)' 'mean(axis=0)' 'std(axis=0)' 'sum(axis=1)' 'mean(axis=1)' 'std(axis=1)'; do
	off=$(env GPUNOTES_PTX_DEFER_AXES=0 GPUNOTES_PTX_MIRROR=0 "$C/gpunotes" bench ops --backend gpu --n "$N" --chunk "$CH" --op "$op" --json | python3 -c 'import json,sys; print("%.2f" % (json.loads(sys.stdin.readline())["seconds"]*1e3))')
	with=$(env "${on[@]}" "$C/gpunotes" bench ops --backend gpu --n "$N" --chunk "$CH" --op "$op" --json | python3 -c 'import json,sys; print("%.2f" % (json.loads(sys.stdin.readline())["seconds"]*1e3))')
	echo "| \`$op\` | $off | $with |"
done
exit $rc
