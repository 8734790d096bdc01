package dataframe_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// pandasTopCorr writes a random frame with nulls and pandas' per-group n largest (and n
// smallest) values and per-group correlations of it.
const pandasTopCorr = `
import json, sys, numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
seed = int(sys.argv[1])
rng = np.random.default_rng(seed)
n = int(rng.integers(1, 3000))
ng = int(rng.choice([1, 3, 40, 800]))
def nulls(p):
    return rng.random(n) < p
ki = pd.array(rng.integers(-ng, ng, n), dtype="Int64"); ki[nulls(0.05)] = pd.NA
ks = pd.array(["s%d" % x for x in rng.integers(0, ng, n)], dtype="str"); ks[nulls(0.05)] = None
kc = pd.Categorical(["c%d" % x for x in rng.integers(0, 7, n)])
vi = rng.integers(-10**6, 10**6, n)
vf = rng.normal(size=n) * 100; vf[nulls(0.2)] = np.nan
vs = rng.integers(0, 5, n).astype("int32")
df = pd.DataFrame({"ki": ki, "ks": ks, "kc": kc, "vi": vi, "vf": vf, "vs": vs})
pq.write_table(pa.Table.from_pandas(df, preserve_index=False), "data.parquet", row_group_size=int(rng.integers(1, n + 1)))
def tolist(s):
    return [None if pd.isna(x) else (x if isinstance(x, str) else float(x)) for x in s.tolist()]
out = {}
for keys in (["ki"], ["ks", "kc"], ["kc"]):
    res = {}
    for name, v, k, largest in (("top_vf", "vf", 2, True), ("bottom_vs", "vs", 3, False)):
        d = df.dropna(subset=[v])
        t = d.sort_values(v, ascending=not largest, kind="stable").groupby(keys, sort=True, dropna=True, observed=True).head(k)
        t = t.sort_values(keys + [v], ascending=[True] * len(keys) + [not largest], kind="stable")
        res[name] = tolist(t[v])
        for kk in keys:
            res[name + "_key_" + kk] = tolist(pd.Series(t[kk].astype(object)))
    g = df.groupby(keys, sort=True, dropna=True, observed=True)
    res["corr"] = tolist(g[["vf", "vi"]].apply(lambda d: d["vf"].corr(d["vi"])))
    out[",".join(keys)] = res
json.dump(out, open("want.json", "w"))
`

func keyStrings(t *testing.T, g *dataframe.Frame, k string) []string {
	t.Helper()
	if k == "ki" {
		v, err := g.Int64s(k)
		if err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
		}
		return s
	}
	s, err := g.Strings(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameKey(got string, want any) bool {
	return fmt.Sprint(want) == got || fmt.Sprintf("%.0f", want) == got
}

// TestTopAndCorrAgainstPandas checks NLargest, NSmallest and Corr per group against pandas'
// sort_values().groupby().head(n) and Series.corr, with null keys and values, any
// partitioning, and SplitOut.
func TestTopAndCorrAgainstPandas(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			var want map[string]map[string][]any
			runPandas(t, dir, pandasTopCorr, &want, fmt.Sprint(seed))
			df := dataframe.ReadParquet(filepath.Join(dir, "data.parquet"))
			for keyList, w := range want {
				keys := strings.Split(keyList, ",")
				for _, split := range []int{1, 3} {
					gb := df.GroupBy(keys...).SplitOut(split).Sorted()
					for name, f := range map[string]*dataframe.Frame{"top_vf": gb.NLargest(2, "vf"), "bottom_vs": gb.NSmallest(3, "vs")} {
						col := "vf"
						if name == "bottom_vs" {
							col = "vs"
						}
						g, err := f.Compute()
						if err != nil {
							t.Fatalf("%s %s: %v", keyList, name, err)
						}
						got, err := g.Float64s(col)
						if err != nil {
							t.Fatal(err)
						}
						if len(got) != len(w[name]) {
							t.Fatalf("%s split %d %s: %d rows, pandas %d", keyList, split, name, len(got), len(w[name]))
						}
						for i, x := range got {
							if x != w[name][i].(float64) {
								t.Fatalf("%s split %d %s row %d = %v, pandas %v", keyList, split, name, i, x, w[name][i])
							}
						}
						for _, k := range keys {
							for i, s := range keyStrings(t, g, k) {
								if !sameKey(s, w[name+"_key_"+k][i]) {
									t.Fatalf("%s %s: key %s row %d = %s, pandas %v", keyList, name, k, i, s, w[name+"_key_"+k][i])
								}
							}
						}
					}
					g, err := gb.Agg(dataframe.Corr("vf", "vi").As("corr")).Compute()
					if err != nil {
						t.Fatalf("%s corr: %v", keyList, err)
					}
					got, _ := g.Float64s("corr")
					valid, _ := g.Valid("corr")
					if len(got) != len(w["corr"]) {
						t.Fatalf("%s corr: %d groups, pandas %d", keyList, len(got), len(w["corr"]))
					}
					for i := range got {
						if !closeTo(got[i], valid[i], w["corr"][i]) {
							t.Fatalf("%s split %d corr group %d = %v (valid %v), pandas %v", keyList, split, i, got[i], valid[i], w["corr"][i])
						}
					}
				}
			}
		})
	}
}
