#!/usr/bin/env bash
# Runs every fuzz target of .ci/fuzz-targets for its count of inputs (the line's third field,
# else 50000x: fifty thousand inputs; FUZZTIME, when set, for every target), beyond their
# seeds (which `go test` runs anyway). A failure leaves the input that failed under the
# package's testdata/fuzz/<Target>/, where `go test` runs it from then on: commit it with the
# fix. FUZZPARALLEL sets the fuzzing processes (default 2: CI's cores). New inputs that widen
# coverage are minimized for at most FUZZMINIMIZETIME (default 1s; Go's 60s spent most of a
# 20 s budget minimizing: 7 inputs run in 20 s instead of 45,000). Run it with make's TEST_ENV
# (`make fuzz`): without GPUNOTES_BIN, cluster's TestMain builds the binary in every fuzzing
# process, and its target spent its budget on that (no input run in 58 s). FUZZTIME is a
# count, not a duration: with a duration, go test fails a target whose worker is slow to stop
# at the deadline ("context deadline exceeded", no failing input), which a busy machine made
# FuzzSchedulerPreAuth do; a count sets no deadline. 50000 inputs took 1-30 s per target here.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DEFAULT=50000x
FUZZPARALLEL=${FUZZPARALLEL:-2}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-1s}
fail=0
while read -r pkg target count; do
	case "$pkg" in ''|'#'*) continue ;; esac
	n=${FUZZTIME:-${count:-$DEFAULT}}
	echo "fuzz $pkg $target for $n"
	start=$SECONDS
	if ! $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$n" -fuzzminimizetime "$FUZZMINIMIZETIME" -parallel "$FUZZPARALLEL" "$pkg"; then
		echo "FAIL: fuzz $pkg $target"
		fail=1
	fi
	echo "fuzz $pkg $target: $((SECONDS - start)) s"
done < .ci/fuzz-targets
exit $fail
