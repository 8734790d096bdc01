package dataframe_test

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// The pandas side of the property tests: a random frame with nulls in keys and values,
// written with a random row group size (our partitions), and pandas' groupby and reductions
// of it as JSON.
const pandasGroupby = `
import json, sys, numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
seed = int(sys.argv[1])
rng = np.random.default_rng(seed)
n = int(rng.integers(1, 4000))
ng = int(rng.choice([1, 3, 40, 1000]))
def nulls(p):
    return rng.random(n) < p
ki = pd.array(rng.integers(-ng, ng, n), dtype="Int64"); ki[nulls(0.05)] = pd.NA
ks = pd.array(["s%d" % x for x in rng.integers(0, ng, n)], dtype="str"); ks[nulls(0.05)] = None
kc = pd.Categorical(["c%d" % x for x in rng.integers(0, 7, n)])
vi = rng.integers(-10**12, 10**12, n)
vf = rng.normal(size=n) * 100; vf[nulls(0.2)] = np.nan
df = pd.DataFrame({"ki": ki, "ks": ks, "kc": kc, "vi": vi, "vf": vf})
pq.write_table(pa.Table.from_pandas(df, preserve_index=False), "data.parquet", row_group_size=int(rng.integers(1, n + 1)))
aggs = ["sum", "mean", "min", "max", "count", "std", "var", "first", "last", "nunique", "median"]
def tolist(s):
    return [None if pd.isna(x) else (x if isinstance(x, str) else float(x)) for x in s.tolist()]
out = {"n": n, "groups": {}, "reduce": {}}
for keys in (["ki"], ["ks"], ["kc"], ["ki", "ks"], ["kc", "ki"]):
    g = df.groupby(keys, sort=True, dropna=True, observed=True)
    res = {}
    for v in ("vi", "vf"):
        for a in aggs:
            res[v + "_" + a] = tolist(g[v].agg(a))
        res[v + "_q30"] = tolist(g[v].quantile(0.3))
    res["size"] = tolist(g.size())
    idx = g.size().index
    for i, k in enumerate(keys):
        lv = idx.get_level_values(i) if len(keys) > 1 else idx
        res["key_" + k] = tolist(pd.Series(lv.astype(object)))
    out["groups"][",".join(keys)] = res
for v in ("vi", "vf"):
    s = df[v]
    out["reduce"][v] = {"sum": float(s.sum()), "mean": float(s.mean()), "min": float(s.min()), "max": float(s.max()),
        "count": float(s.count()), "std": None if pd.isna(s.std()) else float(s.std()), "var": None if pd.isna(s.var()) else float(s.var()),
        "nunique": float(s.nunique()), "median": float(s.median()), "q30": float(s.quantile(0.3))}
json.dump(out, open("want.json", "w"))
`

var aggNames = []string{"sum", "mean", "min", "max", "count", "std", "var", "first", "last", "nunique", "median"}

func aggOf(name, col string) dataframe.Agg {
	m := map[string]func(string) dataframe.Agg{"sum": dataframe.Sum, "mean": dataframe.Mean, "min": dataframe.Min,
		"max": dataframe.Max, "count": dataframe.Count, "std": dataframe.Std, "var": dataframe.Var, "first": dataframe.First,
		"last": dataframe.Last, "nunique": dataframe.NUnique, "median": dataframe.Median}
	return m[name](col).As(col + "_" + name)
}

// close reports whether got equals pandas' want: exactly for integers that fit a float64,
// within a relative 1e-9 otherwise (summation order differs), nulls as nil.
func closeTo(got float64, valid bool, want any) bool {
	if want == nil {
		return !valid || math.IsNaN(got)
	}
	w := want.(float64)
	if !valid {
		return false
	}
	return got == w || math.Abs(got-w) <= 1e-9*math.Max(1, math.Abs(w))
}

func TestGroupByAndReductionsAgainstPandas(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			var want struct {
				N      int
				Groups map[string]map[string][]any
				Reduce map[string]map[string]any
			}
			runPandas(t, dir, pandasGroupby, &want, fmt.Sprint(seed))
			df := dataframe.ReadParquet(filepath.Join(dir, "data.parquet"))
			for keyList, w := range want.Groups {
				keys := strings.Split(keyList, ",")
				var aggs []dataframe.Agg
				for _, v := range []string{"vi", "vf"} {
					for _, a := range aggNames {
						aggs = append(aggs, aggOf(a, v))
					}
					aggs = append(aggs, dataframe.Quantile(v, 0.3).As(v+"_q30"))
				}
				aggs = append(aggs, dataframe.Size())
				sets := [][]dataframe.Agg{aggs}
				for _, v := range []string{"vi", "vf"} {
					// One column's medians with its counts, means and variances: the dense
					// path computes them from each group's values (denseGrouped).
					sets = append(sets, []dataframe.Agg{aggOf("median", v), aggOf("std", v), aggOf("var", v), aggOf("mean", v),
						aggOf("count", v), dataframe.Quantile(v, 0.3).As(v + "_q30"), dataframe.Size()})
				}
				for _, aggs := range sets {
					for _, split := range []int{1, 3} {
						g, err := df.GroupBy(keys...).SplitOut(split).Sorted().Agg(aggs...).Compute()
						if err != nil {
							t.Fatalf("%s: %v", keyList, err)
						}
						n, _ := g.Len()
						if n != len(w["size"]) {
							t.Fatalf("%s split %d: %d groups, pandas %d", keyList, split, n, len(w["size"]))
						}
						for _, k := range keys {
							var got []string
							if k == "ki" {
								v, _ := g.Int64s(k)
								for _, x := range v {
									got = append(got, fmt.Sprint(x))
								}
							} else {
								got, _ = g.Strings(k)
							}
							for i, x := range w["key_"+k] {
								if fmt.Sprint(x) != got[i] && fmt.Sprintf("%.0f", x) != got[i] {
									t.Fatalf("%s: key %s row %d = %s, pandas %v", keyList, k, i, got[i], x)
								}
							}
						}
						for name, wv := range w {
							if strings.HasPrefix(name, "key_") || !slices.Contains(g.Columns(), name) {
								continue
							}
							got, err := g.Float64s(name)
							if err != nil {
								t.Fatalf("%s: %s: %v", keyList, name, err)
							}
							valid, _ := g.Valid(name)
							for i := range wv {
								if !closeTo(got[i], valid[i], wv[i]) {
									t.Fatalf("%s split %d: %s group %d = %v (valid %v), pandas %v", keyList, split, name, i, got[i], valid[i], wv[i])
								}
							}
						}
					}
				}
			}
			for col, w := range want.Reduce {
				one, err := df.Agg(dataframe.Sum(col).As("sum"), dataframe.Mean(col).As("mean"), dataframe.Min(col).As("min"),
					dataframe.Max(col).As("max"), dataframe.Count(col).As("count"), dataframe.Std(col).As("std"),
					dataframe.Var(col).As("var")).Compute()
				if err != nil {
					t.Fatal(err)
				}
				hol, err := df.Agg(dataframe.NUnique(col).As("nunique"), dataframe.Median(col).As("median"), dataframe.Quantile(col, 0.3).As("q30")).Compute()
				if err != nil {
					t.Fatal(err)
				}
				for name, wv := range w {
					src := one
					if name == "nunique" || name == "median" || name == "q30" {
						src = hol
					}
					got, err := src.Float64s(name)
					if err != nil {
						t.Fatal(err)
					}
					valid, _ := src.Valid(name)
					// Sums of 1e12-sized integers are exact in int64; pandas' float conversion of
					// the result rounds it, so compare in float64.
					if !closeTo(got[0], valid[0], wv) {
						t.Errorf("%s %s = %v, pandas %v", col, name, got[0], wv)
					}
				}
			}
		})
	}
}
