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
Usage: python3 bench/cupy_sort.py [--n 100000000] [--m 40000] [--dry]
(--dry: on NumPy, no GPU, to check the script; see bench/peer.py.)
"""
import peer
from peer import best, emit, to_host

a = peer.setup(n=100_000_000, m=40000)
cp = peer.xp

rows = [
    ("sort", a.n, lambda: cp.random.standard_normal(a.n), lambda x: cp.sort(x)),
    ("median(axis=0)", a.m, lambda: cp.random.standard_normal((a.m, a.m)), lambda x: cp.median(x, axis=0)),
]
for op, n, gen, f in rows:
    if n == 0:  # --m 0 or --n 0 leaves the row out
        continue
    # Each run brings its result to the host or synchronizes: no sync after it (as before).
    s, v = best(lambda: to_host(f(gen())), sync_after=False)
    emit(peer="cupy-regen", op=op, n=n, seconds=s, value=float(v[len(v) // 2]))
    x = gen()
    s, v = best(lambda: to_host(f(x)), sync_after=False)
    emit(peer="cupy-resident", op=op, n=n, seconds=s, value=float(v[len(v) // 2]))

    def device():
        r = f(x)
        peer.sync()
        return r

    s, v = best(device, sync_after=False)
    emit(peer="cupy-device", op=op, n=n, seconds=s, value=float(v[len(v) // 2]))
    del v
    del x
    peer.free()
