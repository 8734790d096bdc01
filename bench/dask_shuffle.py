"""dask.dataframe P2P shuffle peer of `gpunotes bench frame --task shuffle` (issue 33).

Rows of (int64 key uniform in [0, rows), 3 float64 uniform on [0, 1)) are generated on a
distributed LocalCluster of CPU worker processes (one thread each), persisted there, then
shuffled on the key with shuffle_method="p2p" into as many partitions and persisted. Best of 2;
peak resident memory per worker process (ru_maxrss) over the whole run.
Usage: python bench/dask_shuffle.py [--rows 10000000] [--workers 4] [--partitions 32]
"""
import argparse
import json
import resource
import time

import numpy as np
import pandas as pd
import dask
import dask.dataframe as dd
from distributed import Client, LocalCluster, wait

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=10_000_000)
p.add_argument("--workers", type=int, default=4)
p.add_argument("--partitions", type=int, default=32)
p.add_argument("--memory-limit", default="auto")
a = p.parse_args()


def part(i, n, rows):
    r = np.random.default_rng(i)
    return pd.DataFrame({"key": r.integers(0, rows, n, dtype=np.int64), "a": r.random(n), "b": r.random(n), "c": r.random(n)})


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10


if __name__ == "__main__":
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, memory_limit=a.memory_limit, dashboard_address=None) as lc, Client(lc) as c:
        per = (a.rows + a.partitions - 1) // a.partitions
        sizes = [min(per, a.rows - i * per) for i in range(a.partitions)]
        meta = part(0, 0, 1)
        df = dd.from_map(part, range(a.partitions), sizes, [a.rows] * a.partitions, meta=meta).persist()
        wait(df)
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            s = df.shuffle("key", npartitions=a.partitions, shuffle_method="p2p").persist()
            wait(s)
            best = min(best, time.perf_counter() - t0)
            n = len(s)
            del s
        peaks = c.run(peak_mib)
        print(json.dumps({"peer": "dask.dataframe p2p " + dask.__version__, "task": "shuffle", "rows": a.rows, "out_rows": n,
                          "workers": a.workers, "partitions": a.partitions, "seconds": best,
                          "peak_rss_mib": {str(i): v for i, v in enumerate(peaks.values())}}), flush=True)
