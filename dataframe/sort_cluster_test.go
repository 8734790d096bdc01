package dataframe_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestSortOnClusterAgainstPandas runs the sorts of the pandas property test on three
// workers: numeric keys (with ties, nulls and NaNs, both directions, nulls first and last)
// sort there, strings and categoricals in this process (Path says why); every order equals pandas' stable
// sort. SetIndex on the workers gives the rows of SetIndex in this process, in order, and
// divisions that bound each partition. DropDuplicates on the workers (every key type, keep
// first, last and none) keeps pandas' rows.
func TestSortOnClusterAgainstPandas(t *testing.T) {
	c := newTestCluster(t, 3)
	on := gpuarray.On(c)
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			var want map[string][]int64
			runPandas(t, dir, pandasSort, &want, fmt.Sprint(seed))
			df := dataframe.ReadParquet(filepath.Join(dir, "data.parquet")).Persist(on)
			names := make([]string, 0, len(want))
			for name := range want {
				if strings.HasPrefix(name, "sort:") {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			for _, name := range names {
				parts := strings.Split(name, ":")
				var asc []bool
				for _, a := range strings.Split(parts[2], ",") {
					asc = append(asc, a == "1")
				}
				opts := []dataframe.SortOption{dataframe.Ascending(asc...)}
				if parts[3] == "first" {
					opts = append(opts, dataframe.NullsFirst())
				}
				keys := strings.Split(parts[1], ",")
				g, err := df.SortValues(keys, opts...).Compute(on)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				onWorkers := strings.Contains(g.Path(), "sorted on the cluster's workers")
				numeric := !slices.Contains(keys, "ks") && !slices.Contains(keys, "kc")
				if onWorkers != numeric || numeric == strings.Contains(g.Path(), "ordered by its strings, which are in this process") {
					t.Fatalf("%s: path %q: where it sorted is not named", name, g.Path())
				}
				got, err := g.Int64s("id", on)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !slices.Equal(got, want[name]) && (len(got) > 0 || len(want[name]) > 0) {
					t.Fatalf("%s: got %v, pandas %v", name, head64(got), head64(want[name]))
				}
			}
			for name, w := range want {
				parts := strings.Split(name, ":")
				if parts[0] != "dedup" {
					continue
				}
				keep := map[string]string{"first": "first", "last": "last", "false": "none"}[parts[2]]
				g, err := df.DropDuplicates(strings.Split(parts[1], ","), keep).Compute(on)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !strings.Contains(g.Path(), "on the cluster's workers") {
					t.Fatalf("%s: path %q", name, g.Path())
				}
				got, err := g.Int64s("id", on)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// The rows come by partition of the key's hash: as a set, pandas' rows.
				slices.Sort(got)
				w = slices.Clone(w)
				slices.Sort(w)
				if !slices.Equal(got, w) && (len(got) > 0 || len(w) > 0) {
					t.Fatalf("%s: %d rows %v, pandas %d %v", name, len(got), head64(got), len(w), head64(w))
				}
			}
			for _, key := range []string{"ki", "kf"} {
				host, err := df.SetIndex(key, 4)
				if err != nil {
					t.Fatal(err)
				}
				got, err := df.SetIndex(key, 4, on)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(got.Path(), "cluster's workers") {
					t.Fatalf("SetIndex(%s): path %q", key, got.Path())
				}
				hi, _ := host.Int64s("id")
				gi, err := got.Int64s("id", on)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(hi, gi) {
					t.Fatalf("SetIndex(%s): rows %v, in this process %v", key, head64(gi), head64(hi))
				}
				checkDivisions(t, got, key, on)
				t.Logf("SetIndex(%s) on the workers: divisions %v; %s", key, got.Divisions(), got.Path())
			}
		})
	}
}

// checkDivisions checks that every partition's non-null index values lie between its
// divisions and that the last division is the last non-null value.
func checkDivisions(t *testing.T, f *dataframe.Frame, key string, on gpuarray.ComputeOption) {
	t.Helper()
	div := f.Divisions()
	a, err := f.Array(key)
	if err != nil {
		t.Fatal(err)
	}
	lens := a.Chunks()[0]
	if len(div) != len(lens)+1 {
		t.Fatalf("SetIndex(%s): %d divisions for %d partitions", key, len(div), len(lens))
	}
	v, err := f.Float64s(key, on)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := f.Valid(key, on)
	if err != nil {
		t.Fatal(err)
	}
	num := func(x any) float64 {
		switch y := x.(type) {
		case int64:
			return float64(y)
		case float64:
			return y
		}
		t.Fatalf("SetIndex(%s): a division %v (%T)", key, x, x)
		return 0
	}
	off := 0
	lastValid := -1
	for p, l := range lens {
		for i := off; i < off+l; i++ {
			if !ok[i] || v[i] != v[i] {
				continue
			}
			lastValid = i
			if div[p] == nil || v[i] < num(div[p]) || (div[p+1] != nil && p+1 < len(lens) && v[i] > num(div[p+1])) {
				t.Fatalf("SetIndex(%s): row %d's %v outside partition %d's divisions %v", key, i, v[i], p, div)
			}
		}
		off += l
	}
	if lastValid >= 0 && num(div[len(div)-1]) != v[lastValid] {
		t.Fatalf("SetIndex(%s): last division %v, last value %v", key, div[len(div)-1], v[lastValid])
	}
}
