package dataframe_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// The pandas side of the sort property tests: a random frame with many ties and nulls in
// every key type (categories in an order that is not the lexical one), and pandas' stable
// sorts, nlargest/nsmallest and drop_duplicates of it, as the row ids they keep, in order.
const pandasSort = `
import json, sys, numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
seed = int(sys.argv[1])
rng = np.random.default_rng(seed)
n = int(rng.integers(1, 2000))
card = int(rng.choice([2, 5, 50]))
def nulls(p=0.1):
    return rng.random(n) < p
ki = pd.array(rng.integers(-card, card, n), dtype="Int64"); ki[nulls()] = pd.NA
kf = rng.integers(-card, card, n).astype(float); kf[nulls()] = np.nan
ks = pd.array(["s%d" % x for x in rng.integers(0, card, n)], dtype="str"); ks[nulls()] = None
kc = pd.Categorical(rng.choice(["z", "a", "m"], n), categories=["z", "a", "m"])
df = pd.DataFrame({"ki": ki, "kf": kf, "ks": ks, "kc": kc, "id": np.arange(n)})
pq.write_table(pa.Table.from_pandas(df, preserve_index=False), "data.parquet", row_group_size=int(rng.integers(1, n + 1)))
out = {}
for keys in (["ki"], ["kf"], ["ks"], ["kc"], ["ki", "ks"], ["kc", "kf", "ki"]):
    for asc in ([True], [False], [bool(x) for x in rng.integers(0, 2, len(keys))]):
        for na in ("last", "first"):
            a = asc[0] if len(asc) == 1 else asc
            s = df.sort_values(keys, ascending=a, na_position=na, kind="stable")
            out["sort:%s:%s:%s" % (",".join(keys), ",".join(str(int(x)) for x in asc), na)] = s["id"].tolist()
    for keep in ("first", "last", False):
        out["dedup:%s:%s" % (",".join(keys), str(keep).lower())] = df.drop_duplicates(keys, keep=keep)["id"].tolist()
for k in ("ki", "kf"):
    for m in (1, 7, n):
        out["nlargest:%s:%d" % (k, m)] = df.nlargest(m, k)["id"].tolist()
        out["nsmallest:%s:%d" % (k, m)] = df.nsmallest(m, k)["id"].tolist()
json.dump(out, open("want.json", "w"))
`

func TestSortsAgainstPandas(t *testing.T) {
	seeds := 5
	if testing.Short() {
		seeds = 2
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			var want map[string][]int64
			runPandas(t, dir, pandasSort, &want, fmt.Sprint(seed))
			df := dataframe.ReadParquet(filepath.Join(dir, "data.parquet"))
			for name, w := range want {
				parts := strings.Split(name, ":")
				var g *dataframe.Frame
				switch parts[0] {
				case "sort":
					var asc []bool
					for _, a := range strings.Split(parts[2], ",") {
						asc = append(asc, a == "1")
					}
					opts := []dataframe.SortOption{dataframe.Ascending(asc...)}
					if parts[3] == "first" {
						opts = append(opts, dataframe.NullsFirst())
					}
					g = df.SortValues(strings.Split(parts[1], ","), opts...)
				case "dedup":
					g = df.DropDuplicates(strings.Split(parts[1], ","), map[string]string{"false": "none"}[parts[2]]+map[string]string{"first": "first", "last": "last"}[parts[2]])
				case "nlargest", "nsmallest":
					var m int
					fmt.Sscan(parts[2], &m)
					if parts[0] == "nlargest" {
						g = df.NLargest(m, parts[1])
					} else {
						g = df.NSmallest(m, parts[1])
					}
				}
				got, err := g.Int64s("id")
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if len(w) == 0 && len(got) == 0 {
					continue
				}
				if !slices.Equal(got, w) {
					t.Fatalf("%s: got %v, pandas %v", name, head64(got), head64(w))
				}
			}
		})
	}
}

func head64(s []int64) []int64 { return s[:min(len(s), 12)] }
