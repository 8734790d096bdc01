"""dask + NumPy CPU peer of `gpunotes bench ops --backend cpu` (the same table of ops).

Each op regenerates the N x N standard normal array in C x C chunks (dask.array.random,
float64; the float32 row casts it to float32, NumPy's RandomState has no float32 normals) and computes on the threaded scheduler, as
gpunotes regenerates and computes on its threads. Best of 3 after a warm-up.
Usage: python bench/dask_ops.py --n 20000 [--chunk 10000] [--op NAME]
Prints one JSON line per op: {"peer","op","n","chunk","device","seconds","value"}.
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
p.add_argument("--n", type=int, default=20000)
p.add_argument("--chunk", type=int, default=10000)
p.add_argument("--op", default="")
a = p.parse_args()
N, C = a.n, a.chunk
dask.config.set(scheduler="threads")
DEVICE = f"cpu: {platform.processor() or platform.machine()}, {os.cpu_count()} core(s)"

# The op table, in the order of gpunotes' opsTable (cmd_bench_ops.go).
OPS = [
    ("sum", lambda x: x.sum()),
    ("mean", lambda x: x.mean()),
    ("std", lambda x: x.std()),
    ("max", lambda x: x.max()),
    ("argmax", lambda x: x.argmax()),
    ("sum(axis=0)", lambda x: x.sum(axis=0)),
    ("mean(axis=0)", lambda x: x.mean(axis=0)),
    ("std(axis=0)", lambda x: x.std(axis=0)),
    ("sum(axis=1)", lambda x: x.sum(axis=1)),
    ("mean(axis=1)", lambda x: x.mean(axis=1)),
    ("std(axis=1)", lambda x: x.std(axis=1)),
    ("sum(x + x.T)", lambda x: (x + x.T).sum()),
    ("sum(exp(x) + sin(x))", lambda x: (da.exp(x) + da.sin(x)).sum()),
    ("sum(where(x > 0, x, -x))", lambda x: da.where(x > 0, x, -x).sum()),
    ("mean(x[::2, ::3])", lambda x: x[::2, ::3].mean()),
    ("sum(float32)", lambda x: x.sum()),
    ("sum(arange(n*n))", None),
    ("mean(x[x > 1])", lambda x: x[x > 1].mean()),
    ("sum(x.reshape(n/2, 2, n), axis=1)", lambda x: x.reshape(N // 2, 2, N).sum(axis=1)),
    ("sum(concat([x, x]))", lambda x: da.concatenate([x, x]).sum()),
    ("sum(Elementwise: where(x > 0, x * x, exp(x)) + 1)", lambda x: (da.where(x > 0, x * x, da.exp(x)) + 1).sum()),
    ("histogram(x, 100, range=(-5, 5))", lambda x: da.histogram(x, bins=100, range=(-5, 5))[0]),
]


def first(v):
    v = np.asarray(v)
    return float(v.ravel()[0])


def best(f):
    f()
    t, v = float("inf"), None
    for _ in range(3):
        t0 = time.perf_counter()
        v = f()
        t = min(t, time.perf_counter() - t0)
    return t, v


for name, op in OPS:
    if a.op and name != a.op:
        continue
    dt = np.float32 if name == "sum(float32)" else np.float64
    if op is None:
        f = lambda: first(da.arange(N * N, chunks=C * C, dtype=np.float64).sum().compute())
    else:
        f = lambda: first(op(da.random.RandomState(42).standard_normal((N, N), chunks=(C, C)).astype(dt)).compute())
    secs, v = best(f)
    print(json.dumps({"peer": f"dask {dask.__version__} + numpy {np.__version__}", "op": name, "n": N, "chunk": C,
                      "device": DEVICE, "seconds": round(secs, 6), "value": v}), flush=True)
