#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the binaries of bench/build-gpu.sh
# in $C (default .devcarry): `gpunotes bench ops --backend gpu` and its CuPy peers
# (bench/cupy_ops.py: regenerate per op, resident in device memory, dask + CuPy where dask is
# installed) at N x N in chunks of C, then prints the ratio table for bench/RESULTS.md.
# Usage: bash bench/ops-gpu.sh [N] [CHUNK]   (default 40000 10000); logs under $OUT. GPUS=K spreads
# our chunks over K GPUs (OnGPUs; the CuPy peers use one).
set -uo pipefail
cd "$(dirname "$0")/.."
N=${1:-40000}
CH=${2:-10000}
C=${C:-.devcarry}
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
log="$OUT/ops_$N.jsonl"
: >"$log"
echo "commit $(cat "$C/COMMIT" 2>/dev/null); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
rc=0
"$C/gpunotes" bench ops --backend gpu --gpus "${GPUS:-1}" --n "$N" --chunk "$CH" --json >>"$log" || rc=1
python3 bench/cupy_ops.py --n "$N" --chunk "$CH" >>"$log" 2>"$OUT/cupy_ops_$N.err" || { rc=1; tail -5 "$OUT/cupy_ops_$N.err"; }
python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
ours = {r["op"]: r for r in rows if r.get("backend") == "gpu"}
peers = {}
for r in rows:
    if "peer" in r and "seconds" in r:
        peers.setdefault(r["peer"], {})[r["op"]] = r["seconds"]
for r in rows:
    if "skipped" in r or "error" in r:
        print("note:", r)
names = list(peers)
full = ours.get("sum", {}).get("seconds")
# "to host": Compute then ToSlice, for results a GPU compute leaves on the device; the peers
# bring theirs to the host (.get()), so the ratios are against it.
print("| op | gpunotes (ms) | / our full sum | gpunotes to host (ms) | " + " | ".join(f"{p} (ms) | {p} / ours" for p in names) + " |")
print("|---|---|---|---|" + "---|---|" * len(names))
for op, r in ours.items():
    s = r["seconds"]
    h = r.get("to_host_seconds")
    cells = [f"{op}", f"{s*1e3:.2f}", f"{s/full:.2f}" if full else "-", f"{h*1e3:.2f}" if h else "-"]
    for p in names:
        t = peers[p].get(op)
        cells += [f"{t*1e3:.2f}", f"{t/(h or s):.2f}x"] if t else ["-", "-"]
    print("| " + " | ".join(cells) + " |")
if "sum(concat([x, x]))" in ours:
    print("sum(concat([x, x])) sums 2 n^2 elements: twice our full sum is its floor (its ratio is the doubled count, not a defect)")
bad = [op for op, r in ours.items() if "host" in r.get("path", "")]
print("host fallbacks:", bad or "none")
PY
exit $rc
