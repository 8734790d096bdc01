#!/usr/bin/env bash
# Runs on a multi-GPU machine with .devcarry/ (bench/build-gpu.sh): the seed experiment on
# K = 1, 2, 4, 8 GPUs (those present), in one process (OnGPUs) and through the local cluster
# (one worker process per GPU), with per-GPU utilization sampled during each run, and the
# fused-kernel peer on one GPU. Usage: bash bench/gpu-scale.sh N [N ...]
set -uo pipefail
cd "$(dirname "$0")/.."
C=.devcarry
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
ngpu=$(nvidia-smi -L | wc -l)
echo "commit $(cat $C/COMMIT 2>/dev/null); $ngpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
for n in "${@:-500000}"; do
	python3 bench/cupy_seed.py --n "$n" --chunk 10000 --skip-pipeline 2>&1 | tee -a "$OUT/scale.jsonl"
	for k in 1 2 4 8; do
		((k > ngpu)) && break
		for sched in threads cluster; do
			nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 100 >"$OUT/util_${n}_${k}_${sched}.csv" &
			smi=$!
			$C/gpunotes bench seed --n "$n" --chunk 10000 --backend gpu --scheduler $sched --gpus $k --json 2>&1 | tee -a "$OUT/scale.jsonl"
			kill $smi 2>/dev/null; wait $smi 2>/dev/null
			# Mean utilization per GPU over the samples where any GPU was busy.
			python3 - "$OUT/util_${n}_${k}_${sched}.csv" "$k" "$sched" "$n" <<'PY'
import sys, collections
rows = [l.split(",") for l in open(sys.argv[1]) if "," in l]
per = collections.defaultdict(list)
for i, u in rows:
    per[int(i)].append(float(u))
busy = {i: [x for x in v if x > 0] for i, v in per.items()}
print({"util": {i: round(sum(v) / len(v), 1) if v else 0.0 for i, v in sorted(busy.items()) if i < int(sys.argv[2])},
       "k": int(sys.argv[2]), "scheduler": sys.argv[3], "n": int(sys.argv[4])})
PY
		done
	done
done
