"""Peer of `gpunotes bench iterate`: the iterative workload with dask.array and persist(), on
NumPy (the CPU) or CuPy (a GPU), written as a dask user writes it.

    x = (da.random.RandomState(42).standard_normal((N, N), chunks=C) * 2 + 1).persist()
    for each pass: abs((x - x.mean(axis=0)) / x.std(axis=0)).sum().compute()

Usage: python bench/dask_iterate.py --n 8000 --chunk 2000 --passes 10 [--backend numpy|cupy]
Prints one JSON object: versions, seconds to persist, seconds of all passes, their sum, and the
last pass's value (about 0.798 N^2 for normal data; compare with gpunotes' value).
"""
import argparse
import json
import time

import dask
import dask.array as da


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8000)
    ap.add_argument("--chunk", type=int, default=2000)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    args = ap.parse_args()

    if args.backend == "cupy":
        import cupy
        rs = da.random.RandomState(42, RandomState=cupy.random.RandomState)
        lib, version = "cupy", cupy.__version__
        sync = cupy.cuda.Device().synchronize
    else:
        import numpy
        rs = da.random.RandomState(42)
        lib, version = "numpy", numpy.__version__
        sync = lambda: None  # noqa: E731

    t0 = time.perf_counter()
    x = (rs.standard_normal((args.n, args.n), chunks=args.chunk) * 2 + 1).persist()
    sync()
    t1 = time.perf_counter()
    value = None
    for _ in range(args.passes):
        value = float(abs((x - x.mean(axis=0)) / x.std(axis=0)).sum().compute())
    sync()
    t2 = time.perf_counter()
    print(json.dumps({
        "peer": f"dask+{lib}", "dask": dask.__version__, lib: version, "bench": "iterate",
        "n": args.n, "chunk": args.chunk, "passes": args.passes,
        "persist_seconds": round(t1 - t0, 4), "passes_seconds": round(t2 - t1, 4),
        "seconds": round(t2 - t0, 4), "value": value,
    }))


if __name__ == "__main__":
    main()
