#!/usr/bin/env bash
# One device call (nvidia-h200, about 8 minutes) for the GPU rows of issues 31 and 33 at 1e8
# rows: ours (`gpunotes bench frame --task join`, then `--task groupby`, each on a frame
# persisted on the GPU, with CPU profiles of the questions) alone on the GPU, pandas beside it
# (one core each of 16: the groupby questions q1-q9 in two processes, the five join questions
# in one, once each), then pyarrow (Acero, all cores) timed once ours is done. Binaries come
# from $C (gpunotes.xz, built with Go elsewhere), the peers' scripts from $C too when they
# travel there. Writes $OUT/{gb,j}.jsonl, ours.err, {gb,j}.prof and peers.jsonl.
set -uo pipefail
C=${C:-.devcarry-gpu1e8}
OUT=${OUT:-out/frame-1e8}; mkdir -p "$OUT"
ROWS=${ROWS:-100000000}
B=$(cd "$(dirname "$0")" && pwd)
P=$C; [[ -f $P/join_peers.py ]] || P=$B
. "$B/cudalibs.sh"
G=/tmp/gpunotes-frame
xz -dc "$C/gpunotes.xz" >$G && chmod +x $G
export GPUNOTES_PYTHON=$(command -v python3) PYTHONUNBUFFERED=1
echo "commit $(cat "$C/COMMIT" 2>/dev/null); $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1); $(nproc) cores; pandas $(python3 -c 'import pandas; print(pandas.__version__)'); pyarrow $(python3 -c 'import pyarrow; print(pyarrow.__version__)')"
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
GO=/tmp/frame-1e8-ours-done
rm -f $GO
pids=()
for qs in ${PANDAS_GB:-q1,q2,q3,q4,q5 q6,q7,q8,q9}; do
	(timeout "${PEER_S:-420}" python3 "$P/groupby_peers.py" --rows "$ROWS" --engines pandas --questions "$qs" --reps 1 >>"$OUT/peers.jsonl") & pids+=($!)
done
(timeout "${PEER_S:-420}" python3 "$P/join_peers.py" --rows "$ROWS" --engines pandas --questions "${PANDAS_J:-q1,q2,q3,q4,q5}" --reps 1 >>"$OUT/peers.jsonl") & pids+=($!)
(timeout "${PEER_S:-420}" python3 "$P/join_peers.py" --rows "$ROWS" --engines pyarrow --reps 2 --wait-for $GO >>"$OUT/peers.jsonl") & pids+=($!)
# ours: SIGTERM at the limit cancels a bench (its profile is written), SIGQUIT 3 s later dumps
# the goroutines of one that did not stop.
ours() { # task limit
	GPUNOTES_CPUPROFILE=$OUT/$3.prof $G bench frame --task "$1" --rows "$ROWS" --backend gpu --json >"$OUT/$3.jsonl" 2>>"$OUT/ours.err" &
	local p=$!
	( sleep "$2"; kill -TERM $p 2>/dev/null; sleep 3; kill -QUIT $p 2>/dev/null ) &
	local w=$!
	wait $p; local rc=$?
	kill $w 2>/dev/null
	return $rc
}
ours join "${J_S:-150}" j; el "ours join rc $?"
ours groupby "${GB_S:-150}" gb; el "ours groupby rc $?"
touch $GO
# pyarrow's groupby after its join (its tables made then: the host's memory holds the
# others' at once), so that the two share no cores.
wait "${pids[-1]}"
el "pyarrow join done"
timeout "${PA_GB_S:-120}" python3 "$P/groupby_peers.py" --rows "$ROWS" --engines pyarrow --questions q1,q2,q3,q4,q5,q6,q7,q10 --reps 2 >>"$OUT/peers.jsonl"
for p in "${pids[@]}"; do wait "$p"; done
el "peers done"
cut -c1-300 "$OUT/j.jsonl" "$OUT/gb.jsonl"; cat "$OUT/peers.jsonl"
grep -a "^bench frame" "$OUT/ours.err"; grep -a -m3 -i "panic\|goroutine 1 " -A12 "$OUT/ours.err" | cut -c1-200 | head -30
