package dataframe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestGroupByCPUIndependentOfThreads checks that the host's groupby gives the same bits with
// 1, 2 and 5 threads, on the dense and the hashed paths: units, not threads, fix the order of
// float sums and of merges.
func TestGroupByCPUIndependentOfThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 150_000 // enough pairs that medians bucket them in parallel chunks
	k1, k2 := make([]int32, n), make([]int32, n)
	v1 := make([]int32, n)
	v3 := make([]float64, n)
	for i := range k1 {
		k1[i], k2[i] = int32(1+r.IntN(5000)), int32(r.IntN(7))
		v1[i], v3[i] = int32(r.IntN(100)-50), r.NormFloat64()*1e6
	}
	x := FromSlices([]string{"k1", "k2", "v1", "v3"}, []any{k1, k2, v1, v3}, NPartitions(7)).Persist()
	frames := func() []*Frame {
		return []*Frame{
			x.GroupBy("k1").Agg(Sum("v1"), Sum("v3"), Mean("v3"), Max("v1"), Min("v1"), Size()),
			x.GroupBy("k1", "k2").Agg(Sum("v3"), Mean("v1"), Std("v3"), Count("v3")),
			x.GroupBy("k2").Agg(Sum("v3"), Median("v3"), Mean("v1")),
			x.GroupBy("k1").Agg(Median("v3"), NUnique("v1"), Quantile("v1", 0.3)),
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, mode := range []struct {
		name string
		max  uint64
	}{{"dense", 1 << 22}, {"hashed", 64}} {
		reset := SetDenseMax(mode.max)
		var want []*Frame
		for _, threads := range []int{1, 2, 5} {
			runtime.GOMAXPROCS(threads)
			for i, f := range frames() {
				c, err := f.Compute()
				if err != nil {
					t.Fatal(err)
				}
				if threads == 1 {
					want = append(want, c)
					continue
				}
				sameFrames(t, fmt.Sprintf("%s, question %d, %d threads", mode.name, i, threads), c, want[i], 0)
			}
		}
		reset()
	}
}

// TestGroupByWideKeysDecode groups by int64 keys whose ranges multiply to near 2^62 (one key
// constant, one of two values), so that every group's keys are peeled off a packed code of
// up to 61 bits, and checks each group's keys, sum and size against a map of the rows.
func TestGroupByWideKeysDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	n := 40_000
	cols := make([][]int64, 5)
	for k := range cols {
		cols[k] = make([]int64, n)
	}
	v := make([]int64, n)
	for i := 0; i < n; i++ {
		cols[0][i] = r.Int64N(1<<21) - 1<<20 // ~2^21 wide, negative too
		cols[1][i] = 1e12 + r.Int64N(1<<30)  // ~2^30 wide, far from 0
		cols[2][i] = -7                      // one value
		cols[3][i] = 5 + int64(r.IntN(2))    // two values
		cols[4][i] = r.Int64N(1 << 9)
		if r.IntN(3) == 0 && i > 0 { // repeat an earlier row's keys: groups of several rows
			j := r.IntN(i)
			for k := range cols {
				cols[k][i] = cols[k][j]
			}
		}
		v[i] = r.Int64N(1000) - 500
	}
	type key [5]int64
	want := map[key][2]int64{}
	for i := 0; i < n; i++ {
		kk := key{cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i]}
		w := want[kk]
		want[kk] = [2]int64{w[0] + v[i], w[1] + 1}
	}
	names := []string{"a", "b", "c", "d", "e"}
	x := FromSlices(append(names, "v"), []any{cols[0], cols[1], cols[2], cols[3], cols[4], v}, NPartitions(3)).Persist()
	g, err := x.GroupBy(names...).Agg(Sum("v"), Size().As("n")).Compute()
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]int64, 7)
	for i, name := range append(names, "v", "n") {
		if got[i], err = g.Int64s(name); err != nil {
			t.Fatal(err)
		}
	}
	if len(got[0]) != len(want) {
		t.Fatalf("%d groups, want %d", len(got[0]), len(want))
	}
	for i := range got[0] {
		kk := key{got[0][i], got[1][i], got[2][i], got[3][i], got[4][i]}
		w, ok := want[kk]
		if !ok {
			t.Fatalf("group %d: keys %v are no row's", i, kk)
		}
		if got[5][i] != w[0] || got[6][i] != w[1] {
			t.Fatalf("group %v: sum %d size %d, want %d and %d", kk, got[5][i], got[6][i], w[0], w[1])
		}
	}
}

// TestGroupByMedianFewAndManyGroups checks medians and distinct counts by group against a sort
// of each group's values, with few groups (the dense path writes the pairs grouped) and with
// about as many groups as rows (pairs in row order, bucketed by hashagg), NaNs skipped.
func TestGroupByMedianFewAndManyGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	n := 60_000
	for _, groups := range []int{50, 40_000} {
		k := make([]int32, n)
		v := make([]float64, n)
		for i := range k {
			k[i], v[i] = int32(1+r.IntN(groups)), float64(r.IntN(200))
			if r.IntN(50) == 0 {
				v[i] = math.NaN()
			}
		}
		byKey := map[int64][]float64{}
		for i := range k {
			if v[i] == v[i] {
				byKey[int64(k[i])] = append(byKey[int64(k[i])], v[i])
			}
		}
		w := make([]int32, n)
		wByKey := map[int64][]float64{}
		for i := range w {
			w[i] = int32(r.IntN(30))
			wByKey[int64(k[i])] = append(wByKey[int64(k[i])], float64(w[i]))
		}
		x := FromSlices([]string{"k", "v", "w"}, []any{k, v, w}, NPartitions(7)).Persist()
		// Std and Mean count the values the medians take (their counts are reused).
		g, err := x.GroupBy("k").Agg(Median("v").As("m"), NUnique("v").As("u"), Std("v").As("s"),
			Median("w").As("mw"), Mean("w").As("aw")).Compute()
		if err != nil {
			t.Fatal(err)
		}
		medW, err := g.Float64s("mw")
		if err != nil {
			t.Fatal(err)
		}
		keys, err := g.Int64s("k")
		if err != nil {
			t.Fatal(err)
		}
		med, err := g.Float64s("m")
		if err != nil {
			t.Fatal(err)
		}
		uniq, err := g.Int64s("u")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) < groups/2 {
			t.Fatalf("%d groups: %d in the result", groups, len(keys))
		}
		median := func(xs []float64) float64 {
			xs = slices.Clone(xs)
			slices.Sort(xs)
			m := len(xs) / 2
			if len(xs)%2 == 0 {
				return xs[m-1] + (xs[m]-xs[m-1])/2
			}
			return xs[m]
		}
		for i, key := range keys {
			if want := median(wByKey[key]); medW[i] != want {
				t.Fatalf("%d groups, key %d: median of w %v, want %v", groups, key, medW[i], want)
			}
			xs := slices.Clone(byKey[key])
			slices.Sort(xs)
			if len(xs) == 0 {
				if !math.IsNaN(med[i]) {
					t.Fatalf("%d groups, key %d: median %v of no value", groups, key, med[i])
				}
				continue
			}
			m := len(xs) / 2
			want := xs[m]
			if len(xs)%2 == 0 {
				want = xs[m-1] + (xs[m]-xs[m-1])/2
			}
			if med[i] != want || uniq[i] != int64(len(slices.Compact(xs))) {
				t.Fatalf("%d groups, key %d: median %v nunique %d, want %v and %d", groups, key, med[i], uniq[i], want, len(slices.Compact(xs)))
			}
		}
	}
}

// TestGroupByGroupedMediansEqualOtherPath checks denseGrouped's medians, quantiles, counts,
// means and variances (each group's values grouped in buckets) against the path that folds the
// rows and sorts pairs: medians, quantiles and counts the same bits, means and variances
// within 1e-12 (summation order), with NaNs, an integer column, few groups and about as many
// groups as rows, a split result and a sorted one (finished states split and combined), and
// the same bits on 1 and 3 threads.
func TestGroupByGroupedMediansEqualOtherPath(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 90_000
	k1, k2, k3 := make([]int32, n), make([]int32, n), make([]int64, n)
	vi := make([]int32, n)
	vf := make([]float64, n)
	for i := range k1 {
		k1[i], k2[i], k3[i] = int32(1+r.IntN(300)), int32(r.IntN(7)), int64(r.IntN(n))-7
		vi[i], vf[i] = int32(r.IntN(40)-20), float64(r.IntN(1000))/7
		if r.IntN(40) == 0 {
			vf[i] = math.NaN()
		}
		if k1[i] == 17 { // a group whose values are all NaN
			vf[i] = math.NaN()
		}
	}
	x := FromSlices([]string{"k1", "k2", "k3", "vi", "vf"}, []any{k1, k2, k3, vi, vf}, NPartitions(5)).Persist()
	frames := func() []*Frame {
		return []*Frame{
			// Sorted: the other path may list the groups in another order.
			x.GroupBy("k1", "k2").Sorted().Agg(Median("vf").As("m"), Std("vf").As("s")),
			x.GroupBy("k2").Sorted().Agg(Median("vf").As("m"), Quantile("vf", 0.3).As("q"), Var("vf"), Mean("vf").As("a"), Count("vf").As("c"), Size()),
			x.GroupBy("k1").Sorted().Agg(Quantile("vi", 0.9).As("q"), Median("vi").As("m"), Mean("vi").As("a"), Std("vi").As("s")),
			x.GroupBy("k3").Sorted().Agg(Median("vf").As("m"), Size()),
			x.GroupBy("k1", "k2").Sorted().SplitOut(3).Agg(Median("vf").As("m"), Count("vf").As("c")),
			x.GroupBy("k1").Sorted().SplitOut(2).Agg(Median("vf").As("m"), Std("vf").As("s")),
		}
	}
	compute := func(on bool, threads int) []*Frame {
		defer SetGroupedMedians(on)()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
		var out []*Frame
		for i, f := range frames() {
			c, err := f.Compute()
			if err != nil {
				t.Fatalf("frame %d (grouped %v): %v", i, on, err)
			}
			out = append(out, c)
		}
		return out
	}
	before := groupedCalls.Load()
	other := compute(false, 2)
	if groupedCalls.Load() != before {
		t.Fatal("the grouped path ran while off")
	}
	grouped := compute(true, 1)
	if got := groupedCalls.Load() - before; got != int64(len(grouped)) {
		t.Fatalf("the grouped path ran %d times for %d frames", got, len(grouped))
	}
	for i, w := range other {
		g := grouped[i]
		n, _ := g.Len()
		if i == 0 && n < 2000 {
			t.Fatalf("frame 0: %d groups", n)
		}
		// Medians, quantiles and counts are exact; means and variances within rounding.
		sameFrames(t, fmt.Sprintf("frame %d, grouped against folded", i), g, w, 1e-12)
		for _, name := range []string{"m", "q", "c"} {
			if !slices.Contains(w.Columns(), name) {
				continue
			}
			a, _ := g.Float64s(name)
			b, _ := w.Float64s(name)
			for j := range b {
				if a[j] != b[j] && !(math.IsNaN(a[j]) && math.IsNaN(b[j])) {
					t.Fatalf("frame %d: %s[%d] = %v, other path %v", i, name, j, a[j], b[j])
				}
			}
		}
	}
	for i, f := range compute(true, 3) {
		sameFrames(t, fmt.Sprintf("frame %d, 3 threads against 1", i), f, grouped[i], 0)
	}
}

// TestGroupByKeysDecodedInTheirTypes checks the key columns that an unsorted groupby of one
// output partition decodes from the groups' codes straight into their output types (int32,
// int64, int16, categorical, string, a nullable int32 whose null rows are dropped), on the
// dense, the grouped-medians and the hashed paths: each group's keys, dtypes, sum, median and
// size against a map of the rows.
func TestGroupByKeysDecodedInTheirTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 100_000 // radix buckets on the hashed path
	k32, kn := make([]int32, n), make([]int32, n)
	k64, k16 := make([]int64, n), make([]int16, n)
	kc, ks := make([]string, n), make([]string, n)
	valid := make([]bool, n)
	v := make([]float64, n)
	for i := 0; i < n; i++ {
		k32[i], kn[i], valid[i] = int32(1+r.IntN(40)), int32(r.IntN(30)-15), r.IntN(9) != 0
		k64[i], k16[i] = 1e15+r.Int64N(300), int16(r.IntN(5)-2)
		kc[i], ks[i] = fmt.Sprintf("c%02d", r.IntN(12)), fmt.Sprintf("s%d", r.IntN(7))
		v[i] = float64(r.IntN(1000)) / 8
	}
	names := []string{"k32", "k64", "k16", "kc", "ks", "kn"}
	x := FromSlices(append(names, "v"), []any{k32, k64, k16, kc, ks, Nullable(kn, valid), v}, NPartitions(3)).
		AsType("kc", Category).Persist()
	keyOf := func(i int, keys []string) (string, bool) {
		s := ""
		for _, k := range keys {
			switch k {
			case "k32":
				s += fmt.Sprint(k32[i], ",")
			case "k64":
				s += fmt.Sprint(k64[i], ",")
			case "k16":
				s += fmt.Sprint(k16[i], ",")
			case "kc":
				s += kc[i] + ","
			case "ks":
				s += ks[i] + ","
			case "kn":
				if !valid[i] {
					return "", false
				}
				s += fmt.Sprint(kn[i], ",")
			}
		}
		return s, true
	}
	for _, keys := range [][]string{{"k32", "kc"}, {"k64", "ks", "kn"}, {"kc", "k16", "k32", "k64"}, names} {
		rows := map[string][]float64{}
		for i := 0; i < n; i++ {
			if k, ok := keyOf(i, keys); ok {
				rows[k] = append(rows[k], v[i])
			}
		}
		for _, mode := range []struct {
			name string
			max  uint64
			aggs []Agg
		}{
			{"dense", 1 << 22, []Agg{Sum("v"), Size().As("n")}},
			{"grouped medians", 1 << 22, []Agg{Median("v"), Std("v").As("sd"), Size().As("n")}},
			{"hashed", 16, []Agg{Sum("v"), Size().As("n")}},
		} {
			what := fmt.Sprintf("%v, %s", keys, mode.name)
			reset := SetDenseMax(mode.max)
			g, err := x.GroupBy(keys...).Agg(mode.aggs...).Compute()
			reset()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, fd := range g.Dtypes()[:len(keys)] {
				if want, _ := x.field(fd.Name); fd.DType != want.DType {
					t.Fatalf("%s: key %s is %s, want %s", what, fd.Name, fd.DType, want.DType)
				}
			}
			cols := make([][]string, len(keys))
			for j, k := range keys {
				if k == "kc" || k == "ks" {
					cols[j], err = g.Strings(k)
				} else {
					var ints []int64
					ints, err = g.Int64s(k)
					for _, x := range ints {
						cols[j] = append(cols[j], fmt.Sprint(x))
					}
				}
				if err != nil {
					t.Fatalf("%s: %s: %v", what, k, err)
				}
			}
			size, _ := g.Int64s("n")
			if len(size) != len(rows) {
				t.Fatalf("%s: %d groups, want %d", what, len(size), len(rows))
			}
			vals, _ := g.Float64s("v") // the sum, or the median
			for i := range size {
				k := ""
				for j := range keys {
					k += cols[j][i] + ","
				}
				vs, ok := rows[k]
				if !ok {
					t.Fatalf("%s: group %d: keys %q are no row's", what, i, k)
				}
				want := 0.0
				for _, x := range vs {
					want += x
				}
				if mode.name == "grouped medians" {
					s := slices.Sorted(slices.Values(vs))
					want = (s[(len(s)-1)/2] + s[len(s)/2]) / 2
				}
				if int(size[i]) != len(vs) || math.Abs(vals[i]-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("%s: group %q: size %d value %v, want %d and %v", what, k, size[i], vals[i], len(vs), want)
				}
			}
		}
	}
}
