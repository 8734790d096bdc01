"""db-benchmark groupby questions for pandas, Polars and DuckDB, in memory, one JSON line each.

The data follows groupby-datagen.R's distributions (G1_N_K_0_0) as cmd_bench_frame.go generates
them: id1, id2 "id%03d" of 1..K, id3 "id%010d" of 1..N/K (categoricals, as the db-benchmark
solutions load them), id4-id6 int32, v1 in 1..5, v2 in 1..15, v3 uniform [0, 100) rounded to 6
places. Each question runs twice; the best time is printed. The same questions as
`gpunotes bench frame --task groupby` (q1-q10). q8 and q9 are written as db-benchmark's
solutions write them (pandas: sort_values + head, apply of corr; Polars: top_k, corr; DuckDB: a
window function, corr).

    python bench/groupby_peers.py --rows 1000000 [--k 100] [--engines pandas,polars,duckdb]
        [--questions q6,q10] [--reps 2]
"""
import argparse, json, os, time
import numpy as np
import pandas as pd

ap = argparse.ArgumentParser()
ap.add_argument("--rows", type=int, default=1_000_000)
ap.add_argument("--k", type=int, default=100)
ap.add_argument("--engines", default="pandas,polars,duckdb")
ap.add_argument("--questions", default="", help="comma-separated question numbers to run (q6,q10), in that order; default all")
ap.add_argument("--reps", type=int, default=2, help="runs per question, the best printed (db-benchmark: 2)")
ap.add_argument("--wait-for", default="", help="after making the tables, wait until this file exists (to time beside another run without sharing its cores)")
a = ap.parse_args()
n, k = a.rows, a.k
nk = max(1, n // k)
rng = np.random.default_rng(108)
cat = lambda fmt, m: pd.Categorical.from_codes(rng.integers(0, m, n), [fmt % (i + 1) for i in range(m)])
x = pd.DataFrame({
    "id1": cat("id%03d", k), "id2": cat("id%03d", k), "id3": cat("id%010d", nk),
    "id4": rng.integers(1, k + 1, n).astype("int32"), "id5": rng.integers(1, k + 1, n).astype("int32"),
    "id6": rng.integers(1, nk + 1, n).astype("int32"),
    "v1": rng.integers(1, 6, n).astype("int32"), "v2": rng.integers(1, 16, n).astype("int32"),
    "v3": np.round(rng.random(n) * 100, 6),
})

def timed(engine, name, f):
    best, out = None, None
    for _ in range(max(1, a.reps)):
        t = time.perf_counter()
        out = f()
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    print(json.dumps({"engine": engine, "question": name, "rows": n, "seconds": best, "out_rows": int(out)}), flush=True)

engines = a.engines.split(",")
if a.wait_for:
    while not os.path.exists(a.wait_for):
        time.sleep(0.2)
want = [q for q in a.questions.split(",") if q]

def pick(qs):
    """The questions --questions names, in its order (all when it names none)."""
    if not want:
        return qs
    by = {name.split()[0]: (name, f) for name, f in qs}
    return [by[q] for q in want if q in by]
if "pandas" in engines:
    g = lambda *ks: x.groupby(list(ks), observed=True, sort=False, dropna=False)
    qs = [
        ("q1 sum v1 by id1", lambda: len(g("id1").agg(v1=("v1", "sum")))),
        ("q2 sum v1 by id1:id2", lambda: len(g("id1", "id2").agg(v1=("v1", "sum")))),
        ("q3 sum v1 mean v3 by id3", lambda: len(g("id3").agg(v1=("v1", "sum"), v3=("v3", "mean")))),
        ("q4 mean v1:v3 by id4", lambda: len(g("id4").agg(v1=("v1", "mean"), v2=("v2", "mean"), v3=("v3", "mean")))),
        ("q5 sum v1:v3 by id6", lambda: len(g("id6").agg(v1=("v1", "sum"), v2=("v2", "sum"), v3=("v3", "sum")))),
        ("q6 median v3 sd v3 by id4 id5", lambda: len(g("id4", "id5").agg(median_v3=("v3", "median"), sd_v3=("v3", "std")))),
        ("q7 max v1 - min v2 by id3", lambda: len(g("id3").agg(v1=("v1", "max"), v2=("v2", "min")).assign(r=lambda d: d.v1 - d.v2))),
        ("q8 max v3 top 2 by id6", lambda: len(x[~x["v3"].isna()][["id6", "v3"]].sort_values("v3", ascending=False).groupby("id6", observed=True).head(2))),
        ("q9 r2 v1 v2 by id2 id4", lambda: len(x[["id2", "id4", "v1", "v2"]].groupby(["id2", "id4"], observed=True, sort=False, dropna=False).apply(lambda d: pd.Series({"r2": d.corr(numeric_only=True)["v1"]["v2"] ** 2})))),
        ("q10 sum v3 count by id1:id6", lambda: len(g("id1", "id2", "id3", "id4", "id5", "id6").agg(v3=("v3", "sum"), count=("v1", "size")))),
    ]
    for name, f in pick(qs):
        timed("pandas", name, f)
if "polars" in engines:
    import polars as pl
    px = pl.from_pandas(x)
    gb = lambda *ks: px.group_by(list(ks))
    qs = [
        ("q1 sum v1 by id1", lambda: gb("id1").agg(pl.sum("v1")).height),
        ("q2 sum v1 by id1:id2", lambda: gb("id1", "id2").agg(pl.sum("v1")).height),
        ("q3 sum v1 mean v3 by id3", lambda: gb("id3").agg(pl.sum("v1"), pl.mean("v3")).height),
        ("q4 mean v1:v3 by id4", lambda: gb("id4").agg(pl.mean("v1"), pl.mean("v2"), pl.mean("v3")).height),
        ("q5 sum v1:v3 by id6", lambda: gb("id6").agg(pl.sum("v1"), pl.sum("v2"), pl.sum("v3")).height),
        ("q6 median v3 sd v3 by id4 id5", lambda: gb("id4", "id5").agg(pl.median("v3"), pl.std("v3").alias("sd")).height),
        ("q7 max v1 - min v2 by id3", lambda: gb("id3").agg((pl.max("v1") - pl.min("v2")).alias("r")).height),
        ("q8 max v3 top 2 by id6", lambda: px.drop_nulls("v3").group_by("id6").agg(pl.col("v3").top_k(2).alias("largest2_v3")).explode("largest2_v3").height),
        ("q9 r2 v1 v2 by id2 id4", lambda: gb("id2", "id4").agg((pl.corr("v1", "v2") ** 2).alias("r2")).height),
        ("q10 sum v3 count by id1:id6", lambda: gb("id1", "id2", "id3", "id4", "id5", "id6").agg(pl.sum("v3"), pl.len()).height),
    ]
    for name, f in pick(qs):
        timed("polars", name, f)
if "duckdb" in engines:
    import duckdb
    con = duckdb.connect()
    con.register("xv", x)
    con.execute("CREATE TABLE x AS SELECT * FROM xv")
    q = lambda sql: (lambda: con.execute("SELECT count(*) FROM (" + sql + ")").fetchone()[0])
    qs = [
        ("q1 sum v1 by id1", q("SELECT id1, sum(v1) FROM x GROUP BY id1")),
        ("q2 sum v1 by id1:id2", q("SELECT id1, id2, sum(v1) FROM x GROUP BY id1, id2")),
        ("q3 sum v1 mean v3 by id3", q("SELECT id3, sum(v1), avg(v3) FROM x GROUP BY id3")),
        ("q4 mean v1:v3 by id4", q("SELECT id4, avg(v1), avg(v2), avg(v3) FROM x GROUP BY id4")),
        ("q5 sum v1:v3 by id6", q("SELECT id6, sum(v1), sum(v2), sum(v3) FROM x GROUP BY id6")),
        ("q6 median v3 sd v3 by id4 id5", q("SELECT id4, id5, median(v3), stddev(v3) FROM x GROUP BY id4, id5")),
        ("q7 max v1 - min v2 by id3", q("SELECT id3, max(v1) - min(v2) FROM x GROUP BY id3")),
        ("q8 max v3 top 2 by id6", q("SELECT id6, v3 FROM (SELECT id6, v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC) AS o FROM x WHERE v3 IS NOT NULL) s WHERE o <= 2")),
        ("q9 r2 v1 v2 by id2 id4", q("SELECT id2, id4, pow(corr(v1, v2), 2) AS r2 FROM x GROUP BY id2, id4")),
        ("q10 sum v3 count by id1:id6", q("SELECT id1, id2, id3, id4, id5, id6, sum(v3), count(*) FROM x GROUP BY id1, id2, id3, id4, id5, id6")),
    ]
    for name, f in pick(qs):
        timed("duckdb", name, f)
if "pyarrow" in engines:
    # Acero's hash group-by (Table.group_by) on the same table, keys as dictionaries; q6's median
    # is Acero's approximate_median (it has no exact one in a group-by).
    import pyarrow as pa
    import pyarrow.compute as pc
    t = pa.Table.from_pandas(x, preserve_index=False)
    ga = lambda ks, aggs: t.group_by(list(ks), use_threads=True).aggregate(aggs)
    def q7():
        r = ga(["id3"], [("v1", "max"), ("v2", "min")])
        return len(pc.subtract(r["v1_max"], r["v2_min"]))
    qs = [
        ("q1 sum v1 by id1", lambda: ga(["id1"], [("v1", "sum")]).num_rows),
        ("q2 sum v1 by id1:id2", lambda: ga(["id1", "id2"], [("v1", "sum")]).num_rows),
        ("q3 sum v1 mean v3 by id3", lambda: ga(["id3"], [("v1", "sum"), ("v3", "mean")]).num_rows),
        ("q4 mean v1:v3 by id4", lambda: ga(["id4"], [("v1", "mean"), ("v2", "mean"), ("v3", "mean")]).num_rows),
        ("q5 sum v1:v3 by id6", lambda: ga(["id6"], [("v1", "sum"), ("v2", "sum"), ("v3", "sum")]).num_rows),
        ("q6 median v3 sd v3 by id4 id5", lambda: ga(["id4", "id5"], [("v3", "approximate_median"), ("v3", "stddev", pc.VarianceOptions(ddof=1))]).num_rows),
        ("q7 max v1 - min v2 by id3", q7),
        ("q10 sum v3 count by id1:id6", lambda: ga(["id1", "id2", "id3", "id4", "id5", "id6"], [("v3", "sum"), ([], "count_all")]).num_rows),
    ]
    for name, f in pick(qs):
        timed("pyarrow", name, f)
