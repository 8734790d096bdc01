"""db-benchmark join questions for pandas, Polars, DuckDB and pyarrow, in memory, one JSON line each.

The tables are the ones `gpunotes bench frame --task join --write DIR` generates (the
distributions of join-datagen.R, see cmd_bench_frame_join.go), read from DIR/{x,small,medium,
big}.parquet before timing, or (--rows N) generated here with numpy from the same
distributions: id1..id3 int32, id4..id6 categoricals, v1/v2 float64. The questions as
db-benchmark's pandas, Polars and DuckDB join solutions write them (q3, "medium outer", is a
left join there); pyarrow is Acero's Table.join. Each question runs twice; the best time is
printed.

    gpunotes bench frame --task join --rows 1000000 --write DIR --json
    python bench/join_peers.py --data DIR [--engines pandas,polars,duckdb,pyarrow]
    python bench/join_peers.py --rows 100000000 --engines pandas --questions q1,q2 --reps 1
"""
import argparse, json, os, sys, time
import numpy as np
import pandas as pd

ap = argparse.ArgumentParser()
ap.add_argument("--data", help="directory of the Parquet tables `bench frame --task join --write` wrote")
ap.add_argument("--rows", type=int, default=0, help="generate the tables here (numpy) with N rows of x instead of --data")
ap.add_argument("--engines", default="pandas,polars,duckdb")
ap.add_argument("--questions", default="", help="comma-separated question numbers to run (q1,q5); default all")
ap.add_argument("--reps", type=int, default=2, help="runs per question, the best printed (db-benchmark: 2)")
ap.add_argument("--wait-for", default="", help="after making the tables, wait until this file exists (to time beside another run without sharing its cores)")
a = ap.parse_args()
t0 = time.perf_counter()

def generate(n):
    """The join tables of join-datagen.R's distributions, as cmd_bench_frame_join.go draws
    them (other random streams): id1..id3 int32, id4..id6 "id%d" of them as categoricals whose
    categories are every key of the key set, v1/v2 uniform [0, 100) rounded to 6 places."""
    import pyarrow as pa, pyarrow.compute as pc
    rng = np.random.default_rng(108)
    def split_xlr(m):
        nx = max(1, round(0.9 * m)); nl = max(0, m - nx); nr = round(0.1 * m)
        p = rng.permutation(nx + nl + nr).astype(np.int32) + 1
        return p[:nx], p[nx:nx + nl], p[nx + nl:], nx + nl + nr
    def sample_all(size, *sets):
        keys = np.concatenate(sets)
        out = keys if size <= len(keys) else np.concatenate([keys, rng.choice(keys, size - len(keys))])
        out = out[:size].copy()
        rng.shuffle(out)
        return out
    sizes = [max(1, n // 1_000_000), max(1, n // 1_000), n]
    lv = [split_xlr(m) for m in sizes]
    ids = lambda m: pc.binary_join_element_wise("id", pc.cast(pa.array(np.arange(1, m + 1)), pa.string()), "")
    # One dtype per key set, shared by the tables' columns. The categories are distinct by
    # construction: pandas' check of that (a hash of every string) took most of the time at
    # 1e8 rows, so it is skipped where this pandas has the fast path.
    def dtype_of(cats):
        fast = getattr(pd.CategoricalDtype, "_from_fastpath", None)
        return fast(cats, False) if fast else pd.CategoricalDtype(cats)
    dts = [dtype_of(pd.Index(pd.array(ids(m), dtype="str"))) for _, _, _, m in lv]
    fac = lambda level, keys: pd.Categorical.from_codes(keys - 1, dtype=dts[level], validate=False)
    uni = lambda m: np.round(rng.random(m) * 100, 6)
    xk = [sample_all(n, lv[i][0], lv[i][1]) for i in range(3)]
    x = pd.DataFrame({"id1": xk[0], "id2": xk[1], "id3": xk[2], "id4": fac(0, xk[0]), "id5": fac(1, xk[1]), "id6": fac(2, xk[2]), "v1": uni(n)})
    sk = sample_all(sizes[0], lv[0][0], lv[0][2])
    small = pd.DataFrame({"id1": sk, "id4": fac(0, sk), "v2": uni(sizes[0])})
    mk = [sample_all(sizes[1], lv[i][0], lv[i][2]) for i in range(2)]
    medium = pd.DataFrame({"id1": mk[0], "id2": mk[1], "id4": fac(0, mk[0]), "id5": fac(1, mk[1]), "v2": uni(sizes[1])})
    bk = [sample_all(n, lv[i][0], lv[i][2]) for i in range(3)]
    big = pd.DataFrame({"id1": bk[0], "id2": bk[1], "id3": bk[2], "id4": fac(0, bk[0]), "id5": fac(1, bk[1]), "id6": fac(2, bk[2]), "v2": uni(n)})
    return x, small, medium, big

if a.rows:
    x, small, medium, big = generate(a.rows)
else:
    read = lambda name: pd.read_parquet(os.path.join(a.data, name + ".parquet"))
    x, small, medium, big = read("x"), read("small"), read("medium"), read("big")
for d in (x, small, medium, big):  # categoricals, as the db-benchmark solutions load them
    for c in ("id4", "id5", "id6"):
        if c in d and d[c].dtype != "category":
            d[c] = d[c].astype("category")
n = len(x)
print(f"tables ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
want = [q for q in a.questions.split(",") if q]
engines = a.engines.split(",")
if "pyarrow" in engines:
    # Acero's hash join (Table.join); its payload columns cannot be dictionaries, so the factor
    # columns are plain strings there (converted before the timing and any --wait-for).
    import pyarrow as pa
    def arrow(d):
        t = pa.Table.from_pandas(d, preserve_index=False)
        for i, f in enumerate(t.schema):
            if pa.types.is_dictionary(f.type):
                t = t.set_column(i, f.name, t.column(i).cast(pa.string()))
        return t
    ax, asm, am, ab = (arrow(d) for d in (x, small, medium, big))
    print(f"arrow tables ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
if a.wait_for:
    while not os.path.exists(a.wait_for):
        time.sleep(0.2)
pick = lambda qs: [(name, f) for name, f in qs if not want or name.split()[0] in want]

def timed(engine, name, f):
    best, out = None, None
    for _ in range(max(1, a.reps)):
        t = time.perf_counter()
        out = f()
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    print(json.dumps({"engine": engine, "question": name, "rows": n, "seconds": best, "out_rows": int(out)}), flush=True)

if "pandas" in engines:
    qs = [
        ("q1 small inner on int", lambda: len(x.merge(small, on="id1"))),
        ("q2 medium inner on int", lambda: len(x.merge(medium, on="id2"))),
        ("q3 medium outer on int", lambda: len(x.merge(medium, how="left", on="id2"))),
        ("q4 medium inner on factor", lambda: len(x.merge(medium, on="id5"))),
        ("q5 big inner on int", lambda: len(x.merge(big, on="id3"))),
    ]
    for name, f in pick(qs):
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
    for name, f in pick(qs):
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
    for name, f in pick(qs):
        timed("duckdb", name, f)
if "pyarrow" in engines:
    qs = [
        ("q1 small inner on int", lambda: ax.join(asm, "id1", join_type="inner", right_suffix="_r").num_rows),
        ("q2 medium inner on int", lambda: ax.join(am, "id2", join_type="inner", right_suffix="_r").num_rows),
        ("q3 medium outer on int", lambda: ax.join(am, "id2", join_type="left outer", right_suffix="_r").num_rows),
        ("q4 medium inner on factor", lambda: ax.join(am, "id5", join_type="inner", right_suffix="_r").num_rows),
        ("q5 big inner on int", lambda: ax.join(ab, "id3", join_type="inner", right_suffix="_r").num_rows),
    ]
    for name, f in pick(qs):
        timed("pyarrow", name, f)
