"""CuPy peers of TestGPULaneBench (gpuarray/lanes_bench_gpu_test.go), for the GPU machine.

Rows: an int64 sum of 1e9 uniform integers in [-1000, 1000) (generated then summed, and on an
array already in device memory), and cumulative sums of 1e8 float64 normals and of 1e8 int64
integers (cupy.cumsum; on the resident array with the result left on the device, and with
.get(); generated then scanned then .get()). Each figure is the best of 3 after a warm-up.
Usage: python3 bench/cupy_scan.py
Prints one JSON line per row: {"peer","op","variant","n","device","seconds","value"}.
"""
import json
import time

import cupy as cp

dev = cp.cuda.Device()
GPU = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()


def best(f):
    f()
    cp.cuda.Stream.null.synchronize()
    b = float("inf")
    v = None
    for _ in range(3):
        t0 = time.perf_counter()
        v = f()
        cp.cuda.Stream.null.synchronize()
        b = min(b, time.perf_counter() - t0)
    return b, v


def row(op, variant, n, f):
    s, v = best(f)
    print(json.dumps({"peer": "cupy " + cp.__version__, "op": op, "variant": variant, "n": n, "device": GPU, "seconds": s, "value": str(v)}), flush=True)


N = 10**9
rng = cp.random.default_rng(1)
row("int64 sum", "generated then summed", N, lambda: int(rng.integers(-1000, 1000, size=N, dtype=cp.int64).sum()))
x = rng.integers(-1000, 1000, size=N, dtype=cp.int64)
row("int64 sum", "resident", N, lambda: int(x.sum()))
del x
cp.get_default_memory_pool().free_all_blocks()

M = 10**8
y = rng.standard_normal(M)
row("float64 cumsum", "resident, result on the device", M, lambda: cp.cumsum(y).size)
row("float64 cumsum", "resident, result on the host", M, lambda: cp.cumsum(y).get()[-1])
row("float64 cumsum", "generated, result on the host", M, lambda: cp.cumsum(rng.standard_normal(M)).get()[-1])
z = rng.integers(-1000, 1000, size=M, dtype=cp.int64)
row("int64 cumsum", "resident, result on the device", M, lambda: cp.cumsum(z).size)
row("int64 cumsum", "resident, result on the host", M, lambda: cp.cumsum(z).get()[-1])
