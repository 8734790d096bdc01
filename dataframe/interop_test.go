package dataframe_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// runPython runs a script with the test virtualenv's python (pandas 3, pyarrow) in dir.
func runPython(t *testing.T, dir, script string, args ...string) string {
	t.Helper()
	py := testenv.Python(t)
	var out []byte
	var err error
	for try := 0; try < 2; try++ {
		cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
		cmd.Dir = dir
		out, err = cmd.CombinedOutput()
		// pyarrow's thread pools can abort the interpreter at exit on a busy machine
		// ("terminate called without an active exception", SIGABRT) after the script's work
		// is done: a death by signal is run once more; an error the script raised is not.
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) || !ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			break
		}
		t.Logf("python died by a signal (%v), run again:\n%s", err, out)
	}
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return string(out)
}

const writeTypes = `
import json, numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
n = 1000
rng = np.random.default_rng(7)
df = pd.DataFrame({
    "i64": rng.integers(-1000, 1000, n),
    "i32": rng.integers(-50, 50, n).astype("int32"),
    "f64": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n)),
    "b": rng.random(n) < 0.5,
    "s": pd.array([None if i % 17 == 0 else "id%03d" % (i % 37) for i in range(n)], dtype="str"),
    "cat": pd.Categorical(["k%d" % (i % 5) for i in range(n)]),
    "t": pd.to_datetime(rng.integers(0, 2_000_000_000, n), unit="s").astype("datetime64[us]"),
    "ni": pd.array([None if i % 9 == 0 else i for i in range(n)], dtype="Int64"),
})
pq.write_table(pa.Table.from_pandas(df, preserve_index=False), "types.parquet", row_group_size=300)
out = {c: [None if pd.isna(v) else v for v in df[c].tolist()] for c in ["i64", "i32", "f64", "b", "s", "ni"]}
out["cat"] = [str(v) for v in df["cat"]]
out["t"] = [int(v) for v in df["t"].astype("int64")]
json.dump(out, open("types.json", "w"))
`

const compareBack = `
import sys, pandas as pd
a = pd.read_parquet("types.parquet")
b = pd.read_parquet(sys.argv[1])
# Our files carry pandas' metadata: the nullable Int64 column comes back as Int64.
assert str(b["ni"].dtype) == "Int64", b.dtypes
pd.testing.assert_frame_equal(a, b, check_exact=True)
c = pd.read_csv(sys.argv[2])
assert list(c.columns) == ["i64", "i32", "f64", "b", "s", "cat", "t", "ni"], c.columns
pd.testing.assert_series_equal(c["i64"], a["i64"])
pd.testing.assert_series_equal(c["f64"], a["f64"])
assert c["s"].isna().sum() == a["s"].isna().sum()
print("ok", len(b), b.dtypes.to_dict())
`

func TestParquetInteropWithPandas(t *testing.T) {
	dir := t.TempDir()
	runPython(t, dir, writeTypes)
	var want map[string][]any
	readJSON(t, filepath.Join(dir, "types.json"), &want)
	f := dataframe.ReadParquet(filepath.Join(dir, "types.parquet"))
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if f.NPartitions() != 4 {
		t.Errorf("%d partitions, want one per row group (4)", f.NPartitions())
	}
	wantTypes := []dataframe.Field{{"i64", "int64"}, {"i32", "int32"}, {"f64", "float64"}, {"b", "bool"}, {"s", "string"},
		{"cat", "category"}, {"t", "datetime64[us]"}, {"ni", "int64"}}
	if got := f.Dtypes(); !slices.Equal(got, wantTypes) {
		t.Fatalf("dtypes %v, want %v", got, wantTypes)
	}
	c, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	i64, _ := c.Int64s("i64")
	f64, _ := c.Float64s("f64")
	s, _ := c.Strings("s")
	sv, _ := c.Valid("s")
	cat, _ := c.Strings("cat")
	ni, _ := c.Int64s("ni")
	niv, _ := c.Valid("ni")
	tt, _ := c.Int64s("t")
	for i := range i64 {
		if float64(i64[i]) != want["i64"][i].(float64) || float64(tt[i]) != want["t"][i].(float64) || cat[i] != want["cat"][i].(string) {
			t.Fatalf("row %d: i64 %d t %d cat %q, pandas %v %v %v", i, i64[i], tt[i], cat[i], want["i64"][i], want["t"][i], want["cat"][i])
		}
		if w := want["f64"][i]; (w == nil) != math.IsNaN(f64[i]) || (w != nil && w.(float64) != f64[i]) {
			t.Fatalf("row %d: f64 %v, pandas %v", i, f64[i], w)
		}
		if w := want["s"][i]; (w == nil) == sv[i] || (w != nil && w.(string) != s[i]) {
			t.Fatalf("row %d: s %q valid %v, pandas %v", i, s[i], sv[i], w)
		}
		if w := want["ni"][i]; (w == nil) == niv[i] || (w != nil && float64(ni[i]) != w.(float64)) {
			t.Fatalf("row %d: ni %d valid %v, pandas %v", i, ni[i], niv[i], w)
		}
	}
	// We write; pandas reads and finds the same frame, dtypes included.
	back := filepath.Join(dir, "back.parquet")
	if err := c.ToParquet(back); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(dir, "back.csv")
	if err := c.ToCSV(csvPath); err != nil {
		t.Fatal(err)
	}
	out := runPython(t, dir, compareBack, back, csvPath)
	if !strings.HasPrefix(out, "ok 1000") {
		t.Fatalf("pandas: %s", out)
	}
}

const writeHive = `
import numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
rows = []
for year in (2023, 2024):
    for part in range(2):
        n = 50
        df = pd.DataFrame({"x": np.arange(n) + 1000 * part + 10000 * (year - 2023), "v": np.arange(n) * 0.5})
        import os
        os.makedirs("ds/year=%d" % year, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), "ds/year=%d/part-%d.parquet" % (year, part), row_group_size=25)
print(pd.read_parquet("ds").query("x >= 11000")["v"].sum())
`

func TestReadParquetHiveAndPushdown(t *testing.T) {
	dir := t.TempDir()
	out := runPython(t, dir, writeHive)
	ds := filepath.Join(dir, "ds")
	f := dataframe.ReadParquet(ds)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if f.NPartitions() != 8 || !slices.Equal(f.Columns(), []string{"x", "v", "year"}) {
		t.Fatalf("%d partitions, columns %v", f.NPartitions(), f.Columns())
	}
	// x >= 11000 holds only in year=2024/part-1: its two row groups are read, the rest skipped
	// by their statistics.
	p := dataframe.ReadParquet(ds, dataframe.Filters(dataframe.Col("x").Ge(11000)), dataframe.Columns("v", "year"))
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if p.NPartitions() != 2 {
		t.Errorf("pushdown kept %d row groups, want 2", p.NPartitions())
	}
	s, err := p.Sum("v").Float64s("v")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != strings.TrimSuffix(strings.TrimSuffix(formatG(s[0]), "0"), ".") && got != formatG(s[0]) {
		t.Errorf("sum %v, pandas %s", s[0], got)
	}
	y, err := dataframe.ReadParquet(ds, dataframe.Filters(dataframe.Col("year").Eq(2023))).Len()
	if err != nil || y != 100 {
		t.Errorf("year == 2023: %d rows (%v), want 100", y, err)
	}
}

func formatG(f float64) string { b, _ := json.Marshal(f); return string(b) + ".0" }

func TestCorruptParquetNamesFileAndRowGroup(t *testing.T) {
	dir := t.TempDir()
	runPython(t, dir, writeTypes)
	path := filepath.Join(dir, "types.parquet")
	b, _ := os.ReadFile(path)
	// Scribble over the middle of the data pages, keeping the footer.
	for i := len(b) / 3; i < len(b)/3+2000 && i < len(b)-1000; i++ {
		b[i] ^= 0x5a
	}
	bad := filepath.Join(dir, "bad.parquet")
	os.WriteFile(bad, b, 0o644)
	_, err := dataframe.ReadParquet(bad).Compute()
	if err == nil || !strings.Contains(err.Error(), "bad.parquet") || !strings.Contains(err.Error(), "row group") {
		t.Fatalf("error %v does not name the file and the row group", err)
	}
	os.WriteFile(bad, b[:len(b)/2], 0o644)
	f := dataframe.ReadParquet(bad)
	if f.Err() == nil || !strings.Contains(f.Err().Error(), "bad.parquet") {
		t.Fatalf("truncated file: %v", f.Err())
	}
}

func TestCSVReadWithPandas(t *testing.T) {
	dir := t.TempDir()
	csv := "id,name,score,when\n1,ann,1.5,2024-01-02\n2,,NA,2024-03-04 05:06:07\n3,bob,2.25,\n"
	path := filepath.Join(dir, "a.csv")
	os.WriteFile(path, []byte(csv), 0o644)
	f := dataframe.ReadCSV(path, dataframe.DateColumns("when"), dataframe.PartitionRows(2))
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	want := []dataframe.Field{{"id", "int64"}, {"name", "string"}, {"score", "float64"}, {"when", "datetime64[us]"}}
	if !slices.Equal(f.Dtypes(), want) {
		t.Fatalf("dtypes %v, want %v", f.Dtypes(), want)
	}
	c, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	if c.NPartitions() != 2 {
		t.Errorf("%d partitions, want 2", c.NPartitions())
	}
	names, _ := c.Strings("name")
	nv, _ := c.Valid("name")
	score, _ := c.Float64s("score")
	when, _ := c.Times("when")
	wv, _ := c.Valid("when")
	if !slices.Equal(names, []string{"ann", "", "bob"}) || !slices.Equal(nv, []bool{true, false, true}) || !math.IsNaN(score[1]) || score[2] != 2.25 ||
		when[1].Hour() != 5 || wv[2] {
		t.Fatalf("names %q %v score %v when %v %v", names, nv, score, when, wv)
	}
	out := filepath.Join(dir, "out.parquet")
	if err := c.ToParquet(out); err != nil {
		t.Fatal(err)
	}
	got := runPython(t, dir, `
import sys, pandas as pd
a = pd.read_csv(sys.argv[1], parse_dates=["when"], date_format="mixed")
b = pd.read_parquet(sys.argv[2])
assert a["id"].tolist() == b["id"].tolist()
assert a["name"].isna().tolist() == b["name"].isna().tolist()
assert a["when"].astype("datetime64[us]").tolist() == b["when"].tolist(), (a["when"], b["when"])
print("ok")`, path, out)
	if strings.TrimSpace(got) != "ok" {
		t.Fatal(got)
	}
	// A row that does not parse names its line and column.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("a,b\n1,2\n3,x\n"), 0o644)
	_, err = dataframe.ReadCSV(bad, dataframe.Schema(dataframe.Field{"a", "int64"}, dataframe.Field{"b", "int64"})).Compute()
	if err == nil || !strings.Contains(err.Error(), "line 3, column 3") || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("error %v does not name line 3, column 3 (b)", err)
	}
}

// TestParquetPandasDtypes writes a frame with nulls in every nullable type, as one file and
// as a partitioned directory, and checks the dtypes and values pandas reads back.
func TestParquetPandasDtypes(t *testing.T) {
	dir := t.TempDir()
	f := dataframe.FromSlices(
		[]string{"ni", "ni32", "nu8", "nb", "i", "b", "f", "s", "c"},
		[]any{
			dataframe.Nullable([]int64{1, -2, 3, 4, 5, 6}, []bool{true, true, false, true, true, true}),
			dataframe.Nullable([]int32{7, 8, 9, 10, 11, 12}, []bool{true, true, true, true, true, false}),
			dataframe.Nullable([]uint8{1, 2, 3, 4, 5, 6}, []bool{false, true, true, true, true, true}),
			dataframe.Nullable([]bool{true, false, true, false, true, true}, []bool{true, true, true, false, true, true}),
			[]int64{10, 20, 30, 40, 50, 60},
			[]bool{true, false, false, true, true, false},
			dataframe.Nullable([]float64{0.5, 1, 2, 3, 4, 5}, []bool{true, false, true, true, true, true}),
			dataframe.Nullable([]string{"a", "b", "c", "d", "e", "f"}, []bool{true, true, true, true, false, true}),
			[]string{"x", "y", "x", "z", "y", "x"},
		}, dataframe.NPartitions(2)).AsType("c", dataframe.Category)
	file := filepath.Join(dir, "one.parquet")
	if err := f.ToParquet(file); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "ds")
	if err := f.ToParquet(ds); err != nil {
		t.Fatal(err)
	}
	out := runPython(t, dir, `
import sys, pandas as pd
want = {"ni": "Int64", "ni32": "Int32", "nu8": "UInt8", "nb": "boolean", "i": "int64", "b": "bool",
        "f": "float64", "s": "str", "c": "category"}
for path in sys.argv[1:]:
    d = pd.read_parquet(path)
    got = {k: str(v) for k, v in d.dtypes.items()}
    assert got == want, (path, got)
    assert d["ni"].isna().tolist() == [False, False, True, False, False, False], d["ni"]
    assert d["ni"].dropna().tolist() == [1, -2, 4, 5, 6], d["ni"]
    assert d["ni32"].isna().tolist()[-1] and d["nu8"].isna().tolist()[0]
    assert d["nb"].isna().tolist() == [False, False, False, True, False, False], d["nb"]
    assert d["nb"].dropna().tolist() == [True, False, True, True, True], d["nb"]
    assert d["s"].isna().tolist()[4] and d["f"].isna().tolist()[1]
    assert d["c"].tolist() == ["x", "y", "x", "z", "y", "x"], d["c"]
    assert sorted(d["c"].cat.categories) == ["x", "y", "z"], d["c"].cat.categories
    assert list(d.index) == list(range(6)), d.index
print("ok")`, file, ds)
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("pandas: %s", out)
	}
}
