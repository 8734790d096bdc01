package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestFrameStringsOnCluster runs string functions (a filter on StartsWith, ==, StrLen) and a
// GroupBy on a string key with a cluster's workers and checks them against this process's
// CPU run: strings stay host heaps there (per heap entry in this process, gathered per row on
// the workers), and Path says so.
func TestFrameStringsOnCluster(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	const rows = 4000
	s := make([]string, rows)
	v := make([]int64, rows)
	for i := range s {
		s[i], v[i] = fmt.Sprintf("%s%d", []string{"ab", "b", "日本"}[i%3], i%11), int64(i%13)
	}
	f := dataframe.FromSlices([]string{"s", "v"}, []any{s, v}, dataframe.NPartitions(4)).
		Assign("n", dataframe.Col("s").StrLen())
	steps := []*dataframe.Frame{
		f.Filter(dataframe.Col("s").StartsWith("ab")).GroupBy("s").Sorted().Agg(dataframe.Sum("v"), dataframe.Max("n"), dataframe.Size()),
		f.Filter(dataframe.Col("s").Eq("b3")).Sum("v", "n"),
	}
	for i, st := range steps {
		want, err := st.Compute()
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.Compute(gpuarray.On(c))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		t.Logf("step %d: Path %q", i, got.Path())
		if p := got.Path(); !strings.Contains(p, "on the host") {
			t.Errorf("step %d: Path %q does not name the host string steps", i, p)
		}
		for _, col := range want.Columns() {
			if col == "s" {
				g, _ := got.Strings(col)
				w, _ := want.Strings(col)
				if !slices.Equal(g, w) || len(w) == 0 {
					t.Fatalf("step %d: %s = %v, want %v", i, col, g, w)
				}
				continue
			}
			g, err := got.Int64s(col)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := want.Int64s(col)
			if !slices.Equal(g, w) {
				t.Fatalf("step %d: %s = %v, want %v", i, col, g, w)
			}
		}
	}
}
