"""The CuPy peers' shared preamble (bench/cupy_search.py, bench/cupy_sort.py): the size
arguments, the array module, the device's name, the best-of-3 timing and the JSON lines.

On the GPU machine the module is CuPy. With --dry it is NumPy (no GPU, no CuPy: how the repo's
tests run the scripts' whole path at small sizes); a dry run's figures mean nothing.
"""
import argparse
import json
import time

xp = None
DEVICE = None


def setup(**sizes):
    """Parses --NAME (an int, default the value) for each size, and --dry; sets xp and DEVICE."""
    global xp, DEVICE
    p = argparse.ArgumentParser()
    for name, default in sizes.items():
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dry", action="store_true", help="run on NumPy (no GPU) to check the script; its figures mean nothing")
    a = p.parse_args()
    if a.dry:
        import numpy

        xp, DEVICE = numpy, "none (dry run on NumPy)"
    else:
        import cupy

        xp = cupy
        DEVICE = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    return a


def sync():
    """Waits for the device's work (nothing to wait for on NumPy)."""
    if xp.__name__ == "cupy":
        xp.cuda.Device().synchronize()


def to_host(r):
    """r in host memory (CuPy's .get())."""
    return r.get() if xp.__name__ == "cupy" else r


def free():
    """Gives CuPy's pooled device memory back between rows."""
    if xp.__name__ == "cupy":
        xp.get_default_memory_pool().free_all_blocks()


def best(fn, sync_after=True):
    """The best of 3 runs of fn after a warm-up, and the last run's value. The device is
    synchronized before each run, and after it where sync_after (fn that bring their result to
    the host, or synchronize themselves, need not)."""
    t = []
    for _ in range(4):
        sync()
        t0 = time.perf_counter()
        v = fn()
        if sync_after:
            sync()
        t.append(time.perf_counter() - t0)
    return min(t[1:]), v


def emit(seconds, value, **row):
    """Prints one JSON line: the row's fields (peer, op, sizes), the device, seconds, value."""
    print(json.dumps({**row, "device": DEVICE, "seconds": seconds, "value": value}), flush=True)
