"""CuPy peers of gpuarray.TestGPUSearchBench (issue 17's searchsorted and integer sort rows on
the device), for the GPU machine.

Rows: searchsorted of N float64 standard normals into a sorted array of M standard normals
(cupy.searchsorted, side left), and the sort of N int64 values (cupy.sort). Variants:
  cupy-regen:    the values are generated on the device for each run (cupy.random), then the op
                 runs; searchsorted's positions stay on the device (synchronized), the sort's
                 result comes to the host (.get()), as gpunotes' Compute does for each;
  cupy-resident: the values are generated once and stay on the device; each run does the op
                 alone, with the result handled as above (CuPy's best case).
Each figure is the best of 3 after a warm-up. Prints one JSON line per row and variant.
Usage: python3 bench/cupy_search.py [--n 100000000] [--m 1000000]
"""
import argparse
import json
import time

import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=100_000_000)
p.add_argument("--m", type=int, default=1_000_000)
a = p.parse_args()
GPU = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()


def best(fn):
    t = []
    for _ in range(4):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        v = fn()
        cp.cuda.Device().synchronize()
        t.append(time.perf_counter() - t0)
    return min(t[1:]), v


x1 = cp.sort(cp.random.standard_normal(a.m))


def search(x2):
    return cp.searchsorted(x1, x2, side="left")


def ints():
    return cp.random.randint(-(1 << 40), 1 << 40, size=a.n, dtype=cp.int64)


rows = [
    ("searchsorted", lambda: cp.random.standard_normal(a.n), search, False),
    ("sort int64", ints, cp.sort, True),
]
for op, gen, f, to_host in rows:
    def regen():
        r = f(gen())
        return r.get() if to_host else r

    s, v = best(regen)
    print(json.dumps({"peer": "cupy-regen", "op": op, "n": a.n, "m": a.m, "device": GPU, "seconds": s, "value": float(v[a.n // 2])}), flush=True)
    del v
    x = gen()

    def resident():
        r = f(x)
        return r.get() if to_host else r

    s, v = best(resident)
    print(json.dumps({"peer": "cupy-resident", "op": op, "n": a.n, "m": a.m, "device": GPU, "seconds": s, "value": float(v[a.n // 2])}), flush=True)
    del v, x
    cp.get_default_memory_pool().free_all_blocks()
