#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the binaries of bench/build-gpu.sh in
# $C (default .devcarry): data that stays on the GPU (issue 16).
#  1. ops on a persisted N x N normal array (mean, std, column means, x + x.T sum, and the sums
#     of a float32 one, of int32(1000 x) and of x > 0, held in 4, 4 and 1 bytes per element):
#     `gpunotes bench ops --backend gpu --persist` against CuPy on an array already in device
#     memory (bench/cupy_ops.py --variants cupy-resident); target: within 1.3x of CuPy;
#  2. the iterative workload (`gpunotes bench iterate --backend gpu`) against dask + CuPy with
#     persist() (bench/dask_iterate.py --backend cupy, where dask is installed).
# Usage: bash bench/persist-gpu.sh [N] [CHUNK] [ITER_N] [ITER_CHUNK]   (default 40000 10000 20000 5000)
set -uo pipefail
cd "$(dirname "$0")/.."
N=${1:-40000}
CH=${2:-10000}
IN=${3:-20000}
IC=${4:-5000}
C=${C:-.devcarry}
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
log="$OUT/persist_$N.jsonl"
: >"$log"
echo "commit $(cat "$C/COMMIT" 2>/dev/null); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
rc=0
for op in "mean" "std" "mean(axis=0)" "sum(x + x.T)" "sum(float32)" "sum(int32)" "sum(bool)"; do
	"$C/gpunotes" bench ops --backend gpu --persist --n "$N" --chunk "$CH" --op "$op" --json >>"$log" || rc=1
done
python3 bench/cupy_ops.py --n "$N" --chunk "$CH" --variants cupy-resident >>"$log" 2>"$OUT/cupy_resident_$N.err" || { rc=1; tail -5 "$OUT/cupy_resident_$N.err"; }
"$C/gpunotes" bench iterate --backend gpu --n "$IN" --chunk "$IC" --passes 10 --json >>"$log" || rc=1
python3 bench/dask_iterate.py --backend cupy --n "$IN" --chunk "$IC" --passes 10 >>"$log" 2>"$OUT/dask_iterate.err" || { tail -3 "$OUT/dask_iterate.err"; }
python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
ours = {r["op"]: r for r in rows if r.get("backend") == "gpu" and r.get("persisted")}
cupy = {r["op"]: r for r in rows if r.get("peer") == "cupy-resident" and "seconds" in r}
print("| op (persisted) | gpunotes (ms) | CuPy resident (ms) | gpunotes / CuPy | path |")
print("|---|---|---|---|---|")
for op, r in ours.items():
    c = cupy.get(op, {}).get("seconds")
    print(f"| {op} | {r['seconds']*1e3:.2f} | {c*1e3:.2f} | {r['seconds']/c:.2f} | {r['path']} |" if c else f"| {op} | {r['seconds']*1e3:.2f} | - | - | {r['path']} |")
it = [r for r in rows if r.get("bench") == "iterate"]
for r in it:
    who = r.get("peer", "gpunotes")
    print(f"iterate {who}: n={r['n']} chunk={r['chunk']} persist {r['persist_seconds']:.3f} s, 10 passes {r['passes_seconds']:.3f} s, total {r['seconds']:.3f} s, value {r['value']:.6g}")
PY
exit $rc
