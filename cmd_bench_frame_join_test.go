package main

import (
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// TestJoinDataFollowsDatagen checks the generator against join-datagen.R's own assertions:
// x has N/1e6, N/1e3 and N distinct id1..id3 values, the last key of every right side is
// unique, and each right side has 90% of its keys in common with x.
func TestJoinDataFollowsDatagen(t *testing.T) {
	const n = 20_000
	tb := joinData(n, 2)
	distinct := func(f *dataframe.Frame, col string) int {
		g, err := f.GroupBy(col).Agg(dataframe.Size().As("n")).Compute()
		if err != nil {
			t.Fatal(err)
		}
		l, _ := g.Len()
		return l
	}
	for col, want := range map[string]int{"id1": 1, "id2": n / 1000, "id3": n, "id6": n} {
		if got := distinct(tb.x, col); got != want {
			t.Errorf("x.%s has %d distinct values, want %d", col, got, want)
		}
	}
	for _, c := range []struct {
		f        *dataframe.Frame
		key      string
		rows     int
		matching int
	}{{tb.small, "id1", 1, 1}, {tb.medium, "id2", n / 1000, 18}, {tb.big, "id3", n, 18000}} {
		l, _ := c.f.Len()
		if l != c.rows || distinct(c.f, c.key) != c.rows {
			t.Errorf("%s: %d rows, %d distinct, want %d unique", c.key, l, distinct(c.f, c.key), c.rows)
		}
		m, err := dataframe.Merge(c.f, tb.x, dataframe.On(c.key), dataframe.How("semi")).Compute()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := m.Len(); got != c.matching {
			t.Errorf("%s: %d right rows have a key in x, want %d", c.key, got, c.matching)
		}
	}
}
