package dataframe_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// TestMergeDirectAddressMatchesHashJoin merges on one int32, int64 or categorical key whose
// right values are dense, the host's direct-address join (the default strategy), and checks
// the rows against the same merge hash-partitioned (BroadcastRows(0)): right sides with
// unique and repeated keys, small and large (row-major gather), nulls in payload columns,
// categoricals with different dictionaries on each side, inner, left, semi and anti joins.
func TestMergeDirectAddressMatchesHashJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 7))
	side := func(n, card int, unique bool, tag string) *dataframe.Frame {
		k32, k64 := make([]int32, n), make([]int64, n)
		cat, v, vValid := make([]string, n), make([]float64, n), make([]bool, n)
		small := make([]int32, n)
		perm := rng.Perm(card)
		for i := range n {
			x := rng.IntN(card)
			if unique {
				x = perm[i%card]
			}
			k32[i], k64[i] = int32(x+5), int64(x)-int64(card/3)
			cat[i] = fmt.Sprintf("%s%d", tag, x%50)
			if x%3 == 0 {
				cat[i] = fmt.Sprintf("c%d", x%50)
			}
			v[i], vValid[i] = float64(i), rng.IntN(7) != 0
			small[i] = int32(i % 100)
		}
		return dataframe.FromSlices([]string{"k32", "k64", "cs", tag, tag + "n", tag + "s"},
			[]any{k32, k64, cat, v, dataframe.Nullable(v, vValid), small}, dataframe.NPartitions(3)).
			Assign("kc", dataframe.Col("cs").ToCategory()).Drop("cs")
	}
	l := side(3000, 900, false, "l")
	cases := []struct {
		name string
		r    *dataframe.Frame
	}{
		{"unique small", side(800, 900, true, "r")},
		{"repeated small", side(1500, 900, false, "r")},
		{"unique large", side(1<<16+500, 1<<16+700, true, "r").Drop("rn")},
		{"repeated large", side(1<<16+500, 1<<15, false, "r").Drop("rn")},
	}
	for _, c := range cases {
		for _, key := range []string{"k32", "k64", "kc"} {
			for _, how := range []string{"inner", "left", "semi", "anti"} {
				what := fmt.Sprintf("%s %s %s", c.name, key, how)
				dense := dataframe.Merge(l, c.r, dataframe.On(key), dataframe.How(how))
				hashed := dataframe.Merge(l, c.r, dataframe.On(key), dataframe.How(how), dataframe.BroadcastRows(0))
				d, err := dense.Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !strings.Contains(d.Path(), "direct-address join") {
					t.Fatalf("%s: path %q", what, d.Path())
				}
				got, want := canonicalRows(t, d), canonicalRows(t, hashed)
				if len(want) == 0 && how == "inner" {
					t.Fatalf("%s: no rows", what)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %d rows, hash join %d\n got %v\nwant %v", what, len(got), len(want), head(got), head(want))
				}
			}
		}
	}
}
