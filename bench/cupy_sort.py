"""CuPy peers of the sort rows of issue 17 (gpuarray.TestGPUSortBench), for the GPU machine.

Rows: sort of N float64 standard normals (cupy.sort), and the median along axis 0 of an M x M
standard normal array (cupy.median). Variants:
  cupy-regen:    the input is generated on the device for each run (cupy.random), then the op
                 runs and the result comes to the host (.get()), as gpunotes' Compute does;
  cupy-resident: the input is generated once and stays on the device; each run sorts it and
                 brings the result to the host (CuPy's best case);
  cupy-device:   the resident input's op alone, its result left on the device (synchronized):
                 the device time that gpunotes' trace (GPUNOTES_GPU_TRACE=1) reports for its sort.
Each figure is the best of 3 after a warm-up. Prints one JSON line per row and variant.
Usage: python3 bench/cupy_sort.py [--n 100000000] [--m 40000]
"""
import argparse
import json
import time

import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=100_000_000)
p.add_argument("--m", type=int, default=40000)
a = p.parse_args()
GPU = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()


def best(fn):
    t = []
    for _ in range(4):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        v = fn()
        t.append(time.perf_counter() - t0)
    return min(t[1:]), v


rows = [
    ("sort", a.n, lambda: cp.random.standard_normal(a.n), lambda x: cp.sort(x)),
    ("median(axis=0)", a.m, lambda: cp.random.standard_normal((a.m, a.m)), lambda x: cp.median(x, axis=0)),
]
for op, n, gen, f in rows:
    if n == 0:  # --m 0 or --n 0 leaves the row out
        continue
    s, v = best(lambda: f(gen()).get())
    print(json.dumps({"peer": "cupy-regen", "op": op, "n": n, "device": GPU, "seconds": s, "value": float(v[len(v) // 2])}), flush=True)
    x = gen()
    s, v = best(lambda: f(x).get())
    print(json.dumps({"peer": "cupy-resident", "op": op, "n": n, "device": GPU, "seconds": s, "value": float(v[len(v) // 2])}), flush=True)

    def device():
        r = f(x)
        cp.cuda.Device().synchronize()
        return r

    s, v = best(device)
    print(json.dumps({"peer": "cupy-device", "op": op, "n": n, "device": GPU, "seconds": s, "value": float(v[len(v) // 2])}), flush=True)
    del v
    del x
    cp.get_default_memory_pool().free_all_blocks()
