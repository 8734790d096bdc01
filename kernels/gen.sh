#!/usr/bin/env bash
# Regenerates the device library's PTX from lib.cu, and the device sort's from sort.cu, with nvcc
# (CUDA 12 or newer), and records the hash of the sources next to it (the Go tests check that the committed PTX is current).
# Usage: bash kernels/gen.sh [OUTDIR]   (default: kernels/ptx)
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-ptx}
mkdir -p "$out"
NVCC=${NVCC:-nvcc}
# Relocatable device code: every extern "C" __device__ function stays a .visible .func that
# generated kernels can call through the driver's JIT linker.
flags=(-ptx -rdc=true -O3 -std=c++17 -Xptxas=-O3)
# Generic: the oldest virtual architecture this nvcc supports (the driver JIT-compiles it for the
# GPU it finds); sm90: Hopper.
generic=$("$NVCC" --list-gpu-arch | sed -n 's/^compute_\([0-9]*\)$/\1/p' | sort -n | head -1)
"$NVCC" "${flags[@]}" -arch=compute_"$generic" -o "$out/lib_generic.ptx" lib.cu
"$NVCC" "${flags[@]}" -arch=sm_90 -o "$out/lib_sm90.ptx" lib.cu
# The device sort is a module of its own (nothing links against it): whole-program, no -rdc.
sflags=(-ptx -O3 -std=c++17 -Xptxas=-O3)
"$NVCC" "${sflags[@]}" -arch=compute_"$generic" -o "$out/sort_generic.ptx" sort.cu
"$NVCC" "${sflags[@]}" -arch=sm_90 -o "$out/sort_sm90.ptx" sort.cu
for f in gen.sh lib.cu zig_tables.h sort.cu random.cu; do printf '%s\n' "$f"; cat "$f"; done | sha256sum | awk '{print $1}' >"$out/SOURCES.sha256"
"$NVCC" --version | tail -1 >"$out/NVCC_VERSION"
echo "generic target: compute_$generic" >>"$out/NVCC_VERSION"
