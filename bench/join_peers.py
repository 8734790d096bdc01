"""db-benchmark join questions for pandas, Polars and DuckDB, in memory, one JSON line each.

The tables are the ones `gpunotes bench frame --task join --write DIR` generates (the
distributions of join-datagen.R, see cmd_bench_frame_join.go), read from DIR/{x,small,medium,
big}.parquet before timing: id1..id3 int32, id4..id6 categoricals, v1/v2 float64. The questions
as db-benchmark's pandas, Polars and DuckDB join solutions write them (q3, "medium outer", is a
left join there). Each question runs twice; the best time is printed.

    gpunotes bench frame --task join --rows 1000000 --write DIR --json
    python bench/join_peers.py --data DIR [--engines pandas,polars,duckdb]
"""
import argparse, json, os, time
import pandas as pd

ap = argparse.ArgumentParser()
ap.add_argument("--data", required=True)
ap.add_argument("--engines", default="pandas,polars,duckdb")
a = ap.parse_args()
read = lambda name: pd.read_parquet(os.path.join(a.data, name + ".parquet"))
x, small, medium, big = read("x"), read("small"), read("medium"), read("big")
for d in (x, small, medium, big):  # categoricals, as the db-benchmark solutions load them
    for c in ("id4", "id5", "id6"):
        if c in d and d[c].dtype != "category":
            d[c] = d[c].astype("category")
n = len(x)

def timed(engine, name, f):
    best, out = None, None
    for _ in range(2):
        t = time.perf_counter()
        out = f()
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    print(json.dumps({"engine": engine, "question": name, "rows": n, "seconds": best, "out_rows": int(out)}), flush=True)

engines = a.engines.split(",")
if "pandas" in engines:
    qs = [
        ("q1 small inner on int", lambda: len(x.merge(small, on="id1"))),
        ("q2 medium inner on int", lambda: len(x.merge(medium, on="id2"))),
        ("q3 medium outer on int", lambda: len(x.merge(medium, how="left", on="id2"))),
        ("q4 medium inner on factor", lambda: len(x.merge(medium, on="id5"))),
        ("q5 big inner on int", lambda: len(x.merge(big, on="id3"))),
    ]
    for name, f in qs:
        timed("pandas", name, f)
if "polars" in engines:
    import polars as pl
    px, ps, pm, pb = (pl.from_pandas(d) for d in (x, small, medium, big))
    qs = [
        ("q1 small inner on int", lambda: px.join(ps, on="id1").height),
        ("q2 medium inner on int", lambda: px.join(pm, on="id2").height),
        ("q3 medium outer on int", lambda: px.join(pm, how="left", on="id2").height),
        ("q4 medium inner on factor", lambda: px.join(pm, on="id5").height),
        ("q5 big inner on int", lambda: px.join(pb, on="id3").height),
    ]
    for name, f in qs:
        timed("polars", name, f)
if "duckdb" in engines:
    import duckdb
    con = duckdb.connect()
    for name, d in (("x", x), ("small", small), ("medium", medium), ("big", big)):
        con.register(name + "v", d)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}v")
    # db-benchmark's DuckDB solution materialises each answer as a table.
    def q(sql):
        def f():
            con.execute("CREATE OR REPLACE TEMP TABLE ans AS " + sql)
            return con.execute("SELECT count(*) FROM ans").fetchone()[0]
        return f
    qs = [
        ("q1 small inner on int", q("SELECT x.*, small.id4 AS small_id4, v2 FROM x JOIN small USING (id1)")),
        ("q2 medium inner on int", q("SELECT x.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM x JOIN medium USING (id2)")),
        ("q3 medium outer on int", q("SELECT x.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM x LEFT JOIN medium USING (id2)")),
        ("q4 medium inner on factor", q("SELECT x.*, medium.id1 AS medium_id1, medium.id2 AS medium_id2, medium.id4 AS medium_id4, v2 FROM x JOIN medium USING (id5)")),
        ("q5 big inner on int", q("SELECT x.*, big.id1 AS big_id1, big.id2 AS big_id2, big.id4 AS big_id4, big.id5 AS big_id5, big.id6 AS big_id6, v2 FROM x JOIN big USING (id3)")),
    ]
    for name, f in qs:
        timed("duckdb", name, f)
