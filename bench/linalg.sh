#!/usr/bin/env bash
# CPU benchmark of the chunked SVD: gpunotes (gpuarray.SVD, Go benchmark BenchmarkSVDSeed)
# next to dask + NumPy (da.linalg.svd) in the same run, on seed 001's 10000 x 1000 array in
# chunks of 1000 x 1000 and on a 1,000,000 x 1000 tall-and-skinny array in chunks of
# 100000 x 1000 (about 17 GB of memory each; skip it with LINALG_SKIP_TALL=1). Both sides draw
# a uniform random input and materialize U, S and V. Appends a section to bench/RESULTS.md.
#
#   GPUNOTES_PYTHON=.venv/bin/python bench/linalg.sh [--machine "2-core VM"]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${GPUNOTES_PYTHON:-.venv/bin/python}
MACHINE="2-core VM"
if [ "${1:-}" = "--machine" ]; then MACHINE=$2; fi
COMMIT=$(git rev-parse --short HEAD)
cases=("10000 1000")
if [ -z "${LINALG_SKIP_TALL:-}" ]; then cases+=("1000000 100000"); fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
ours() { # rows chunk -> seconds; the benchmark's log stays in $out
	GPUNOTES_BENCH_ROWS=$1 GPUNOTES_BENCH_CHUNK=$2 go test -run '^$' -bench '^BenchmarkSVDSeed$' -benchtime 1x -timeout 60m -v ./gpuarray/ >"$out"
	awk '/^BenchmarkSVDSeed.*ns\/op/ { printf "%.2f\n", $3 / 1e9 }' "$out"
}

peer() { # rows chunk -> seconds
	"$PY" - "$1" "$2" <<'PYEOF'
import sys, time
import dask, dask.array as da
m, c = int(sys.argv[1]), int(sys.argv[2])
t0 = time.perf_counter()
x = da.random.RandomState(42).random_sample((m, 1000), chunks=(c, 1000))
u, s, v = da.linalg.svd(x)
u, s, v = dask.compute(u, s, v)
assert s.shape == (1000,)
print("%.2f" % (time.perf_counter() - t0))
PYEOF
}

rows=""
for cs in "${cases[@]}"; do
	set -- $cs
	o=$(ours "$1" "$2")
	p=$(peer "$1" "$2")
	r=$(awk -v p="$p" -v o="$o" 'BEGIN { printf "%.2f", p / o }')
	echo "SVD $1 x 1000, chunks $2 x 1000: gpunotes ${o} s, dask+numpy ${p} s, ratio ${r}"
	rows+="| SVD $1 x 1000, chunks $2 x 1000 | ${o} | ${p} | ${r} |"$'\n'
done
# The kernels that ran, as the last benchmark's result reports them (SVDResult.Path).
kernels=$(sed -n 's/.*rows: \(.*\); U on .*/\1/p' "$out" | head -1)
versions=$("$PY" -c 'import dask, numpy; print("dask", dask.__version__, "NumPy", numpy.__version__)')
cat >>bench/RESULTS.md <<EOF

## Linear algebra, CPU ($(date -u +%Y-%m-%d), machine "$MACHINE", commit $COMMIT)

\`bench/linalg.sh\`: gpuarray.SVD (TSQR, block kernels: $kernels) vs \`da.linalg.svd\` ($versions,
threads scheduler), uniform random input generated inside the timed region on both sides, U, S, V
materialized. Ratio = peer time / our time (> 1: we are faster).

| work | gpunotes s | dask+numpy s | ratio |
|---|---|---|---|
$rows
EOF
