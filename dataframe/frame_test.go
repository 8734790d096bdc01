package dataframe_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

func small() *dataframe.Frame {
	return dataframe.FromSlices(
		[]string{"id", "k", "v", "x", "s"},
		[]any{
			[]int64{1, 2, 3, 4, 5, 6, 7, 8},
			[]int64{1, 2, 1, 2, 1, 3, 3, 1},
			dataframe.Nullable([]float64{1.5, 2, 3, 4, 5, 6, 7, 8}, []bool{true, true, false, true, true, true, true, true}),
			[]int32{10, 20, 30, 40, 50, 60, 70, 80},
			[]string{"apple", "Banana", "cherry", "apple", "date", "banana", "fig", "apple"},
		}, dataframe.NPartitions(3))
}

func TestFilterAssignCompute(t *testing.T) {
	f := small().Filter(dataframe.Col("x").Gt(25)).Assign("y", dataframe.Col("x").Mul(2).Add(dataframe.Col("id")))
	c, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.Int64s("y")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{63, 84, 105, 126, 147, 168}; !slices.Equal(y, want) {
		t.Fatalf("y = %v, want %v", y, want)
	}
	s, err := c.Strings("s")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cherry", "apple", "date", "banana", "fig", "apple"}; !slices.Equal(s, want) {
		t.Fatalf("s = %v, want %v", s, want)
	}
	v, _ := c.Valid("v")
	if v[0] || !v[1] {
		t.Fatalf("validity of v after the filter: %v", v)
	}
	if n, err := c.Len(); err != nil || n != 6 {
		t.Fatalf("Len = %d, %v", n, err)
	}
}

func TestStringFunctions(t *testing.T) {
	f := small().
		Assign("n", dataframe.Col("s").StrLen()).
		Assign("up", dataframe.Col("s").Upper()).
		Assign("has", dataframe.Col("s").Contains("an")).
		Assign("cat", dataframe.Col("s").Lower().ToCategory()).
		Filter(dataframe.Col("s").StartsWith("a").Not())
	c, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := c.Int64s("n")
	up, _ := c.Strings("up")
	has, _ := c.Bools("has")
	cat, _ := c.Strings("cat")
	if !slices.Equal(n, []int64{6, 6, 4, 6, 3}) || !slices.Equal(up, []string{"BANANA", "CHERRY", "DATE", "BANANA", "FIG"}) ||
		!slices.Equal(has, []bool{true, false, false, true, false}) || !slices.Equal(cat, []string{"banana", "cherry", "date", "banana", "fig"}) {
		t.Fatalf("n %v up %v has %v cat %v", n, up, has, cat)
	}
	if !strings.Contains(c.Path(), "str.") {
		t.Errorf("Path does not name the host string functions: %q", c.Path())
	}
}

func TestGroupBy(t *testing.T) {
	g := small().GroupBy("k").Sorted().Agg(dataframe.Sum("x"), dataframe.Mean("v"), dataframe.Count("v"), dataframe.Size(),
		dataframe.First("s"), dataframe.NUnique("s"), dataframe.Max("v").As("vmax"))
	c, err := g.Compute()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := c.Int64s("k")
	x, _ := c.Int64s("x")
	mean, _ := c.Float64s("v_mean")
	cnt, _ := c.Int64s("v_count")
	size, _ := c.Int64s("size")
	first, _ := c.Strings("s_first")
	nu, _ := c.Int64s("s_nunique")
	t.Log(c)
	if !slices.Equal(k, []int64{1, 2, 3}) || !slices.Equal(x, []int64{170, 60, 130}) || !slices.Equal(cnt, []int64{3, 2, 2}) ||
		!slices.Equal(size, []int64{4, 2, 2}) || !slices.Equal(first, []string{"apple", "Banana", "banana"}) || !slices.Equal(nu, []int64{3, 2, 2}) {
		t.Fatalf("k %v x %v cnt %v size %v first %v nunique %v", k, x, cnt, size, first, nu)
	}
	if math.Abs(mean[0]-(1.5+5+8)/3) > 1e-12 || mean[1] != 3 || mean[2] != 6.5 {
		t.Fatalf("mean %v", mean)
	}
}

func TestMissingColumnError(t *testing.T) {
	_, err := small().Filter(dataframe.Col("nope").Gt(1)).Compute()
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), `"id"`) {
		t.Fatalf("error %v does not name the missing column and the ones there", err)
	}
	_, err = small().Assign("z", dataframe.Col("s").Add(1)).Compute()
	if err == nil || !strings.Contains(err.Error(), "string") || !strings.Contains(err.Error(), "int64") {
		t.Fatalf("type mismatch error %v does not name both types", err)
	}
}

func TestReductionsAndDates(t *testing.T) {
	ts := []time.Time{time.Date(2024, 2, 29, 13, 5, 0, 0, time.UTC), time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := dataframe.FromSlices([]string{"t", "a"}, []any{ts, []float64{1, 2, math.NaN()}}, dataframe.NPartitions(2)).
		Assign("y", dataframe.Col("t").Year()).Assign("m", dataframe.Col("t").Month()).Assign("d", dataframe.Col("t").Day()).
		Assign("h", dataframe.Col("t").Hour()).Assign("wd", dataframe.Col("t").Weekday())
	c, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]int64{"y": {2024, 1969, 2000}, "m": {2, 12, 1}, "d": {29, 31, 1}, "h": {13, 23, 0}, "wd": {3, 2, 5}} {
		got, _ := c.Int64s(name)
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	r, err := f.Agg(dataframe.Sum("a"), dataframe.Count("a").As("n"), dataframe.Std("a").As("sd"), dataframe.Min("t").As("tmin")).Compute(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := r.Float64s("a")
	n, _ := r.Int64s("n")
	sd, _ := r.Float64s("sd")
	tmin, _ := r.Times("tmin")
	if s[0] != 3 || n[0] != 2 || math.Abs(sd[0]-math.Sqrt(0.5)) > 1e-12 || !tmin[0].Equal(ts[1]) {
		t.Fatalf("sum %v count %v std %v min %v", s, n, sd, tmin)
	}
}
