"""q1-style groupby by a string key (sum of v1 by id1, 100 groups) in pandas, the peer of
dataframe's TestGPUStringGroupByTiming (same data: id%03d of (i*7919)%100+1, v1 = i%5).
Prints the best of three wall times."""
import sys
import time

import numpy as np
import pandas as pd

n = int(sys.argv[1])
i = np.arange(n, dtype=np.int64)
ids = np.char.add("id", np.char.zfill(((i * 7919) % 100 + 1).astype(str), 3))
for dt in ("object", "str"):
    df = pd.DataFrame({"id1": pd.array(ids, dtype=object).astype(dt), "v1": i % 5})
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        r = df.groupby("id1", sort=True)["v1"].sum()
        d = time.perf_counter() - t0
        best = d if best is None else min(best, d)
    print(f"pandas {pd.__version__} q1 by string id1 ({dt} dtype) at {n} rows: {best:.4f} s ({len(r)} groups, sum {int(r.sum())})")
