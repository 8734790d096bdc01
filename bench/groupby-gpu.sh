#!/usr/bin/env bash
# One device call for the GPU groupby (issue 31): the GPU groupby tests, then db-benchmark's
# groupby q1-q10 at ROWS rows on the GPU (`gpunotes bench frame --task groupby --backend gpu`),
# with the pandas peer (bench/groupby_peers.py) running beside it on the host's other cores:
# PANDAS_Q's questions, once each, cut at PANDAS_S seconds. Binaries come from $C/bin.tar.xz
# (gpunotes and dataframe.test, built on a machine with Go). Writes $OUT/gpu.jsonl and
# $OUT/pandas.jsonl. PEERS names the peers script when it travels beside the binaries.
set -uo pipefail
cd "$(dirname "$0")/.."
C=${C:-.devcarry-gbgpu}
OUT=${OUT:-out/gbgpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROWS=${ROWS:-100000000}
tar -xJf "$C/bin.tar.xz" -C "$C"
echo "commit $(cat "$C/COMMIT"); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(nproc) cores; pandas $(python3 -c 'import pandas; print(pandas.__version__)')"
(timeout "${PANDAS_S:-200}" python3 "${PEERS:-bench/groupby_peers.py}" --rows "$ROWS" --engines pandas \
	--questions "${PANDAS_Q:-q6,q7,q9,q10,q8}" --reps 1 >"$OUT/pandas.jsonl" 2>"$OUT/pandas.err") &
pp=$!
export GPUNOTES_PYTHON=$(command -v python3) GPUNOTES_GPU_TESTS=1
(cd dataframe && timeout "${TEST_S:-60}" "../$C/dataframe.test" -test.run 'TestGPUGroupBy' -test.v -test.count=1 2>&1 |
	grep -E '^(---|PASS|FAIL|ok|panic)|_test.go' | head -40)
start=$(date +%s.%N)
timeout "${BENCH_S:-150}" "$C/gpunotes" bench frame --task groupby --rows "$ROWS" --backend gpu --json >"$OUT/gpu.jsonl" 2>"$OUT/gpu.err"
echo "bench rc $? after $(echo "$(date +%s.%N) - $start" | bc) s"
wait $pp
echo "pandas rc $?"
cat "$OUT/gpu.jsonl" "$OUT/pandas.jsonl"
tail -5 "$OUT/gpu.err" "$OUT/pandas.err"
