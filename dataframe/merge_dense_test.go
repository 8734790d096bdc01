package dataframe_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
		{"unique every key", side(900, 900, true, "r")},
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

// TestMergeDirectAddressSharedLeft checks the merges whose output keeps every left row once
// and in order (a left join on unique right keys, an inner join where every left row
// matches), whose left columns are the left side's own: later steps (a sum, Head, Persist, a
// second merge, ToParquet and back) read them as any other column, and the left side is the
// same afterwards.
func TestMergeDirectAddressSharedLeft(t *testing.T) {
	const n, card = 5000, 700
	rng := rand.New(rand.NewPCG(5, 6))
	lk, lv, lvv := make([]int32, n), make([]float64, n), make([]bool, n)
	want := 0.0
	for i := range lk {
		lk[i], lv[i], lvv[i] = int32(rng.IntN(card)), float64(i), i%5 != 0
		if lvv[i] {
			want += lv[i]
		}
	}
	rk, rv := make([]int32, card), make([]float64, card)
	for i, k := range rng.Perm(card) {
		rk[i], rv[i] = int32(k), float64(k)
	}
	l := dataframe.FromSlices([]string{"k", "v", "vn"}, []any{lk, lv, dataframe.Nullable(lv, lvv)}, dataframe.NPartitions(3)).Persist()
	before := canonicalRows(t, l)
	for _, c := range []struct {
		how string
		r   *dataframe.Frame
	}{
		{"left", dataframe.FromSlices([]string{"k", "w"}, []any{rk[:card/2], rv[:card/2]}).Persist()},
		{"inner", dataframe.FromSlices([]string{"k", "w"}, []any{rk, rv}).Persist()},
	} {
		m := dataframe.Merge(l, c.r, dataframe.On("k"), dataframe.How(c.how))
		got, err := m.Compute()
		if err != nil {
			t.Fatalf("%s: %v", c.how, err)
		}
		hashed := canonicalRows(t, dataframe.Merge(l, c.r, dataframe.On("k"), dataframe.How(c.how), dataframe.BroadcastRows(0)))
		if rows := canonicalRows(t, got); !slices.Equal(rows, hashed) {
			t.Fatalf("%s: %d rows, hash join %d", c.how, len(rows), len(hashed))
		}
		sum, err := got.Sum("vn").Float64s("vn")
		if err != nil || len(sum) != 1 || sum[0] != want {
			t.Fatalf("%s: sum of vn %v (%v), want %v", c.how, sum, err, want)
		}
		head, err := got.Head(4)
		if err != nil {
			t.Fatalf("%s: head: %v", c.how, err)
		}
		hv, err := head.Float64s("v")
		if err != nil || !slices.Equal(hv, lv[:4]) {
			t.Fatalf("%s: head's v %v (%v), want %v", c.how, hv, err, lv[:4])
		}
		p := got.Persist()
		again := canonicalRows(t, dataframe.Merge(p, c.r.Rename(map[string]string{"w": "w2"}), dataframe.On("k"), dataframe.How(c.how)))
		if len(again) != len(hashed) {
			t.Fatalf("%s: merged again: %d rows, want %d", c.how, len(again), len(hashed))
		}
		path := filepath.Join(t.TempDir(), "m.parquet")
		if err := p.ToParquet(path); err != nil {
			t.Fatalf("%s: %v", c.how, err)
		}
		if back := canonicalRows(t, dataframe.ReadParquet(path)); !slices.Equal(back, hashed) {
			t.Fatalf("%s: read back %d rows, want %d", c.how, len(back), len(hashed))
		}
	}
	if after := canonicalRows(t, l); !slices.Equal(after, before) {
		t.Fatal("the left side changed")
	}
}
