#!/usr/bin/env bash
# Runs on a machine with two or more GPUs of one host (issue 19), from the repository root, with
# the binaries of bench/build-gpu.sh in $C (default .devcarry: gpunotes, gpuarray.test,
# cluster.test):
#  1. the several-GPU tests: results of OnGPUs and Persist across GPUs equal to one GPU's
#     (gpuarray.test -test.run SeveralGPUs), and a local cluster with one worker per GPU that
#     persists an array and computes on it with a worker SIGKILLed mid-computation, bit-equal to
#     one GPU (cluster.test);
#  2. `gpunotes bench ops --backend gpu --gpus K` for K = 1, 2, 4, 8 (those present) at each N,
#     every op but the reshape row (its 6.4 GB result is assembled on the host: a host-memory
#     benchmark), with the speed-up over one GPU and whether each op's value is bit-equal across K;
#  3. a PN x PN normal array persisted across all GPUs, then mean, column means, row standard
#     deviations and the sum of x + x.T on it (chunks copied between GPUs: GPUNOTES_PEER_COPY=1),
#     with GPUNOTES_GPU_TRACE's lines kept.
# Usage: bash bench/multi-gpu.sh [N ...]   (default 40000 80000); PN (default 120000), PCHUNK
# (default 20000). Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
C=${C:-.devcarry}
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ngpu=$(nvidia-smi -L | wc -l)
echo "commit $(cat "$C/COMMIT" 2>/dev/null); $ngpu x $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
rc=0
export GPUNOTES_GPU_TESTS=1
$C/gpuarray.test -test.run 'SeveralGPUs' -test.v -test.count=1 -test.timeout=300s 2>&1 | tee "$OUT/multi_test.log" | grep -E '^(--- |PASS|FAIL|ok)|_test.go'
[[ ${PIPESTATUS[0]} == 0 ]] || rc=1
GPUNOTES_BIN=$PWD/$C/gpunotes $C/cluster.test -test.run 'GPUClusterOnSeveralGPUs' -test.v -test.count=1 -test.timeout=300s 2>&1 | tee -a "$OUT/multi_test.log" | grep -E '^(--- |PASS|FAIL|ok)|_test.go'
[[ ${PIPESTATUS[0]} == 0 ]] || rc=1

# Every op of the table but the reshape row, as one regular expression.
match=$("$C/gpunotes" bench ops --n 8 --chunk 4 --json | python3 -c '
import json, sys
ops = [json.loads(l)["op"] for l in sys.stdin if l.startswith("{")]
esc = lambda s: "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in s)
print("^(" + "|".join(esc(o) for o in ops if "reshape" not in o) + ")$")')
log="$OUT/multi_ops.jsonl"
: >"$log"
for n in "${@:-40000 80000}"; do
	for k in 1 2 4 8; do
		((k > ngpu)) && break
		"$C/gpunotes" bench ops --backend gpu --gpus "$k" --n "$n" --chunk 10000 --match "$match" --json >>"$log" || rc=1
	done
done
python3 - "$log" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = collections.defaultdict(dict)
for r in rows:
    by[(r["n"], r["op"])][r["gpus"]] = r
ks = sorted({r["gpus"] for r in rows})
print("| N | op | " + " | ".join(f"{k} GPU (ms)" for k in ks) + " | " + " | ".join(f"speed-up {k}" for k in ks[1:]) + " | value bit-equal across K |")
print("|---|---|" + "---|" * (2 * len(ks) - 1) + "---|")
for (n, op), per in by.items():
    one = per.get(1)
    cells = [str(n), op] + [f"{per[k]['seconds']*1e3:.2f}" if k in per else "-" for k in ks]
    cells += [f"{one['seconds']/per[k]['seconds']:.2f}x" if one and k in per else "-" for k in ks[1:]]
    vals = {json.dumps(p["value"]) for p in per.values()}
    cells.append("yes" if len(vals) == 1 else "NO: " + ", ".join(sorted(vals)))
    print("| " + " | ".join(cells) + " |")
PY

pn=${PN:-120000}
pc=${PCHUNK:-20000}
# GPUNOTES_PEER_COPY=1: x + x.T's tasks read chunk (j, i) from the other GPU peer to peer.
GPUNOTES_PEER_COPY=1 GPUNOTES_GPU_TRACE=1 "$C/gpunotes" bench ops --backend gpu --gpus "$ngpu" --persist --n "$pn" --chunk "$pc" \
	--match '^(mean|mean\(axis=0\)|std\(axis=1\)|sum\(x \+ x\.T\))$' --json >"$OUT/multi_persist.jsonl" 2>"$OUT/multi_persist_trace.log" || { rc=1; tail -5 "$OUT/multi_persist_trace.log"; }
cat "$OUT/multi_persist.jsonl"
echo "trace: $(wc -l <"$OUT/multi_persist_trace.log") lines in multi_persist_trace.log"
grep -v '^kernel ' "$OUT/multi_persist_trace.log" | sort | uniq -c | sort -rn | head -20
exit $rc
