"""CPU peers of gpuarray's BenchmarkRfft (issue 17's FFT row): NumPy and dask.array rfft of N
standard normal float64 values, generation included, the spectrum in host memory. dask brings
the transformed axis into one chunk (rechunk), as gpuarray does.
Usage: python3 bench/fft_peer.py [--n N] [--repeat R]   (default N = 2^22)
Prints one JSON object per peer.
"""
import argparse
import json
import time

import dask
import dask.array as da
import numpy as np


def best(f, repeat):
    f()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    n = a.n

    def numpy_run():
        return np.fft.rfft(np.random.default_rng(42).standard_normal(n))

    def dask_run():
        x = da.random.default_rng(42).standard_normal(n, chunks=max(n // 8, 1))
        return da.fft.rfft(x.rechunk(-1)).compute()

    for peer, f in (("numpy " + np.__version__, numpy_run), ("dask " + dask.__version__, dask_run)):
        print(json.dumps({"row": "rfft", "n": n, "peer": peer, "seconds": best(f, a.repeat)}), flush=True)


if __name__ == "__main__":
    main()
