package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSweepKeepsLiveWriters: a sweep removes a temporary output no one holds (what a killed
// writer leaves) and keeps the one a live writer holds, whose commit then succeeds.
func TestSweepKeepsLiveWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	dead := filepath.Join(dir, ".out.csv.tmp-123")
	if err := os.WriteFile(dead, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	live, err := Create(path) // sweeps dead
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead writer's temporary file is still there: %v", err)
	}
	live.WriteString("whole")
	if n := Sweep(path); n != 0 {
		t.Fatalf("a sweep removed %d outputs while their writer was alive", n)
	}
	if err := live.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "whole" {
		t.Fatalf("read %q, %v", b, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left %d entries, want the output only", len(ents))
	}
}

// TestSweepRestoresRenamedAway: the fallback replace (no RENAME_EXCHANGE) killed between its
// two renames left the good output under ".old" and nothing at the path; a sweep puts it
// back. Killed after them, the ".old" is removed and the new output kept.
func TestSweepRestoresRenamedAway(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.zarr")
	tmp := filepath.Join(dir, ".x.zarr.tmp-9")
	for _, d := range []string{tmp, tmp + ".old"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(tmp+".old", "zarr.json"), []byte("good"), 0o644)
	os.WriteFile(filepath.Join(tmp, "zarr.json"), []byte("new, unfinished"), 0o644)
	if n := Sweep(path); n != 1 {
		t.Fatalf("swept %d, want the unfinished one", n)
	}
	if b, err := os.ReadFile(filepath.Join(path, "zarr.json")); err != nil || string(b) != "good" {
		t.Fatalf("the good store is not back at the path: %q, %v", b, err)
	}
	// Killed after both renames: the new store at the path, the old under ".old".
	if err := os.MkdirAll(tmp+".old", 0o755); err != nil {
		t.Fatal(err)
	}
	if n := Sweep(path); n != 1 {
		t.Fatalf("swept %d, want the old store", n)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "x.zarr" {
		t.Fatalf("left %v", ents)
	}
}

// TestDirCommitReplaces: a committed directory replaces the one at the path; an aborted one
// leaves it.
func TestDirCommitReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ds")
	for i, want := range []string{"one", "two"} {
		d, err := MkdirTemp(path)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d.Name, "part.0"), []byte(want), 0o644)
		if err := d.Commit(); err != nil {
			t.Fatal(i, err)
		}
		d.Abort() // after Commit: nothing
		if b, err := os.ReadFile(filepath.Join(path, "part.0")); err != nil || string(b) != want {
			t.Fatalf("read %q, %v; want %q", b, err, want)
		}
	}
	d, err := MkdirTemp(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Name, "part.0"), []byte("three"), 0o644)
	d.Abort()
	if b, _ := os.ReadFile(filepath.Join(path, "part.0")); string(b) != "two" {
		t.Fatalf("an aborted write changed the output: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left %d entries", len(ents))
	}
}
