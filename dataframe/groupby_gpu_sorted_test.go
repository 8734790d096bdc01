package dataframe

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
)

// TestGroupByDeviceSortedMatchesHost runs the sort-based device grouping (keys whose codes
// multiply past hashagg.MaxDenseGroups: one wide nullable integer, several keys packed into
// one word, keys packed into two words) over the host emulation of the group-aggregate
// kernel and compares every aggregation with the host hash aggregation.
func TestGroupByDeviceSortedMatchesHost(t *testing.T) {
	keySets := [][]string{{"big"}, {"kw", "ky"}, {"big", "kw", "ky", "kc"}, {"kc", "big", "kb"}}
	for _, parts := range []int{1, 4} {
		f := groupFrame(2000, parts, uint64(40+parts)).Assign("big", Col("vi").Div(100).AsType(Int64))
		for _, keys := range keySets {
			what := fmt.Sprintf("%d parts, keys %v", parts, keys)
			h := holisticAggs()
			aggs := append(allDenseAggs(), h[:len(h)-2]...) // not its Std and Size again
			g := f.GroupBy(keys...).Sorted().Agg(aggs...)
			want, got := hostThenDevice(t, what, g)
			if !strings.Contains(got.Path(), "numbered by sorting the keys on the GPU") || strings.Contains(got.Path(), "aggregation on the host") {
				t.Fatalf("%s: Path %q", what, got.Path())
			}
			sameFrames(t, what, got, want, 1e-9)
		}
	}
}

// TestPackWords checks how keys are packed into words: runs whose ranges multiply to at most
// 2^53, in key order, and no packing of a key wider than that.
func TestPackWords(t *testing.T) {
	dk := []hashagg.DenseKey{{Min: 0, Card: 100}, {Min: -5, Card: 1 << 40}, {Min: 3, Card: 1 << 20}, {Min: 0, Card: 2}}
	words, plans, ok := packWords(dk)
	if !ok || len(words) != 2 || !slices.Equal(words[0], []int{0, 1}) || !slices.Equal(words[1], []int{2, 3}) {
		t.Fatalf("words %v, ok %v", words, ok)
	}
	if !slices.Equal(plans[0].Strides, []int64{1 << 40, 1}) || !slices.Equal(plans[1].Strides, []int64{2, 1}) || plans[1].Keys[0] != dk[2] {
		t.Fatalf("plans %+v %+v", plans[0], plans[1])
	}
	if _, _, ok := packWords([]hashagg.DenseKey{{Card: 1<<53 + 1}}); ok {
		t.Fatal("a key wider than 2^53 codes packed")
	}
}
