"""CPU peer of the seed experiment for bench/cpu.sh: dask.array on NumPy, written as a dask user
writes it.

    x = da.random.RandomState(seed).normal(10, 1, (N, N), chunks=C);  (x + 1)[::2, ::2].sum()

Usage: python bench/dask_seed.py --n 20000 --chunk 10000 --scheduler threads|single-threaded
Prints one JSON object: versions, the timed seconds (graph built and computed), the sum, the
expected sum 11 * kept and its z-score (each kept element has variance 1).
"""
import argparse
import json
import math
import time

import dask
import dask.array as da
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="the array is N x N")
    ap.add_argument("--chunk", type=int, default=10000, help="square chunks of this side")
    ap.add_argument("--scheduler", default="threads", choices=["threads", "single-threaded", "processes"])
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    start = time.perf_counter()
    x = da.random.RandomState(args.seed).normal(10, 1, size=(args.n, args.n), chunks=args.chunk)
    total = float((x + 1)[::2, ::2].sum().compute(scheduler=args.scheduler))
    seconds = time.perf_counter() - start

    kept = ((args.n + 1) // 2) ** 2
    expected = 11.0 * kept
    print(json.dumps({
        "peer": "dask+numpy", "dask": dask.__version__, "numpy": np.__version__,
        "scheduler": args.scheduler, "n": args.n, "chunk": args.chunk,
        "seconds": round(seconds, 4), "sum": total, "expected": expected,
        "z": (total - expected) / math.sqrt(kept),
    }))


if __name__ == "__main__":
    main()
