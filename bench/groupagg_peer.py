"""Peers of the GPU group-aggregate timing (gpuarray/cuda TestGPUGroupAggTimes): pandas and
pyarrow's Table.group_by on the same schema and distributions (id1 of 100 values, id3 of 1e5,
keys as categoricals/dictionaries as db-benchmark's solutions load them; v1 integers 1..5, v3
floats in [0, 100)). Prints one line per peer and question: best of REPS wall times."""
import os
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
reps = int(os.environ.get("REPS", "2"))
rng = np.random.default_rng(42)
id1 = rng.integers(0, 100, n, dtype=np.int32)
id3 = rng.integers(0, 100_000, n, dtype=np.int32)
v1 = rng.integers(1, 6, n, dtype=np.int64)
v3 = rng.random(n) * 100

df = pd.DataFrame({
    "id1": pd.Categorical.from_codes(id1, [f"id{i:03d}" for i in range(100)]),
    "id3": pd.Categorical.from_codes(id3, [f"id{i:010d}" for i in range(100_000)]),
    "v1": v1, "v3": v3})
tbl = pa.table({
    "id1": pa.DictionaryArray.from_arrays(pa.array(id1), pa.array([f"id{i:03d}" for i in range(100)])),
    "id3": pa.DictionaryArray.from_arrays(pa.array(id3), pa.array([f"id{i:010d}" for i in range(100_000)])),
    "v1": v1, "v3": v3})


def best(f):
    b = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t0)
    return b


qs = {
    "q1": (lambda: df.groupby("id1", observed=True, sort=False).agg(v1=("v1", "sum")),
           lambda: tbl.group_by("id1").aggregate([("v1", "sum")])),
    "q3": (lambda: df.groupby("id3", observed=True, sort=False).agg(v1=("v1", "sum"), v3=("v3", "mean")),
           lambda: tbl.group_by("id3").aggregate([("v1", "sum"), ("v3", "mean")])),
}
for q, (pdf, paf) in qs.items():
    print(f"{q} pandas {pd.__version__}: {best(pdf):.3f} s  rows={n}", flush=True)
    print(f"{q} pyarrow {pa.__version__}: {best(paf):.3f} s  rows={n}", flush=True)
