"""CPU peers of the solve row (issue 17): numpy.linalg.solve and dask.array.linalg.solve of an
N x N standard normal system with a normal right-hand side, generation included, as
gpuarray's BenchmarkSolve does (`go test ./gpuarray -run '^$' -bench 'Solve$'`). dask's a is in
chunks of N/4 x N/4 (as gpuarray's) and computed on the threaded scheduler. Best of --repeat
after a warm-up (none when --repeat is 1).
Usage: python bench/solve_peer.py --n 2000 [--repeat 3]
Prints one JSON line per peer: {"peer","n","device","seconds"}.
"""
import argparse
import json
import os
import platform
import time

import dask
import dask.array as da
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=2000)
p.add_argument("--repeat", type=int, default=3)
a = p.parse_args()
N = a.n
dask.config.set(scheduler="threads")
DEVICE = f"cpu: {platform.processor() or platform.machine()}, {os.cpu_count()} core(s)"


def numpy_solve():
    rs = np.random.RandomState(42)
    x = rs.standard_normal((N, N))
    b = rs.standard_normal(N)
    return np.linalg.solve(x, b)


def dask_solve():
    c = max(N // 4, 1)
    rs = da.random.RandomState(42)
    x = rs.standard_normal((N, N), chunks=(c, c))
    b = rs.standard_normal(N, chunks=c)
    return da.linalg.solve(x, b).compute()


for name, f in (("numpy", numpy_solve), ("dask+numpy", dask_solve)):
    if a.repeat > 1:
        f()
    best = float("inf")
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"peer": name, "n": N, "device": DEVICE, "seconds": best}), flush=True)
