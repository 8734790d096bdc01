#!/usr/bin/env bash
# The four-step FFT of one long line on the device (issue 32, item 2). `bash bench/fourstep-gpu.sh
# build` (here, with Go) builds cuda.test, cufft.test and gpuarray.test into the git-ignored
# .devcarry-fourstep/; `bash bench/fourstep-gpu.sh` on the GPU machine (carry
# .devcarry-fourstep; the folder must be in the checkout the device tool sends) runs the
# kernels' GPU test, the four steps against one plan and the CPU (cufft.test), the same on
# persisted arrays in several chunks with Path checked (gpuarray.test), then
# TestGPUTimeFourStep at 1e8 and 1e9 (one plan and four steps, best of 3) and one traced run at
# 1e8. About 3 minutes; logs under $OUT (default out/fourstep).
set -uo pipefail
cd "$(dirname "$0")/.."
C=.devcarry-fourstep
if [[ ${1:-run} == build ]]; then
	mkdir -p $C
	export GOOS=linux GOARCH=amd64 CGO_ENABLED=0
	for p in cuda cuda/cufft; do
		go test -c -ldflags='-s -w' -o $C/$(basename $p).test ./gpuarray/$p || exit
	done
	go test -c -ldflags='-s -w' -o $C/gpuarray.test ./gpuarray || exit
	git rev-parse --short HEAD >$C/COMMIT
	(cd $C && tar -cJf bin.tar.xz cuda.test cufft.test gpuarray.test COMMIT && rm cuda.test cufft.test gpuarray.test)
	exit
fi
OUT=${OUT:-out/fourstep}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B=$(mktemp -d)
tar -xJf $C/bin.tar.xz -C "$B" || exit
. bench/cudalibs.sh
export GPUNOTES_GPU_TESTS=1 GPUNOTES_PYTHON=$(command -v python3)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "commit $(cat "$B"/COMMIT)"
(cd gpuarray/cuda && timeout 90 "$B"/cuda.test -test.run 'TestGPUFourStepKernels|TestTwiddlePTX|TestTransposePTX|TestRealPairsPTX|TestHalfPairsPTX|TestSquareTransposePTX|FourStepThroughKernels' -test.v >"$OUT"/cuda.log 2>&1; echo "cuda rc $?")
grep -E "^(--- |FAIL|PASS)" "$OUT"/cuda.log | head -20
(cd gpuarray/cuda/cufft && timeout 90 "$B"/cufft.test -test.run 'TestGPUFourStepMatchesOnePlan|TestGPUFFTMatchesCPU|TestPlanSizes|TestFourStepReason' -test.v >"$OUT"/cufft.log 2>&1; echo "cufft rc $?")
grep -E "^(--- |FAIL|PASS)|fourstep|four steps" "$OUT"/cufft.log | head -20
(cd gpuarray && timeout 150 "$B"/gpuarray.test -test.run 'TestGPUFourStepAcrossChunks$|TestGPUCallsAcrossChunks$' -test.v -test.timeout 150s >"$OUT"/gpuarray.log 2>&1; echo "gpuarray rc $?")
grep -E "^(--- |FAIL|PASS)|fourstep" "$OUT"/gpuarray.log | head -20
for n in 100000000 1000000000; do
	(cd gpuarray && GPUNOTES_FOURSTEP_BENCH=1 GPUNOTES_FOURSTEP_N=$n timeout 120 "$B"/gpuarray.test -test.run 'TestGPUTimeFourStep$' -test.v >"$OUT"/bench-$n.log 2>&1; echo "bench $n rc $?")
	grep -E '^\{|^--- |FAIL' "$OUT"/bench-$n.log | cut -c1-600
done
(cd gpuarray && GPUNOTES_FOURSTEP_BENCH=1 GPUNOTES_GPU_TRACE=1 timeout 60 "$B"/gpuarray.test -test.run 'TestGPUTimeFourStep$' -test.v >"$OUT"/trace.log 2>&1; echo "trace rc $?")
grep -iE "cufft|four steps|left on|kept" "$OUT"/trace.log | tail -30 | cut -c1-300
