package dataframe_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

func newTestCluster(t *testing.T, workers int) *cluster.LocalCUDA {
	t.Helper()
	c, err := cluster.NewLocalCUDA(cluster.Options{NWorkers: workers, Binary: testenv.Binary(t), CPUOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMergeOnClusterAgainstPandas runs the merges of the pandas property test on three
// workers, broadcast and shuffled (and, for frames shuffled on the key first, aligned): every
// join kind and key type, nulls in keys. Each equals pandas' rows and the merge in this
// process, and ran on the workers (Path) but for coalesced categorical keys, which the host
// join unifies.
func TestMergeOnClusterAgainstPandas(t *testing.T) {
	c := newTestCluster(t, 3)
	on := gpuarray.On(c)
	seeds := 2
	if testing.Short() {
		seeds = 1
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			var want map[string]struct {
				Columns []string
				Rows    []string
			}
			runPandas(t, dir, pandasMerge, &want, fmt.Sprint(seed))
			l := dataframe.ReadParquet(filepath.Join(dir, "left.parquet")).Persist(on)
			r := dataframe.ReadParquet(filepath.Join(dir, "right.parquet")).Persist(on)
			names := make([]string, 0, len(want))
			for name := range want {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				w := want[name]
				spec, how, _ := strings.Cut(name, ":")
				var opts []dataframe.MergeOption
				ls, rs := l, r
				var err error
				if lk, rk, ok := strings.Cut(spec, "="); ok {
					opts = append(opts, dataframe.LeftOn(lk), dataframe.RightOn(rk), dataframe.Suffixes("_l", "_r"))
				} else {
					keys := strings.Split(spec, ",")
					opts = append(opts, dataframe.On(keys...))
					if ls, err = l.Shuffle(keys, 4, on); err != nil {
						t.Fatal(err)
					}
					if rs, err = r.Shuffle(keys, 4, on); err != nil {
						t.Fatal(err)
					}
				}
				opts = append(opts, dataframe.How(how))
				inProcess := canonicalRows(t, dataframe.Merge(l, r, opts...))
				if !slices.Equal(inProcess, w.Rows) {
					t.Fatalf("%s: the merge in this process differs from pandas", name)
				}
				cases := []struct {
					what string
					l, r *dataframe.Frame
					bc   int
				}{{"broadcast", l, r, dataframe.DefaultBroadcastRows}, {"shuffled", l, r, 0}, {"pre-shuffled", ls, rs, 0}}
				for _, cs := range cases {
					m, err := dataframe.Merge(cs.l, cs.r, append(opts, dataframe.BroadcastRows(cs.bc))...).Compute(on)
					if err != nil {
						t.Fatalf("%s %s: %v", name, cs.what, err)
					}
					if !slices.Equal(m.Columns(), w.Columns) {
						t.Fatalf("%s %s: columns %v, pandas %v", name, cs.what, m.Columns(), w.Columns)
					}
					coalescedCat := strings.Contains(spec, "kc") && (how == "right" || how == "outer")
					if onWorkers := strings.Contains(m.Path(), "cluster's workers"); onWorkers == coalescedCat && len(w.Rows) > 0 && !strings.Contains(m.Path(), "empty side") {
						t.Fatalf("%s %s: path %q", name, cs.what, m.Path())
					}
					if onWorkers := strings.Contains(m.Path(), "cluster's workers"); onWorkers {
						want := map[string]string{"broadcast": "broadcast", "shuffled": "moved worker to worker", "pre-shuffled": "partitioned on the key"}[cs.what]
						if cs.what == "broadcast" && how == "outer" {
							want = "moved worker to worker"
						}
						if !strings.Contains(m.Path(), want) {
							t.Fatalf("%s %s: path %q lacks %q", name, cs.what, m.Path(), want)
						}
					}
					got := canonicalRows(t, m)
					if !slices.Equal(got, w.Rows) {
						t.Fatalf("%s %s: %d rows, pandas %d (path %s)\n got %v\nwant %v", name, cs.what, len(got), len(w.Rows), m.Path(), head(got), head(w.Rows))
					}
				}
			}
		})
	}
}

// TestMergeOnClusterSplitsSkewedKey shuffles a merge on two workers whose memory limit is
// small (4 MiB) with one key on most left rows (about 3.2 MB of its 16-byte rows, over an
// eighth of the limit): the heavy key's partition is split into pieces under it, each joined
// with the right side's partition, so the largest output partition is smaller than the heavy
// key's output rows (which one partition would hold unsplit); the rows equal the merge in
// this process for inner, left, right, semi and anti joins, and the outer join (never split)
// too.
func TestMergeOnClusterSplitsSkewedKey(t *testing.T) {
	c, err := cluster.NewLocalCUDA(cluster.Options{NWorkers: 2, Binary: testenv.Binary(t), CPUOnly: true, MemoryLimit: "4MiB"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	on := gpuarray.On(c)
	const n, heavy = 240000, 200000
	lk, lv := make([]int64, n), make([]int64, n)
	for i := range lk {
		lk[i], lv[i] = int64(i%1000)+1, int64(i)
		if i < heavy {
			lk[i] = 0
		}
	}
	rk, rv := []int64{0, 1, 2, 3, 5000}, []int64{10, 11, 12, 13, 14}
	l := dataframe.FromSlices([]string{"k", "v"}, []any{lk, lv}, dataframe.NPartitions(4))
	r := dataframe.FromSlices([]string{"k", "w"}, []any{rk, rv})
	lp, rp := l.Persist(on), r.Persist(on)
	for _, how := range []string{"inner", "left", "right", "semi", "anti", "outer"} {
		opts := []dataframe.MergeOption{dataframe.On("k"), dataframe.How(how), dataframe.BroadcastRows(0)}
		m, err := dataframe.Merge(lp, rp, opts...).Compute(on)
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if !strings.Contains(m.Path(), "moved worker to worker") {
			t.Fatalf("%s: path %q", how, m.Path())
		}
		if got, want := canonicalRows(t, m), canonicalRows(t, dataframe.Merge(l, r, opts...)); !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, in this process %d", how, len(got), len(want))
		}
		a, err := m.Array("k")
		if err != nil {
			t.Fatal(err)
		}
		largest := slices.Max(a.Chunks()[0])
		switch how {
		case "inner", "left", "semi":
			if largest >= heavy {
				t.Errorf("%s: largest output partition %d rows, the heavy key's %d (not split)", how, largest, heavy)
			}
		case "outer":
			if largest < heavy {
				t.Errorf("outer: largest output partition %d rows, under the heavy key's %d: an outer join must not split", largest, heavy)
			}
		}
	}
}
