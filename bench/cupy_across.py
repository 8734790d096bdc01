#!/usr/bin/env python3
"""CuPy peer of gpuarray's TestGPUTimeCallsAcrossChunks: sort, argsort and fft -> abs -> sum of a
1-d float64 normal vector of --n values resident on the GPU; results left on the device (the
sum's one number comes back). Best of 3 after a warm-up, one JSON line per row."""
import argparse
import json
import time

import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=100_000_000)
a = p.parse_args()
dev = cp.cuda.Device()
x = cp.random.RandomState(1).standard_normal(a.n, dtype=cp.float64)
rows = [
    ("sort", lambda: cp.sort(x)),
    ("argsort", lambda: cp.argsort(x)),
    ("sum(abs(fft))", lambda: float(cp.abs(cp.fft.fft(x)).sum())),
]
for op, f in rows:
    f()
    dev.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        v = f()
        dev.synchronize()
        best = min(best, time.perf_counter() - t0)
        del v
    cp.get_default_memory_pool().free_all_blocks()
    print(json.dumps({"peer": "cupy-resident", "op": op, "n": a.n, "best_s": round(best, 6)}), flush=True)
