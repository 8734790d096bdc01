package dataframe

import (
	"fmt"
	"strings"
	"testing"
)

// holisticAggs are the aggregations the device computes from sorted rows, over an integer
// column with nulls, a float column with nulls and NaNs, a datetime key used as a value and a
// bool, with algebraic ones beside them.
func holisticAggs() []Agg {
	return []Agg{Median("vi").As("vi_med"), Median("vf").As("vf_med"), Quantile("vf", 0.1).As("vf_q10"),
		Quantile("vi", 0.75).As("vi_q75"), Quantile("vf", 1).As("vf_q100"), Quantile("vi", 0).As("vi_q0"),
		NUnique("vi").As("vi_nu"), NUnique("vf").As("vf_nu"), NUnique("ky").As("ky_nu"),
		First("vi").As("vi_first"), Last("vi").As("vi_last"), First("vf").As("vf_first"), Last("vf").As("vf_last"),
		First("kt").As("kt_first"), Last("kb").As("kb_last"), Std("vf").As("vf_std"), Size()}
}

// TestGroupByDeviceHolisticMatchesHost runs median, quantile, nunique, first and last through
// the device path (argsorts, gathers and the ranks picked per group, over the host emulation
// of the group-aggregate kernel) and compares them with the host hash aggregation, exact but
// for Std, for several key sets and partitionings.
func TestGroupByDeviceHolisticMatchesHost(t *testing.T) {
	keySets := [][]string{{"kc"}, {"ki"}, {"kb"}, {"kt"}, {"kc", "ki"}, {"ki", "kb", "kc"}}
	for _, parts := range []int{1, 3} {
		f := groupFrame(2500, parts, uint64(20+parts))
		for _, keys := range keySets {
			what := fmt.Sprintf("%d parts, keys %v", parts, keys)
			g := f.GroupBy(keys...).Sorted().Agg(holisticAggs()...)
			want, got := hostThenDevice(t, what, g)
			if !strings.Contains(got.Path(), "sorted by (code, value) on the GPU") || strings.Contains(got.Path(), "aggregation on the host") {
				t.Fatalf("%s: Path %q", what, got.Path())
			}
			exact := got.Drop("vf_std")
			sameFrames(t, what, exact, want.Drop("vf_std"), 0)
			sameFrames(t, what, got.Select("vf_std"), want.Select("vf_std"), 1e-9)
		}
	}
}

// TestGroupByDeviceHolisticFilterSplit checks the holistic step after a filter (groups with no
// valid value: NaN medians, zero nunique) and with SplitOut.
func TestGroupByDeviceHolisticFilterSplit(t *testing.T) {
	f := groupFrame(1500, 4, 31).Filter(Col("vf").Gt(250))
	g := f.GroupBy("kc", "kb").SplitOut(2).Agg(Median("vi"), NUnique("vf"), First("vi"), Last("vf"), Quantile("vi", 0.3))
	want, err := g.Compute()
	if err != nil {
		t.Fatal(err)
	}
	emulateDevice(t)
	got, err := g.Compute()
	if err != nil {
		t.Fatal(err)
	}
	if got.NPartitions() != 2 || !strings.Contains(got.Path(), "sorted by (code, value)") {
		t.Fatalf("%d partitions, Path %q", got.NPartitions(), got.Path())
	}
	sort := func(f *Frame) *Frame {
		s, err := f.SortValues([]string{"kc", "kb"}).Compute()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sameFrames(t, "filter, split out", sort(got), sort(want), 0)
}

// TestGroupByDeviceTopMatchesHost runs NLargest and NSmallest through the device path (rows
// sorted by (code, value), each group's first or last values picked) and compares them with
// the host's, for a nullable integer and a float column with nulls and NaNs, groups smaller
// than n among them, dense and sort-numbered keys.
func TestGroupByDeviceTopMatchesHost(t *testing.T) {
	f := groupFrame(2000, 3, 77)
	cases := []struct {
		keys []string
		n    int
		col  string
	}{{[]string{"kc"}, 2, "vf"}, {[]string{"ki", "kb"}, 3, "vi"}, {[]string{"kw", "ky"}, 2, "vf"}, {[]string{"kc", "ki"}, 40, "vi"}}
	for _, c := range cases {
		for _, largest := range []bool{true, false} {
			what := fmt.Sprintf("keys %v, n %d of %s, largest %v", c.keys, c.n, c.col, largest)
			g := f.GroupBy(c.keys...).Sorted()
			q := g.NSmallest(c.n, c.col)
			if largest {
				q = g.NLargest(c.n, c.col)
			}
			want, got := hostThenDevice(t, what, q)
			if !strings.Contains(got.Path(), "sorted by (code, value) on the GPU") || strings.Contains(got.Path(), "per group on the host") {
				t.Fatalf("%s: Path %q", what, got.Path())
			}
			sameFrames(t, what, got, want, 0)
		}
	}
}
