#!/usr/bin/env bash
# The iterative workload of issue 16 on this machine: x = 2 * normal + 1, N x N in chunks of
# C, persisted once, then P passes that standardize its columns and sum the absolute values
# (`gpunotes bench iterate --backend cpu`), against dask + NumPy with persist()
# (bench/dask_iterate.py), in the same run, alternating, best of R runs each.
# Usage: bash bench/persist.sh [N] [CHUNK] [PASSES] [RUNS]   (default 6000 1500 10 3)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUNOTES_BIN:-bin/gpunotes}
PY=${GPUNOTES_PYTHON:-.venv/bin/python}
N=${1:-6000}
CH=${2:-1500}
P=${3:-10}
R=${4:-3}
for f in "$BIN" "$PY" bench/dask_iterate.py; do
	[[ -e "$f" ]] || { echo "bench/persist.sh: missing $f" >&2; exit 1; }
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$R"); do
	"$BIN" bench iterate --backend cpu --n "$N" --chunk "$CH" --passes "$P" --json >>"$log"
	"$PY" bench/dask_iterate.py --n "$N" --chunk "$CH" --passes "$P" >>"$log"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def best(rs, k):
    return min(r[k] for r in rs)
ours = [r for r in rows if "peer" not in r]
dask = [r for r in rows if r.get("peer") == "dask+numpy"]
n, c, p = ours[0]["n"], ours[0]["chunk"], ours[0]["passes"]
print(f"| N={n}, chunks {c}, {p} passes, best of {len(ours)} | persist (s) | {p} passes (s) | total (s) | value |")
print("|---|---|---|---|---|")
for name, rs in (("gpunotes (Threads)", ours), (f"dask {dask[0]['dask']} + NumPy {dask[0]['numpy']}, persist()", dask)):
    print(f"| {name} | {best(rs, 'persist_seconds'):.2f} | {best(rs, 'passes_seconds'):.2f} | {best(rs, 'seconds'):.2f} | {rs[-1]['value']:.6g} |")
print(f"dask / gpunotes, total: {best(dask, 'seconds') / best(ours, 'seconds'):.2f}x; passes: {best(dask, 'passes_seconds') / best(ours, 'passes_seconds'):.2f}x")
PY
