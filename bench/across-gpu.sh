#!/usr/bin/env bash
# Sorts and FFTs across chunks on the device (issue 32, item 2). `bash bench/across-gpu.sh build`
# (here, with Go) builds gpuarray.test and cufft.test into the git-ignored .devcarry-across/;
# `bash bench/across-gpu.sh` on the GPU machine (carry .devcarry-across; the folder must be in
# the checkout the device tool sends) runs TestGPUCallsAcrossChunks, cufft's GPU tests, then
# TestGPUTimeCallsAcrossChunks (1e8 in eight chunks) beside bench/cupy_across.py, and the same
# timing once with GPUNOTES_GPU_TRACE=1. About 2 minutes; logs under $OUT (default out/across).
set -uo pipefail
cd "$(dirname "$0")/.."
C=.devcarry-across
if [[ ${1:-run} == build ]]; then
	mkdir -p $C
	export GOOS=linux GOARCH=amd64 CGO_ENABLED=0
	go test -c -ldflags='-s -w' -o $C/gpuarray.test ./gpuarray && go test -c -ldflags='-s -w' -o $C/cufft.test ./gpuarray/cuda/cufft || exit
	git rev-parse --short HEAD >$C/COMMIT
	(cd $C && tar -cJf bin.tar.xz gpuarray.test cufft.test COMMIT && rm gpuarray.test cufft.test)
	exit
fi
OUT=${OUT:-out/across}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B=$(mktemp -d)
tar -xJf $C/bin.tar.xz -C "$B" || exit
. bench/cudalibs.sh
export GPUNOTES_GPU_TESTS=1 GPUNOTES_PYTHON=$(command -v python3)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "commit $(cat "$B"/COMMIT)"
(cd gpuarray && timeout 75 "$B"/gpuarray.test -test.run 'TestGPUCallsAcrossChunks$' -test.v -test.timeout 75s >"$OUT"/gpuarray.log 2>&1; echo "gpuarray rc $?")
grep -E "^(--- |FAIL|PASS)|acrosschunks" "$OUT"/gpuarray.log | head -20
(cd gpuarray/cuda/cufft && timeout 30 "$B"/cufft.test -test.run 'TestGPUFFT|TestPlanSizes' -test.v >"$OUT"/cufft.log 2>&1; echo "cufft rc $?")
grep -E "^(--- |FAIL|PASS)" "$OUT"/cufft.log | head -20
(cd gpuarray && GPUNOTES_ACROSS_BENCH=1 timeout 45 "$B"/gpuarray.test -test.run 'TestGPUTimeCallsAcrossChunks$' -test.v >"$OUT"/bench.log 2>&1; echo "bench rc $?")
grep -E '^\{|^--- |FAIL' "$OUT"/bench.log | cut -c1-700
timeout 30 python3 bench/cupy_across.py >"$OUT"/cupy.log 2>&1
echo "cupy rc $?"
tail -5 "$OUT"/cupy.log
(cd gpuarray && GPUNOTES_ACROSS_BENCH=1 GPUNOTES_GPU_TRACE=1 timeout 25 "$B"/gpuarray.test -test.run 'TestGPUTimeCallsAcrossChunks$' -test.v >"$OUT"/trace.log 2>&1; echo "trace rc $?")
grep -iE "devsort|cufft|join|left on|kept" "$OUT"/trace.log | tail -25 | cut -c1-300
