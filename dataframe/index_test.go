package dataframe_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

func randomFrame(seed uint64, n, card, parts int) (*dataframe.Frame, []int64, []int64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	k := make([]int64, n)
	v := make([]int64, n)
	for i := range k {
		k[i] = int64(rng.IntN(card))
		v[i] = int64(i)
	}
	return dataframe.FromSlices([]string{"k", "v"}, []any{k, v}, dataframe.NPartitions(parts)), k, v
}

func TestSetIndexDivisionsAndLoc(t *testing.T) {
	df, k, _ := randomFrame(1, 5000, 700, 6)
	s, err := df.SetIndex("k", 4)
	if err != nil {
		t.Fatal(err)
	}
	if s.Index() != "k" {
		t.Fatalf("index %q", s.Index())
	}
	got, err := s.Int64s("k")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(k)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatal("SetIndex did not sort the index")
	}
	div := s.Divisions()
	if len(div) != s.NPartitions()+1 || s.NPartitions() < 2 {
		t.Fatalf("%d divisions for %d partitions", len(div), s.NPartitions())
	}
	for i := 1; i < len(div); i++ {
		if div[i].(int64) < div[i-1].(int64) {
			t.Fatalf("divisions not sorted: %v", div)
		}
	}
	if div[0].(int64) != want[0] || div[len(div)-1].(int64) != want[len(want)-1] {
		t.Fatalf("divisions %v, index from %d to %d", div, want[0], want[len(want)-1])
	}
	r, err := s.Loc(100, 250)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := r.Int64s("k")
	var ref []int64
	for _, x := range want {
		if x >= 100 && x <= 250 {
			ref = append(ref, x)
		}
	}
	if !slices.Equal(sel, ref) {
		t.Fatalf("Loc: %d rows, want %d", len(sel), len(ref))
	}
	if !strings.Contains(r.Path(), "partitions read") {
		t.Fatalf("Loc path %q", r.Path())
	}
	if _, err := df.Loc(1, 2); err == nil {
		t.Fatal("Loc on a frame without an index: no error")
	}
}

func TestJoinOnIndexAndShuffledMerge(t *testing.T) {
	l, lk, lv := randomFrame(2, 3000, 400, 5)
	r0, rk, rv := randomFrame(3, 2000, 400, 3)
	r := r0.Rename(map[string]string{"v": "w"})
	want := map[int64][]int64{}
	for i := range lk {
		for j := range rk {
			if lk[i] == rk[j] {
				want[lv[i]] = append(want[lv[i]], rv[j])
			}
		}
	}
	check := func(name string, m *dataframe.Frame, left bool) {
		t.Helper()
		c, err := m.Compute()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vs, _ := c.Int64s("v")
		ws, _ := c.Int64s("w")
		valid, _ := c.Valid("w")
		got := map[int64][]int64{}
		for i := range vs {
			if valid[i] {
				got[vs[i]] = append(got[vs[i]], ws[i])
			} else if !left {
				t.Fatalf("%s: a null in an inner join", name)
			}
		}
		for v, ws := range want {
			g := got[v]
			slices.Sort(g)
			w := slices.Clone(ws)
			slices.Sort(w)
			if !slices.Equal(g, w) {
				t.Fatalf("%s: v=%d got %v want %v", name, v, g, w)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d matched left rows, want %d", name, len(got), len(want))
		}
		n, _ := c.Len()
		if left && n < len(lk) {
			t.Fatalf("%s: %d rows for %d left rows", name, n, len(lk))
		}
	}
	li, err := l.SetIndex("k", 0)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := r.SetIndex("k", 0)
	if err != nil {
		t.Fatal(err)
	}
	j := li.Join(ri)
	if !slices.Equal(j.Columns(), []string{"k", "v", "w"}) {
		t.Fatalf("Join columns %v", j.Columns())
	}
	check("join", j, true)

	ls, err := l.Shuffle([]string{"k"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := r.Shuffle([]string{"k"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	m := dataframe.Merge(ls, rs, dataframe.On("k"), dataframe.BroadcastRows(0))
	check("shuffled merge", m, false)
	c, _ := m.Compute()
	if !strings.Contains(c.Path(), "no shuffle") {
		t.Fatalf("merge of shuffled frames: path %q", c.Path())
	}
	m2 := dataframe.Merge(l, r, dataframe.On("k"), dataframe.BroadcastRows(0))
	check("hash-partitioned merge", m2, false)
	c2, _ := m2.Compute()
	if !strings.Contains(c2.Path(), "hash-partitioned on the key into") {
		t.Fatalf("path %q", c2.Path())
	}
}

func TestRepartitionKeepsRows(t *testing.T) {
	df, _, v := randomFrame(4, 1001, 10, 3)
	r := df.Filter(dataframe.Col("k").Lt(5)).Repartition(7)
	c, err := r.Compute()
	if err != nil {
		t.Fatal(err)
	}
	if c.NPartitions() != 7 {
		t.Fatalf("%d partitions", c.NPartitions())
	}
	got, _ := c.Int64s("v")
	ks, _ := df.Int64s("k")
	var want []int64
	for i, x := range v {
		if ks[i] < 5 {
			want = append(want, x)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Repartition changed the rows")
	}
}
