#!/usr/bin/env bash
# Reading benchmark (issue 16): a float64 .npy file and two Zarr stores of the same array
# (v3 zstd, v2 blosc-lz4 with byte shuffle), each read from disk and summed by gpunotes
# (`gpunotes bench read`), by NumPy (np.load(...).sum()) and by zarr-python + dask
# (da.from_zarr(...).sum()), against dd's sequential read of the .npy file, all in one run.
# Every read starts cold: the files are dropped from the page cache first (dd iflag=nocache,
# per file, so other processes' cached files stay). BENCH_IO_GB sets the size (default 4),
# BENCH_IO_DIR where the data goes (default a new directory under /var/tmp, removed at the
# end). Prints a table; appends it to bench/RESULTS.md unless --no-append.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUNOTES_BIN:-bin/gpunotes}
PY=${GPUNOTES_PYTHON:-.venv/bin/python}
APPEND=1
[[ "${1:-}" == "--no-append" ]] && APPEND=0
GB=${BENCH_IO_GB:-4}
COLS=8192
CHUNK_ROWS=2048 # 128 MiB chunks
ROWS=$(( GB * 1024 * 1024 * 1024 / 8 / COLS ))
for f in "$BIN" "$PY" bench/io_peer.py; do
	[[ -e "$f" ]] || { echo "bench/io.sh: missing $f" >&2; exit 1; }
done
DIR=${BENCH_IO_DIR:-}
if [[ -z "$DIR" ]]; then
	DIR=$(mktemp -d /var/tmp/gpunotes-io-XXXXXX)
	trap 'rm -rf "$DIR"' EXIT
fi
field() { "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }
evict() { find "$1" -type f -exec dd if={} iflag=nocache count=0 status=none \; ; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "generating a ${ROWS} x ${COLS} float64 array ($GB GiB) in $DIR"
[[ -e "$DIR/x.npy" ]] || "$PY" bench/io_peer.py gen "$DIR" "$ROWS" "$COLS" "$CHUNK_ROWS"
sync
bytes=$(stat -c %s "$DIR/x.npy")
load_before=$(load)
echo "load average before: $load_before"

# dd's cold sequential read of the .npy file, before and after the readers (the disk is shared
# and virtual: its rate moves); time / dd compares with the first.
ddread() {
	evict "$DIR/x.npy"
	local t0 t1
	t0=$(date +%s.%N)
	dd if="$DIR/x.npy" of=/dev/null bs=16M status=none
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
dd1=$(ddread)
printf 'dd sequential read: %.3f s, %.0f MB/s\n' "$dd1" "$(echo "$bytes / $dd1 / 1000000" | bc -l)"

rows=()
printf '%-22s %12s %12s %9s %12s\n' case gpunotes_s peer_s speedup vs_dd
for c in npy zstd blosc; do
	case $c in
	npy) path=$DIR/x.npy; mode=numpy ;;
	zstd) path=$DIR/x_zstd.zarr; mode=dask-zarr ;;
	blosc) path=$DIR/x_blosc.zarr; mode=dask-zarr ;;
	esac
	evict "$path"
	ours=$("$BIN" bench read "$path" --json)
	evict "$path"
	peer=$("$PY" bench/io_peer.py "$mode" "$path")
	ts=$(field seconds <<<"$ours")
	ps=$(field seconds <<<"$peer")
	os=$(field sum <<<"$ours")
	pss=$(field sum <<<"$peer")
	pname=$(field peer <<<"$peer")
	stored=$(du -sb "$path" | cut -f1)
	speed=$(echo "$ps / $ts" | bc -l)
	vsdd=$(echo "$ts / $dd1" | bc -l)
	printf '%-22s %12.3f %12.3f %8.2fx %11.2fx\n' "$c" "$ts" "$ps" "$speed" "$vsdd"
	rows+=("$(printf '| %s | %s | %s | %s (%d MB on disk) | %.3f s | %s: %.3f s | %.2fx | %.2fx dd | sums %s / %s |' \
		"$(date -u +%F)" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(nproc) cores" "$c" $((stored / 1000000)) "$ts" "$pname" "$ps" "$speed" "$vsdd" "$os" "$pss")")
done
dd2=$(ddread)
printf 'dd sequential read again: %.3f s, %.0f MB/s\n' "$dd2" "$(echo "$bytes / $dd2 / 1000000" | bc -l)"
load_after=$(load)
echo "load average after: $load_after"
if [[ $APPEND == 1 ]]; then
	{
		echo
		echo "### Reading and summing ${GB} GiB from disk, cold (bench/io.sh), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
		echo
		printf 'dd sequential read of the .npy file: %.3f s (%.0f MB/s) before the readers, %.3f s (%.0f MB/s) after; time / dd uses the first. Load average before %s, after %s.\n' \
			"$dd1" "$(echo "$bytes / $dd1 / 1000000" | bc -l)" "$dd2" "$(echo "$bytes / $dd2 / 1000000" | bc -l)" "$load_before" "$load_after"
		echo
		echo "| date | commit | machine | case | gpunotes | peer | speedup | time / dd | check |"
		echo "|---|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
	} >>bench/RESULTS.md
fi
