package dataframe_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// TestCategoricalFromCodes builds a categorical column from codes (-1 null) and checks it
// against the same strings converted with AsType: values, nulls, groupby and a merge on it.
func TestCategoricalFromCodes(t *testing.T) {
	cats := []string{"b", "a", "c"}
	codes := []int32{0, 1, -1, 2, 1, 0, 0}
	f := dataframe.FromSlices([]string{"k", "v"}, []any{dataframe.Categorical(codes, cats), []int64{1, 2, 3, 4, 5, 6, 7}}, dataframe.NPartitions(3))
	if got := f.Dtypes()[0].DType; got != dataframe.Category {
		t.Fatalf("type %s, want category", got)
	}
	strs, err := f.Strings("k")
	if err != nil {
		t.Fatal(err)
	}
	valid, err := f.Valid("k")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range codes {
		if (c >= 0) != valid[i] || (c >= 0 && strs[i] != cats[c]) {
			t.Errorf("row %d: %q valid %v, want code %d", i, strs[i], valid[i], c)
		}
	}
	// The same column made from strings.
	plain := make([]string, len(codes))
	ok := make([]bool, len(codes))
	for i, c := range codes {
		if c >= 0 {
			plain[i], ok[i] = cats[c], true
		}
	}
	g := dataframe.FromSlices([]string{"k", "v"}, []any{dataframe.Nullable(plain, ok), []int64{1, 2, 3, 4, 5, 6, 7}}, dataframe.NPartitions(2)).AsType("k", dataframe.Category)
	sums := func(x *dataframe.Frame) string {
		r, err := x.GroupBy("k").Sum("v").SortValues([]string{"k"}).Compute()
		if err != nil {
			t.Fatal(err)
		}
		k, _ := r.Strings("k")
		v, _ := r.Int64s("v")
		return fmt.Sprint(k, v)
	}
	if a, b := sums(f), sums(g); a != b {
		t.Errorf("groupby: %s from codes, %s from strings", a, b)
	}
	m, err := dataframe.Merge(f, g.Rename(map[string]string{"v": "w"}), dataframe.On("k")).Compute()
	if err != nil {
		t.Fatal(err)
	}
	// b: 3 rows each side, a: 2, c: 1, and the null keys match each other, as in pandas.
	if n, _ := m.Len(); n != 3*3+2*2+1+1 {
		t.Errorf("merge on the categorical: %d rows, want 15", n)
	}
}

func TestCategoricalErrors(t *testing.T) {
	for _, c := range []struct {
		col  dataframe.CategoricalColumn
		want string
	}{
		{dataframe.Categorical([]int32{0, 3}, []string{"a", "b"}), "code 3"},
		{dataframe.Categorical([]int32{0, -2}, []string{"a", "b"}), "code -2"},
		{dataframe.Categorical([]int32{0}, []string{"a", "b", "a"}), `category "a" appears twice`},
	} {
		err := dataframe.FromSlices([]string{"k"}, []any{c.col}).Err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.col, err, c.want)
		}
	}
	// A long list is checked in parallel: its one duplicate is found.
	long := make([]string, 1<<17)
	for i := range long {
		long[i] = fmt.Sprintf("id%d", i)
	}
	if err := dataframe.FromSlices([]string{"k"}, []any{dataframe.Categorical([]int32{0}, long)}).Err(); err != nil {
		t.Fatalf("distinct categories: %v", err)
	}
	dup := slices.Clone(long)
	dup[len(dup)-1] = dup[12345]
	err := dataframe.FromSlices([]string{"k"}, []any{dataframe.Categorical([]int32{0}, dup)}).Err()
	if err == nil || !strings.Contains(err.Error(), `"id12345" appears twice`) {
		t.Errorf("a duplicate among %d categories: error %v", len(dup), err)
	}
}
