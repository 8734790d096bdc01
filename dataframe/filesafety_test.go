package dataframe_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// killChildEnv makes the test binary a child that writes a large frame
// (TestKilledWriterChild) for TestWritersKilledMidWrite to kill: "parquet PATH", "dataset
// PATH" (a directory of Parquet files), "hive PATH" (a hive-partitioned one) or "csv PATH".
const killChildEnv = "GPUNOTES_TEST_KILLED_FRAME_WRITER"

// bigFrame is 4e6 rows of normals in 40 partitions: seconds of writing as CSV or Parquet.
func bigFrame() *dataframe.Frame {
	x := gpuarray.NewRandomState(9).Normal(0, 1, gpuarray.Shape(4_000_000), gpuarray.Chunks(100_000))
	y := gpuarray.NewRandomState(10).Normal(0, 1, gpuarray.Shape(4_000_000), gpuarray.Chunks(100_000))
	return dataframe.FromArrays([]string{"x", "y"}, x, y)
}

// write writes f as kind to path.
func write(f *dataframe.Frame, kind, path string) error {
	switch kind {
	case "csv":
		return f.ToCSV(path)
	case "hive": // a hive-partitioned dataset, keyed on the sign of x
		return f.Assign("k", dataframe.Col("x").Gt(0).AsType(dataframe.Int64)).ToParquetPartitioned(path, []string{"k"})
	}
	return f.ToParquet(path)
}

// TestKilledWriterChild is the child process of TestWritersKilledMidWrite; it does nothing
// unless that test started it.
func TestKilledWriterChild(t *testing.T) {
	spec := os.Getenv(killChildEnv)
	if spec == "" {
		t.Skip("the child of TestWritersKilledMidWrite")
	}
	kind, path, _ := strings.Cut(spec, " ")
	if err := write(bigFrame(), kind, path); err != nil {
		t.Fatal(err)
	}
}

// outPath is where a kind of output goes in dir.
func outPath(dir, kind string) string {
	switch kind {
	case "csv":
		return filepath.Join(dir, "x.csv")
	case "dataset", "hive":
		return filepath.Join(dir, "x")
	}
	return filepath.Join(dir, "x.parquet")
}

// read reads a kind of output back.
func read(kind, path string) *dataframe.Frame {
	if kind == "csv" {
		return dataframe.ReadCSV(path)
	}
	return dataframe.ReadParquet(path)
}

// goodFrame is the good output that a killed write must leave in place.
func goodFrame() *dataframe.Frame {
	return dataframe.FromSlices([]string{"x", "y"}, []any{[]float64{1, 2, 3}, []float64{4, 5, 6}})
}

// TestWritersKilledMidWrite kills (SIGKILL) a process while ToParquet or ToCSV writes, with
// and without a good output at the path already: the path then holds the good output,
// unchanged, or nothing; never part of the new one. The next write removes the temporary
// output the killed one left, and the readers never see it.
func TestWritersKilledMidWrite(t *testing.T) {
	for _, kind := range []string{"parquet", "dataset", "hive", "csv"} {
		for _, existing := range []bool{false, true} {
			name := kind
			if existing {
				name += "/over-good"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				path := outPath(dir, kind)
				var before []byte
				if existing {
					if err := write(goodFrame(), kind, path); err != nil {
						t.Fatal(err)
					}
					before = snapshot(t, path)
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), killChildEnv+"="+kind+" "+path)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// Killed once it has written some of the temporary output.
				deadline := time.Now().Add(5 * time.Minute)
				for tempBytes(dir) < 1<<20 {
					if time.Now().After(deadline) {
						cmd.Process.Kill()
						cmd.Wait()
						t.Fatal("the child wrote nothing within 5 minutes")
					}
					time.Sleep(time.Millisecond)
				}
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				if err := cmd.Wait(); err == nil {
					t.Skip("the child finished before it was killed")
				}
				if tempBytes(dir) == 0 {
					t.Fatal("the killed child left no temporary output: nothing to clean up was tested")
				}
				if !existing {
					if _, err := os.Stat(path); !os.IsNotExist(err) {
						t.Fatalf("after the kill, %s exists (%v): a partial output under the final name", path, err)
					}
				} else {
					if after := snapshot(t, path); !bytes.Equal(after, before) {
						t.Fatalf("after the kill, %s changed (%d bytes, was %d)", path, len(after), len(before))
					}
					// The reader sees the good output, not the killed write's leftovers beside it.
					got, err := read(kind, path).Float64s("y")
					if err != nil || len(got) != 3 || got[2] != 6 {
						t.Fatalf("the good output no longer reads back: %v, %v", got, err)
					}
				}
				// The next write sweeps the killed write's temporary output.
				if err := write(goodFrame(), kind, path); err != nil {
					t.Fatal(err)
				}
				if n := tempBytes(dir); n != 0 {
					t.Fatalf("after the next write, %d bytes of temporary output remain", n)
				}
				if got, err := read(kind, path).Float64s("x"); err != nil || len(got) != 3 {
					t.Fatalf("the next write reads back %v, %v", got, err)
				}
			})
		}
	}
}

// TestFailedWriteKeepsGoodFile: a write whose frame fails to compute leaves the good output
// at the path as it was, and no temporary output.
func TestFailedWriteKeepsGoodFile(t *testing.T) {
	bad := goodFrame().Filter(dataframe.Col("nope").Gt(1))
	for _, kind := range []string{"parquet", "dataset", "hive", "csv"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			path := outPath(dir, kind)
			if err := write(goodFrame(), kind, path); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, path)
			if err := write(bad, kind, path); err == nil {
				t.Fatal("a frame of an unknown column was written")
			}
			if after := snapshot(t, path); !bytes.Equal(after, before) {
				t.Fatalf("after the failed write, %s changed", path)
			}
			if n := tempBytes(dir); n != 0 {
				t.Fatalf("the failed write left %d bytes of temporary output", n)
			}
		})
	}
}

// tempBytes is the size of the temporary outputs (".x*.tmp-*") under dir.
func tempBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if strings.Contains(p, ".tmp-") && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// snapshot is the content of a file, or of every file of a directory (names and bytes).
func snapshot(t *testing.T, path string) []byte {
	t.Helper()
	var b bytes.Buffer
	err := filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		b.WriteString(p + "\n")
		b.Write(data)
		return err
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return b.Bytes()
}
