#!/usr/bin/env bash
# CPU benchmark of the seed experiment, (x + 1)[::2, ::2].sum() with x ~ Normal(10, 1):
# gpunotes against dask + NumPy, measured in the same run, at N=20000 and 40000 (chunks 10000),
# single-thread and all cores. Prints times and ratios and appends a row per case (not with --no-append)
# to bench/RESULTS.md, with the load average. The peer is bench/dask_seed.py. Run by `make bench`
# (it sets GPUNOTES_BIN and GPUNOTES_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUNOTES_BIN:-bin/gpunotes}
PY=${GPUNOTES_PYTHON:-.venv/bin/python}
PEER=bench/dask_seed.py
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
machine="$cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $load_before"

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
		rows+=("| $(date -u +%Y-%m-%d) | $commit | $machine | seed N=$n chunk=$CHUNK, $th thread(s) | $(printf %.3f "$ts") s | dask+numpy $(field dask <<<"$peer")/$(field numpy <<<"$peer"): $(printf %.3f "$ps") s | ${ratio}x | z=$(printf %.2f "$z") |")
	done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average after: $load_after"
if [[ $APPEND == 1 ]]; then
	{
		echo
		echo "### CPU seed experiment (\`make bench\`, bench/cpu.sh), commit $commit"
		echo
		echo "Load average (1, 5, 15 min) before: $load_before; after: $load_after."
		echo
		echo "| date | commit | machine | case | gpunotes | peer | speedup | check |"
		echo "|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
	} >>bench/RESULTS.md
fi
