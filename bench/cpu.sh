#!/usr/bin/env bash
# CPU benchmark of the seed experiment, (x + 1)[::2, ::2].sum() with x ~ Normal(10, 1):
# gpunotes against dask + NumPy, measured in the same run, at N=20000 and 40000 (chunks 10000),
# single-thread and all cores. Prints times and ratios and appends a row per case (not with --no-append)
# to bench/RESULTS.md. Run by `make bench` (it sets GPUNOTES_BIN, GPUNOTES_PYTHON,
# GPUNOTES_SHARED).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUNOTES_BIN:-bin/gpunotes}
PY=${GPUNOTES_PYTHON:-.venv/bin/python}
SHARED=${GPUNOTES_SHARED:-../shared}
PEER="$SHARED/peers/dask_cpu_seed.py"
APPEND=1
[[ "${1:-}" == "--no-append" ]] && APPEND=0
SIZES=${BENCH_SIZES:-"20000 40000"}
CHUNK=${BENCH_CHUNK:-10000}
for f in "$BIN" "$PY" "$PEER"; do
	[[ -e "$f" ]] || { echo "bench/cpu.sh: missing $f" >&2; exit 1; }
done
field() { "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
cores=$(nproc)
rows=()
printf '%-7s %-6s %12s %12s %8s %9s\n' N threads gpunotes_s dask_s ratio z
for n in $SIZES; do
	for mode in single all; do
		if [[ $mode == single ]]; then
			ours=$("$BIN" bench seed --n "$n" --chunk "$CHUNK" --backend cpu --scheduler inline --json)
			peer=$("$PY" "$PEER" --n "$n" --chunk "$CHUNK" --scheduler single-threaded)
			th=1
		else
			ours=$("$BIN" bench seed --n "$n" --chunk "$CHUNK" --backend cpu --scheduler threads --json)
			peer=$("$PY" "$PEER" --n "$n" --chunk "$CHUNK" --scheduler threads)
			th=$cores
		fi
		ts=$(field seconds <<<"$ours")
		ps=$(field seconds <<<"$peer")
		z=$(field z <<<"$ours")
		ratio=$("$PY" -c "print(f'{$ps/$ts:.1f}')")
		printf '%-7s %-6s %12.3f %12.3f %7sx %9.3f\n' "$n" "$th" "$ts" "$ps" "$ratio" "$z"
		rows+=("| $(date -u +%Y-%m-%d) | $commit | 2-core CI-class VM ($cores cores) | seed N=$n chunk=$CHUNK, $th thread(s) | $(printf %.3f "$ts") s | dask+numpy $(field dask <<<"$peer")/$(field numpy <<<"$peer"): $(printf %.3f "$ps") s | ${ratio}x | z=$(printf %.2f "$z") |")
	done
done
if [[ $APPEND == 1 ]]; then
	{
		echo
		echo "### CPU seed experiment (bench/cpu.sh), commit $commit"
		echo
		echo "| date | commit | machine | case | gpunotes | peer | speedup | check |"
		echo "|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
	} >>bench/RESULTS.md
fi
