package dataframe_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/dataframe"
)

// seedFrames are frames of every column type ToParquet and ToCSV write, with nulls, a
// category and several partitions (row groups).
func seedFrames() []*dataframe.Frame {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []*dataframe.Frame{
		dataframe.FromSlices([]string{"i", "f", "b", "s", "t"}, []any{
			[]int64{1, -2, 3, 1 << 40}, []float64{0.5, -1, 2e300, 0}, []bool{true, false, true, true},
			[]string{"a", "", "ccc", "a"}, []time.Time{t0, t0.Add(time.Hour), t0, t0.Add(-time.Minute)}},
			dataframe.PartitionRows(2)),
		dataframe.FromSlices([]string{"n", "i32"}, []any{
			dataframe.Nullable([]float64{1, 2, 3}, []bool{true, false, true}), []int32{7, 8, 9}}),
		dataframe.FromSlices([]string{"k", "v"}, []any{[]string{"x", "y", "x", "z", "x"}, []int64{1, 2, 3, 4, 5}}).
			AsType("k", dataframe.Category),
		dataframe.FromSlices([]string{"e"}, []any{[]int64{}}),
	}
}

// fuzzFile is where one fuzzing process writes its input: inputs run one at a time in a
// process.
func fuzzFile(f *testing.F, name string) string {
	return filepath.Join(f.TempDir(), name)
}

// readAll computes every column of fr, as a cell that shows the frame does.
func readAll(fr *dataframe.Frame) {
	c, err := fr.Compute()
	if err != nil {
		return
	}
	c.Len()
	_ = c.String()
}

// allocGuard fails t when reading data allocated far more than data could describe: a
// length field believed before it was checked against the file.
func allocGuard(t *testing.T, data []byte, read func()) {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	read()
	runtime.ReadMemStats(&b)
	if n := b.TotalAlloc - a.TotalAlloc; n > 256<<20+uint64(len(data))*64 {
		t.Fatalf("reading %d bytes allocated %d MiB", len(data), n>>20)
	}
}

// FuzzReadParquet: any bytes in a .parquet file give a frame or an error from ReadParquet and
// from computing it, never a panic, a hang or an allocation beyond what the file can hold.
func FuzzReadParquet(f *testing.F) {
	dir := f.TempDir()
	for i, fr := range seedFrames() {
		p := filepath.Join(dir, "seed.parquet")
		if err := fr.ToParquet(p); err != nil {
			f.Fatal(i, err)
		}
		if _, err := dataframe.ReadParquet(p).Compute(); err != nil {
			f.Fatalf("seed %d does not read back: %v", i, err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		// The footer alone, after the magic: the metadata parser's input.
		if len(b) > 12 {
			f.Add(append([]byte("PAR1"), b[len(b)/2:]...))
		}
	}
	f.Add([]byte("PAR1PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Add([]byte("PAR1\xff\xff\xff\x7fPAR1"))
	path := fuzzFile(f, "in.parquet")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		allocGuard(t, data, func() {
			fr := dataframe.ReadParquet(path)
			if fr.Err() != nil {
				return
			}
			readAll(fr)
		})
	})
}

// FuzzReadCSV: any bytes in a .csv file give a frame or an error from ReadCSV and from
// computing it, with the schema inferred or given, never a panic.
func FuzzReadCSV(f *testing.F) {
	dir := f.TempDir()
	for i, fr := range seedFrames() {
		p := filepath.Join(dir, "seed.csv")
		if err := fr.ToCSV(p); err != nil {
			f.Fatal(i, err)
		}
		if _, err := dataframe.ReadCSV(p).Compute(); err != nil {
			f.Fatalf("seed %d does not read back: %v", i, err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte("a,b\n1,\"x\ny\"\n2,\"\"\"\"\n"), false)
	f.Add([]byte("a\n\"unterminated\n"), false)
	f.Add([]byte("a,b\n1\n1,2,3\n"), true)
	f.Add([]byte("t\n2026-01-02T03:04:05\nnot a time\n"), false)
	f.Add(bytes.Repeat([]byte("9"), 400), false)
	path := fuzzFile(f, "in.csv")
	f.Fuzz(func(t *testing.T, data []byte, schema bool) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := []dataframe.Option{dataframe.PartitionRows(3), dataframe.DateColumns("t")}
		if schema {
			opts = append(opts, dataframe.Schema(
				dataframe.Field{Name: "i", DType: dataframe.Int64}, dataframe.Field{Name: "f", DType: dataframe.Float64},
				dataframe.Field{Name: "b", DType: dataframe.Bool}, dataframe.Field{Name: "s", DType: dataframe.String},
				dataframe.Field{Name: "t", DType: dataframe.DatetimeUS}))
		}
		allocGuard(t, data, func() {
			fr := dataframe.ReadCSV(path, opts...)
			if fr.Err() != nil {
				return
			}
			readAll(fr)
		})
	})
}

// TestReadParquetRefusesCorruptStoredSchema: the inputs FuzzReadParquet found, whose stored
// Arrow schema claims a field list of billions (bbcc091f...) or a message body of 34 GB
// (b387df5d...): arrow-go allocated that much and the process died of "out of memory"; each
// is an error now, with nothing large allocated.
func TestReadParquetRefusesCorruptStoredSchema(t *testing.T) {
	for _, id := range []string{"bbcc091f05c1bc62", "b387df5d59c53c82"} {
		b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzReadParquet", id))
		if err != nil {
			t.Fatal(err)
		}
		// The corpus file: "go test fuzz v1" then []byte("...").
		lit := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[1])
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "bad.parquet")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		allocGuard(t, []byte(s), func() {
			err = dataframe.ReadParquet(path).Err()
		})
		if err == nil || !strings.Contains(err.Error(), "corrupt ARROW:schema") {
			t.Fatalf("%s: ReadParquet: %v", id, err)
		}
		t.Log(err)
	}
}

// TestReadCSVHeaderNames: the input FuzzReadCSV found, a header "," and no rows, made two
// columns named "" and a nil dereference when computed; empty and repeated names are named
// as pandas 3 names them.
func TestReadCSVHeaderNames(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text string
		want []string
		rows int
	}{
		{",\n", []string{"Unnamed: 0", "Unnamed: 1"}, 0},
		{"a,a,a.1,\n1,2,3,4\n", []string{"a", "a.2", "a.1", "Unnamed: 3"}, 1},
	} {
		p := filepath.Join(dir, "h.csv")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		fr := dataframe.ReadCSV(p)
		if got := fr.Columns(); !slices.Equal(got, c.want) {
			t.Errorf("%q: columns %q, want %q (pandas)", c.text, got, c.want)
		}
		m, err := fr.Compute()
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if n, _ := m.Len(); n != c.rows {
			t.Errorf("%q: %d rows, want %d", c.text, n, c.rows)
		}
	}
}
