#!/usr/bin/env bash
# Multi-host cluster benchmarks across network namespaces on this machine (needs root):
# the seed experiment on two workers in two namespaces vs a local cluster of two workers, and
# a 1 GiB worker-to-worker fetch between namespaces. Prints the go test -bench output; the
# figures go to bench/RESULTS.md by hand or with --append.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/gpunotes .
GPUNOTES_BIN="$PWD/bin/gpunotes" go test -count=1 -run '^$' -bench 'SeedTwoHosts|SeedLocalCluster|Fetch1GBAcrossHosts' \
  -benchtime=1x -timeout 20m ./cluster/
