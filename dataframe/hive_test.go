package dataframe_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
)

// hiveRows computes f and returns its rows as "col=value" strings over cols (in that order),
// sorted: nulls as "null", numbers as Go prints them, so that a column read back with another
// integer type or as a category compares equal.
func hiveRows(t *testing.T, f *dataframe.Frame, cols ...string) []string {
	t.Helper()
	c, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Len()
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]string, n)
	types := map[string]dataframe.DType{}
	for _, fd := range c.Dtypes() {
		types[fd.Name] = fd.DType
	}
	for _, name := range cols {
		valid, err := c.Valid(name)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		switch dt := types[name]; {
		case dt == dataframe.String || dt == dataframe.Category:
			s, err = c.Strings(name)
		case dt.IsFloat():
			v, e := c.Float64s(name)
			err = e
			for _, x := range v {
				s = append(s, fmt.Sprint(x))
			}
		default:
			v, e := c.Int64s(name)
			err = e
			for _, x := range v {
				s = append(s, fmt.Sprint(x))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			v := s[i]
			if !valid[i] {
				v = "null"
			}
			rows[i] += name + "=" + v + " "
		}
	}
	slices.Sort(rows)
	return rows
}

// hiveFrame has integer and string keys, a null key of each, and a string key that needs
// escaping in a directory name.
func hiveFrame() *dataframe.Frame {
	const n = 240
	year := make([]int64, n)
	month := make([]int32, n)
	mv := make([]bool, n)
	city := make([]string, n)
	cv := make([]bool, n)
	v := make([]float64, n)
	for i := range n {
		year[i] = int64(2022 + i%3)
		month[i] = int32(1 + i%4)
		mv[i] = i%17 != 3
		city[i] = []string{"Paris", "São Paulo", "a/b c", "x%y"}[i%4/2+i%2*2%4]
		cv[i] = i%13 != 5
		v[i] = float64(i) * 0.25
	}
	return dataframe.FromSlices([]string{"year", "month", "city", "v"},
		[]any{year, dataframe.Nullable(month, mv), dataframe.Nullable(city, cv), v}, dataframe.NPartitions(3))
}

// TestParquetHiveWriteRoundTrip writes a frame partitioned on two keys and on three: the
// directories are key=value (a null key __HIVE_DEFAULT_PARTITION__), one file per key
// combination and partition of the frame, no file holds the keys, no temporary directory is
// left, and ReadParquet reads the rows back with the keys as columns.
func TestParquetHiveWriteRoundTrip(t *testing.T) {
	f := hiveFrame()
	all := []string{"city", "month", "v", "year"}
	want := hiveRows(t, f, all...)
	for _, keys := range [][]string{{"year", "month"}, {"city", "year", "month"}} {
		dir := filepath.Join(t.TempDir(), "ds")
		if err := f.ToParquetPartitioned(dir, keys); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "year=2022", "month=1", "part.0.parquet")); keys[0] == "year" && err != nil {
			t.Fatalf("keys %v: %v", keys, err)
		}
		var files []string
		filepath.WalkDir(filepath.Dir(dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				files = append(files, rel)
			}
			return err
		})
		nulls := 0
		for _, p := range files {
			if strings.HasPrefix(p, "..") {
				t.Fatalf("keys %v: %s left beside the dataset", keys, p)
			}
			nulls += strings.Count(p, "=__HIVE_DEFAULT_PARTITION__")
		}
		if nulls == 0 {
			t.Fatalf("keys %v: no directory of null keys among %v", keys, files)
		}
		back := dataframe.ReadParquet(dir)
		if err := back.Err(); err != nil {
			t.Fatal(err)
		}
		if got := back.Columns(); !slices.Equal(got[:len(got)-len(keys)], slices.DeleteFunc(slices.Clone([]string{"year", "month", "city", "v"}), func(c string) bool { return slices.Contains(keys, c) })) ||
			!slices.Equal(got[len(got)-len(keys):], keys) {
			t.Fatalf("keys %v: read back columns %v", keys, got)
		}
		if back.NPartitions() != len(files) {
			t.Fatalf("keys %v: %d partitions of %d files", keys, back.NPartitions(), len(files))
		}
		if got := hiveRows(t, back, all...); !slices.Equal(got, want) {
			t.Fatalf("keys %v: read back %d rows %v…, want %d %v…", keys, len(got), got[:3], len(want), want[:3])
		}
	}
	if err := f.ToParquetPartitioned(t.TempDir(), []string{"v"}); err == nil || !strings.Contains(err.Error(), `"v" is float64`) {
		t.Fatalf("a float key: %v", err)
	}
	if err := f.ToParquetPartitioned(t.TempDir(), []string{"nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("a missing key: %v", err)
	}
}

const readHiveBack = `
import json, sys, math, pandas as pd, pyarrow.parquet as pq
def rows(records):
    out = []
    for r in records:
        cells = []
        for c in ["city", "month", "v", "year"]:
            x = r[c]
            null = x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA
            cells.append("%s=%s" % (c, "null" if null else (repr(float(x)) if c == "v" else str(x))))
        out.append(" ".join(cells) + " ")
    return sorted(out)
# pyarrow reads every row, null keys too; pandas cannot convert dictionary partition columns
# with nulls (pyarrow's "Cannot yet unify dictionaries with nulls", its own datasets too), so
# it reads the dataset without null keys.
json.dump({"pyarrow": rows(pq.read_table(sys.argv[1]).to_pylist()),
           "pandas": rows(pd.read_parquet(sys.argv[2]).to_dict("records"))}, open("rows.json", "w"))
`

const writeHiveNulls = `
import pandas as pd, pyarrow as pa, pyarrow.parquet as pq
df = pd.DataFrame({"k": pd.array([1, None, 2, None, 1], dtype="Int64"), "s": ["a", "b", None, "a b", "b"], "v": [1.5, 2.5, 3.5, 4.5, 5.5]})
pq.write_to_dataset(pa.Table.from_pandas(df, preserve_index=False), "py", partition_cols=["k", "s"])
`

// TestParquetHiveInteropPyarrow: pyarrow and pandas read a dataset that ToParquetPartitioned
// wrote, nulls and escaped values included, to the same rows; ReadParquet reads pyarrow's
// write_to_dataset of null keys (__HIVE_DEFAULT_PARTITION__) and escaped values as nulls and
// the values.
func TestParquetHiveInteropPyarrow(t *testing.T) {
	dir := t.TempDir()
	f := hiveFrame()
	ds := filepath.Join(dir, "ds")
	if err := f.ToParquetPartitioned(ds, []string{"city", "month"}); err != nil {
		t.Fatal(err)
	}
	nn := filepath.Join(dir, "nn")
	noNulls := f.DropNA("city", "month")
	if err := noNulls.ToParquetPartitioned(nn, []string{"city", "month"}); err != nil {
		t.Fatal(err)
	}
	runPython(t, dir, readHiveBack, ds, nn)
	var got map[string][]string
	readJSON(t, filepath.Join(dir, "rows.json"), &got)
	for reader, src := range map[string]*dataframe.Frame{"pyarrow": f, "pandas": noNulls} {
		want := pyRows(hiveRows(t, src, "city", "month", "v", "year"))
		if !slices.Equal(got[reader], want) {
			t.Fatalf("%s read %d rows %v…, want %d %v…", reader, len(got[reader]), got[reader][:min(3, len(got[reader]))], len(want), want[:3])
		}
	}

	runPython(t, dir, writeHiveNulls)
	back := dataframe.ReadParquet(filepath.Join(dir, "py"))
	if err := back.Err(); err != nil {
		t.Fatal(err)
	}
	rows := hiveRows(t, back, "k", "s", "v")
	wantPy := []string{"k=1 s=a v=1.5 ", "k=null s=b v=2.5 ", "k=2 s=null v=3.5 ", "k=null s=a b v=4.5 ", "k=1 s=b v=5.5 "}
	slices.Sort(wantPy)
	if !slices.Equal(rows, wantPy) {
		t.Fatalf("read pyarrow's dataset as %q, want %q", rows, wantPy)
	}
}

// pyRows rewrites hiveRows' floats of column v as Python's repr prints them (1.0 where Go
// prints 1).
func pyRows(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var parts []string
		for _, kv := range strings.Split(strings.TrimSuffix(r, " "), " ") {
			if k, v, _ := strings.Cut(kv, "="); k == "v" && !strings.ContainsAny(v, ".en") {
				kv = k + "=" + v + ".0"
			}
			parts = append(parts, kv)
		}
		out[i] = strings.Join(parts, " ") + " "
	}
	slices.Sort(out)
	return out
}
