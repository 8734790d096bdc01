package dataframe_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// The pandas side of the merge property tests: two random frames with every key type (int,
// string, categorical with different categories on each side, datetime), nulls in keys by a
// random pattern, written with random row group sizes (our partitions); pandas' merges of
// them, every row as a canonical string.
const pandasMerge = `
import json, sys, numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
seed = int(sys.argv[1])
rng = np.random.default_rng(seed)
card = int(rng.choice([1, 4, 30, 500]))
pnull = float(rng.choice([0.0, 0.05, 0.3]))
def side(n, tag):
    def nulls():
        return rng.random(n) < pnull
    k1 = pd.array(rng.integers(-card, card, n), dtype="Int64"); k1[nulls()] = pd.NA
    ks = pd.array(["s%d" % x for x in rng.integers(0, card, n)], dtype="str"); ks[nulls()] = None
    cats = ["c%d" % x for x in rng.permutation(8)[: int(rng.integers(1, 8))]]
    kc = pd.Categorical(rng.choice(cats, n), categories=cats)
    kc[nulls()] = np.nan
    kd = pd.Series(pd.to_datetime(1_600_000_000 + 3600 * rng.integers(0, card, n), unit="s").astype("datetime64[us]"))
    kd[nulls()] = pd.NaT
    df = pd.DataFrame({"k1": k1, "ks": ks, "kc": kc, "kd": kd, "v": rng.integers(0, 1000, n), tag: np.arange(n)})
    if tag == "rv":
        df["rk"] = pd.array(rng.integers(-card, card, n), dtype="Int64")
    return df
nl, nr = int(rng.integers(0, 300)), int(rng.integers(0, 300))
L, R = side(nl, "lv"), side(nr, "rv")
pq.write_table(pa.Table.from_pandas(L, preserve_index=False), "left.parquet", row_group_size=max(1, int(rng.integers(1, nl + 2))))
pq.write_table(pa.Table.from_pandas(R, preserve_index=False), "right.parquet", row_group_size=max(1, int(rng.integers(1, nr + 2))))
def cell(x):
    if x is None or (not isinstance(x, str) and pd.isna(x)):
        return "null"
    if isinstance(x, pd.Timestamp):
        return x.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(x, (float, np.floating)):
        return str(int(x))
    return str(x)
def rows(df):
    return sorted("|".join(cell(x) for x in r) for r in df.astype(object).itertuples(index=False))
out = {}
for keys in (["k1"], ["ks"], ["kc"], ["kd"], ["k1", "ks"], ["kc", "kd"]):
    for how in ("inner", "left", "right", "outer", "semi", "anti"):
        if how == "semi":
            hit = L.reset_index().merge(R[keys].drop_duplicates(), on=keys, how="inner")["index"]
            m = L.loc[sorted(set(hit))]
        elif how == "anti":
            m = L.merge(R, on=keys, how="left_anti")
        else:
            m = L.merge(R, on=keys, how=how)
        out[",".join(keys) + ":" + how] = {"columns": list(m.columns), "rows": rows(m)}
m = L.merge(R, left_on=["k1"], right_on=["rk"], how="outer", suffixes=("_l", "_r"))
out["k1=rk:outer"] = {"columns": list(m.columns), "rows": rows(m)}
json.dump(out, open("want.json", "w"))
`

// canonicalRows computes f and returns its rows as pandas' canonical strings, sorted.
func canonicalRows(t *testing.T, f *dataframe.Frame) []string {
	t.Helper()
	c, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Len()
	if err != nil {
		t.Fatal(err)
	}
	cells := make([][]string, n)
	for _, fd := range c.Dtypes() {
		valid, err := c.Valid(fd.Name)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		switch {
		case fd.DType == dataframe.String || fd.DType == dataframe.Category:
			s, err = c.Strings(fd.Name)
		case fd.DType.IsDatetime():
			ts, e := c.Times(fd.Name)
			err = e
			for _, x := range ts {
				s = append(s, x.Format("2006-01-02T15:04:05"))
			}
		default:
			v, e := c.Int64s(fd.Name)
			err = e
			for _, x := range v {
				s = append(s, fmt.Sprint(x))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range cells {
			if !valid[i] {
				s[i] = "null"
			}
			cells[i] = append(cells[i], s[i])
		}
	}
	out := make([]string, n)
	for i, r := range cells {
		out[i] = strings.Join(r, "|")
	}
	slices.Sort(out)
	return out
}

func TestMergeAgainstPandas(t *testing.T) {
	seeds := 5
	if testing.Short() {
		seeds = 2
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			var want map[string]struct {
				Columns []string
				Rows    []string
			}
			runPandas(t, dir, pandasMerge, &want, fmt.Sprint(seed))
			l := dataframe.ReadParquet(filepath.Join(dir, "left.parquet"))
			r := dataframe.ReadParquet(filepath.Join(dir, "right.parquet"))
			for name, w := range want {
				spec, how, _ := strings.Cut(name, ":")
				var opts []dataframe.MergeOption
				if lk, rk, ok := strings.Cut(spec, "="); ok {
					opts = append(opts, dataframe.LeftOn(lk), dataframe.RightOn(rk), dataframe.Suffixes("_l", "_r"))
				} else {
					opts = append(opts, dataframe.On(strings.Split(spec, ",")...))
				}
				opts = append(opts, dataframe.How(how))
				// Broadcast (the default threshold) and hash-partitioned (no broadcast).
				for _, bc := range []int{dataframe.DefaultBroadcastRows, 0} {
					m := dataframe.Merge(l, r, append(opts, dataframe.BroadcastRows(bc))...)
					if err := m.Err(); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if !slices.Equal(m.Columns(), w.Columns) {
						t.Fatalf("%s: columns %v, pandas %v", name, m.Columns(), w.Columns)
					}
					got := canonicalRows(t, m)
					if !slices.Equal(got, w.Rows) {
						t.Fatalf("%s broadcast %d: %d rows, pandas %d\n got %v\nwant %v", name, bc, len(got), len(w.Rows), head(got), head(w.Rows))
					}
				}
			}
		})
	}
}

func head(s []string) []string { return s[:min(len(s), 8)] }
