"""Peer of `gpunotes bench read DATA.parquet --backend gpu`: generate a Parquet file with
pyarrow, or read it with pyarrow and copy its columns to the GPU with CuPy (the way a
dask-cudf-less user persists a table on a GPU), then sum the first column there. Prints one
JSON line. Usage: parquet_read.py gen PATH ROWS ROW_GROUP_ROWS | parquet_read.py read PATH"""
import json
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def gen(path, rows, rg):
    rng = np.random.default_rng(2026)
    w = None
    for r in range(0, rows, rg):
        n = min(rg, rows - r)
        t = pa.table({
            "f64": rng.standard_normal(n),
            "i64": rng.integers(0, 1 << 40, n),
            "i32": rng.integers(0, 1000, n).astype("int32"),
            "f32": rng.standard_normal(n).astype("float32"),
            "b": rng.random(n) < 0.5,
        })
        if w is None:
            w = pq.ParquetWriter(path, t.schema, compression="snappy")
        w.write_table(t, row_group_size=rg)
    w.close()


def read(path):
    import cupy as cp
    t0 = time.perf_counter()
    t = pq.read_table(path)  # decoded on all cores (pyarrow's thread pool)
    cols = {c: cp.asarray(t.column(c).to_numpy()) for c in t.column_names}
    cp.cuda.Device().synchronize()
    first = t.column_names[0]
    s = float(cols[first].astype(cp.float64).sum())
    dt = time.perf_counter() - t0
    nbytes = sum(int(a.nbytes) for a in cols.values())
    print(json.dumps({"path": path, "peer": "pyarrow+cupy", "rows": t.num_rows, "columns": t.num_columns,
                      "bytes": nbytes, "row_groups": pq.ParquetFile(path).num_row_groups,
                      "seconds": dt, "sum": s}))


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        read(sys.argv[2])
