package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestGroupbyDataFollowsDatagen checks the groupby generator against groupby-datagen.R's
// ranges (id1, id2 "id%03d" of 1..K, id3 "id%010d" of 1..N/K, id4, id5 in 1..K, id6 in 1..N/K,
// v1 in 1..5, v2 in 1..15, v3 in [0, 100)), and that the table does not depend on the
// number of cores that drew it.
func TestGroupbyDataFollowsDatagen(t *testing.T) {
	const n, k = 3*genBlock + 77, 10
	x := groupbyData(n, k, 3)
	ranges := map[string][2]int64{"id4": {1, k}, "id5": {1, k}, "id6": {1, n / k}, "v1": {1, 5}, "v2": {1, 15}}
	for col, r := range ranges {
		v, err := x.Int64s(col)
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := slices.Min(v), slices.Max(v); lo != r[0] || hi != r[1] {
			t.Errorf("%s spans %d..%d, want %d..%d", col, lo, hi, r[0], r[1])
		}
	}
	v3, err := x.Float64s("v3")
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := slices.Min(v3), slices.Max(v3); lo < 0 || hi >= 100 || hi < 99 {
		t.Errorf("v3 spans %g..%g, want [0, 100)", lo, hi)
	}
	for col, want := range map[string]int{"id1": k, "id2": k, "id3": n / k} {
		s, err := x.Strings(col)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(s)
		s = slices.Compact(s)
		// id3 draws n rows from n/k values: most, not all, appear.
		last := map[string]string{"id1": "id010", "id2": "id010", "id3": fmt.Sprintf("id%010d", want)}[col]
		if len(s) > want || len(s) < want/2 || (col != "id3" && len(s) != want) || s[len(s)-1] > last || !strings.HasPrefix(s[0], "id0") {
			t.Errorf("%s has %d distinct values %q..%q, want at most %d up to %q", col, len(s), s[0], s[len(s)-1], want, last)
		}
	}
	prev := runtime.GOMAXPROCS(1)
	y := groupbyData(n, k, 3)
	runtime.GOMAXPROCS(prev)
	for _, col := range []string{"id3", "id6", "v3"} {
		a, _ := x.Float64s(col)
		b, _ := y.Float64s(col)
		if col == "id3" {
			sa, _ := x.Strings(col)
			sb, _ := y.Strings(col)
			if !slices.Equal(sa, sb) {
				t.Errorf("%s differs with one core", col)
			}
			continue
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s differs with one core", col)
		}
	}
}
