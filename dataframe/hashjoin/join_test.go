package hashjoin_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
)

// naive is the nested-loop join in the documented order.
func naive(l, r hashjoin.Keys, how hashjoin.How) (li, ri []int32) {
	eq := func(i, j int) bool {
		for c := range l {
			if l[c][i] != r[c][j] {
				return false
			}
		}
		return true
	}
	nl, nr := l.Len(), r.Len()
	matchedR := make([]bool, nr)
	if how == hashjoin.Right {
		for j := 0; j < nr; j++ {
			found := false
			for i := 0; i < nl; i++ {
				if eq(i, j) {
					li, ri = append(li, int32(i)), append(ri, int32(j))
					found = true
				}
			}
			if !found {
				li, ri = append(li, -1), append(ri, int32(j))
			}
		}
		return
	}
	for i := 0; i < nl; i++ {
		found := false
		for j := 0; j < nr; j++ {
			if eq(i, j) {
				found = true
				matchedR[j] = true
				if how != hashjoin.Semi && how != hashjoin.Anti {
					li, ri = append(li, int32(i)), append(ri, int32(j))
				}
			}
		}
		switch {
		case how == hashjoin.Semi && found, how == hashjoin.Anti && !found:
			li = append(li, int32(i))
		case !found && (how == hashjoin.Left || how == hashjoin.Outer):
			li, ri = append(li, int32(i)), append(ri, -1)
		}
	}
	if how == hashjoin.Outer {
		for j, m := range matchedR {
			if !m {
				li, ri = append(li, -1), append(ri, int32(j))
			}
		}
	}
	return
}

func keys(rng *rand.Rand, n, ncols, card int) hashjoin.Keys {
	k := make(hashjoin.Keys, ncols)
	for c := range k {
		k[c] = make([]int64, n)
		for i := range k[c] {
			k[c][i] = int64(rng.IntN(card)) - int64(card/2)
		}
	}
	return k
}

func TestJoinMatchesNestedLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		ncols := 1 + rng.IntN(3)
		card := 1 + rng.IntN(20)
		l := keys(rng, rng.IntN(60), ncols, card)
		r := keys(rng, rng.IntN(60), ncols, card)
		if l.Len() == 0 || r.Len() == 0 {
			continue
		}
		for how := hashjoin.Inner; how <= hashjoin.Anti; how++ {
			li, ri, err := hashjoin.Join(l, r, how)
			if err != nil {
				t.Fatal(err)
			}
			wl, wr := naive(l, r, how)
			if !slices.Equal(li, wl) || !slices.Equal(ri, wr) {
				t.Fatalf("trial %d %v (%d x %d rows): got %v %v, want %v %v", trial, how, l.Len(), r.Len(), li, ri, wl, wr)
			}
		}
	}
}

func TestPartitionKeepsEqualKeysTogether(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	k := keys(rng, 5000, 2, 50)
	p, err := hashjoin.Partition(k, 7)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int64]int32{}
	used := map[int32]bool{}
	for i := range p {
		key := [2]int64{k[0][i], k[1][i]}
		if q, ok := seen[key]; ok && q != p[i] {
			t.Fatalf("key %v in partitions %d and %d", key, q, p[i])
		}
		seen[key] = p[i]
		used[p[i]] = true
		if p[i] < 0 || p[i] >= 7 {
			t.Fatalf("partition %d", p[i])
		}
	}
	if len(used) != 7 {
		t.Fatalf("%d of 7 partitions used", len(used))
	}
}

// BenchmarkJoinInner joins 1e6 probe rows with 1e5 build rows on one int64 key (the
// db-benchmark join task's small right side at 1e6 rows).
func BenchmarkJoinInner(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := keys(rng, 1_000_000, 1, 200_000)
	r := keys(rng, 100_000, 1, 200_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := hashjoin.Join(l, r, hashjoin.Inner); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDenseAndHashedTablesAgree joins one-column keys of a narrow range (a direct-address
// table) and the same keys spread wide (a hashed table): the row pairs are equal, and equal
// to the nested-loop join, for every kind.
func TestDenseAndHashedTablesAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	col := func(n, card int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(rng.IntN(card)) - 5
		}
		return v
	}
	spread := func(k []int64) []int64 {
		out := make([]int64, len(k))
		for i, x := range k {
			out[i] = x * 1_000_000_007
		}
		return out
	}
	for _, sizes := range [][2]int{{200, 50}, {50, 200}, {300, 300}} {
		l, r := col(sizes[0], 60), col(sizes[1], 60)
		for _, how := range []hashjoin.How{hashjoin.Inner, hashjoin.Left, hashjoin.Right, hashjoin.Outer, hashjoin.Semi, hashjoin.Anti} {
			dl, dr, err := hashjoin.Join(hashjoin.Keys{l}, hashjoin.Keys{r}, how)
			if err != nil {
				t.Fatal(err)
			}
			hl, hr, err := hashjoin.Join(hashjoin.Keys{spread(l)}, hashjoin.Keys{spread(r)}, how)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dl, hl) || !slices.Equal(dr, hr) {
				t.Fatalf("%v %v: dense and hashed tables differ", sizes, how)
			}
			if how == hashjoin.Semi || how == hashjoin.Anti {
				continue
			}
			nl, nr := naive(hashjoin.Keys{l}, hashjoin.Keys{r}, how)
			if !slices.Equal(dl, nl) || !slices.Equal(dr, nr) {
				t.Fatalf("%v %v: differs from the nested-loop join", sizes, how)
			}
		}
	}
}
