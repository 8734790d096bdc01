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
Usage: python3 bench/cupy_search.py [--n 100000000] [--m 1000000] [--dry]
(--dry: on NumPy, no GPU, to check the script; see bench/peer.py.)
"""
import peer
from peer import best, emit, to_host

a = peer.setup(n=100_000_000, m=1_000_000)
cp = peer.xp

x1 = cp.sort(cp.random.standard_normal(a.m))


def search(x2):
    return cp.searchsorted(x1, x2, side="left")


def ints():
    return cp.random.randint(-(1 << 40), 1 << 40, size=a.n, dtype=cp.int64)


rows = [
    ("searchsorted", lambda: cp.random.standard_normal(a.n), search, False),
    ("sort int64", ints, cp.sort, True),
]
for op, gen, f, host in rows:
    def regen():
        r = f(gen())
        return to_host(r) if host else r

    s, v = best(regen)
    emit(peer="cupy-regen", op=op, n=a.n, m=a.m, seconds=s, value=float(v[a.n // 2]))
    del v
    x = gen()

    def resident():
        r = f(x)
        return to_host(r) if host else r

    s, v = best(resident)
    emit(peer="cupy-resident", op=op, n=a.n, m=a.m, seconds=s, value=float(v[a.n // 2]))
    del v, x
    peer.free()
