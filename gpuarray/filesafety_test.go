package gpuarray

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
	"github.com/gpunotes/gpunotes/gpuarray/io/npy"
	"github.com/gpunotes/gpunotes/internal/atomicfile"
)

// killChildEnv makes the test binary a child that writes a large array (TestKilledWriterChild)
// for TestWritersKilledMidWrite to kill: "npy PATH" or "zarr PATH".
const killChildEnv = "GPUNOTES_TEST_KILLED_WRITER"

// TestKilledWriterChild is the child process of TestWritersKilledMidWrite; it does nothing
// unless that test started it.
func TestKilledWriterChild(t *testing.T) {
	spec := os.Getenv(killChildEnv)
	if spec == "" {
		t.Skip("the child of TestWritersKilledMidWrite")
	}
	kind, path, _ := strings.Cut(spec, " ")
	// 64 MB of normals in 100 chunks: seconds of work, killed long before its end.
	x := NewRandomState(9).Normal(0, 1, Shape(8_000_000), Chunks(80_000))
	var err error
	if kind == "npy" {
		err = SaveNpy(path, x)
	} else {
		err = x.ToZarr(path, ZarrOverwrite(), ZarrCompressor("none"))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestWritersKilledMidWrite kills (SIGKILL) a process while SaveNpy or ToZarr writes, with
// and without a good file at the path already: the path then holds the good file, unchanged,
// or nothing; never part of the new one.
func TestWritersKilledMidWrite(t *testing.T) {
	good := Arange(0, 1000, 1, Chunks(100))
	for _, kind := range []string{"npy", "zarr"} {
		for _, existing := range []bool{false, true} {
			name := kind
			if existing {
				name += "/over-good"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "x."+kind)
				var before []byte
				if existing {
					var err error
					if kind == "npy" {
						err = SaveNpy(path, good)
					} else {
						err = good.ToZarr(path)
					}
					if err != nil {
						t.Fatal(err)
					}
					before = snapshot(t, path)
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), killChildEnv+"="+kind+" "+path)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// Kill it once it has written some of the temporary output.
				deadline := time.Now().Add(5 * time.Minute)
				for {
					if n := tempBytes(dir); n > 1<<20 {
						break
					}
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
				if len(tempNames(dir)) == 0 {
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
					var a *Array
					if kind == "npy" {
						a = LoadNpy(path)
					} else {
						a = OpenZarr(path)
					}
					vals, err := a.ToSlice()
					if err != nil || len(vals) != 1000 || vals[999] != 999 {
						t.Fatalf("the good file no longer reads back: %d values, %v", len(vals), err)
					}
				}
				// The next write removes what the killed one left.
				var err error
				if kind == "npy" {
					err = SaveNpy(path, good)
				} else {
					err = good.ToZarr(path, ZarrOverwrite())
				}
				if err != nil {
					t.Fatal(err)
				}
				if left := tempNames(dir); len(left) > 0 {
					t.Fatalf("after the next write, the killed write's temporary output remains: %v", left)
				}
			})
		}
	}
}

// tempBytes is the size of the temporary outputs (".x.*.tmp-*") under dir.
func tempBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && strings.Contains(p, ".tmp-") {
			n += info.Size()
		}
		return nil
	})
	return n
}

// tempNames are the temporary outputs (".x.*.tmp-*") in dir.
func tempNames(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
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
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestToZarrOverwriteNeverLeavesPathEmpty replaces a store again and again while a reader
// looks at it: the reader finds the old store or the new one every time, never no store (the
// old store renamed away and the new one not yet in place; a process killed there lost its
// good store to a temporary name).
func TestToZarrOverwriteNeverLeavesPathEmpty(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "z.zarr")
	x := Arange(0, 64, 1, Chunks(64))
	if err := x.ToZarr(path); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, _ := atomicfile.Exchange(probe, path); !ok {
		t.Skip("this file system cannot swap two names in one step (renameat2 RENAME_EXCHANGE); ToZarr renames twice there")
	}
	if ok, _ := atomicfile.Exchange(probe, path); !ok { // back
		t.Fatal("swapped the names once, not back")
	}
	var missing, looks atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.Stat(filepath.Join(path, "zarr.json")); err != nil {
				missing.Add(1)
			}
			looks.Add(1)
		}
	}()
	for i := 0; i < 300 && missing.Load() == 0; i++ {
		if err := x.ToZarr(path, ZarrOverwrite()); err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if n := missing.Load(); n > 0 {
		t.Fatalf("the reader found no store at the path %d times (of %d looks) while ToZarr replaced it", n, looks.Load())
	}
	if vals, err := OpenZarr(path).ToSlice(); err != nil || len(vals) != 64 || vals[63] != 63 {
		t.Fatalf("the store reads back %d values, %v", len(vals), err)
	}
}

// TestLoadNpzRefusesDataTheMemberCannotHold: a compressed member whose header claims 16 GiB
// in an archive of a few hundred bytes is an error before anything is allocated (it was
// allocated at the header's size, then found truncated).
func TestLoadNpzRefusesDataTheMemberCannotHold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lie.npz")
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, err := z.CreateHeader(&zip.FileHeader{Name: "a.npy", Method: zip.Deflate})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(npy.AppendHeader(nil, npy.Header{Type: elem.MustParse("<f8"), Shape: []int{1 << 31}}))
	w.Write(make([]byte, 64))
	z.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	x := LoadNpz(path, "a")
	runtime.ReadMemStats(&b)
	if x.Err() == nil {
		t.Fatal("a member of 64 data bytes loaded as 16 GiB")
	}
	t.Log(x.Err())
	if n := b.TotalAlloc - a.TotalAlloc; n > 64<<20 {
		t.Fatalf("allocated %d bytes before refusing", n)
	}
}
