// Package atomicfile writes files and directories under a temporary name next to their final
// one and renames them into place when complete, so that a process killed mid-write (SIGKILL)
// leaves the final name as it was: the old good output, or nothing. The temporary names are
// ".BASE.tmp-*"; readers of a directory skip names starting with a dot. A writer holds an
// advisory lock (flock) on its temporary output while it writes, and every write first sweeps
// the temporary outputs of its path that no live process holds: what killed writers left.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// split is path's directory (never "") and base name.
func split(path string) (dir, base string) {
	dir, base = filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// tempPattern is the pattern of path's temporary outputs for os.CreateTemp and os.MkdirTemp.
func tempPattern(path string) (dir, pattern string) {
	dir, base := split(path)
	return dir, "." + base + ".tmp-*"
}

// IsTemp reports whether name (a base name) is a temporary output of this package.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// File is a temporary file being written for a final path.
type File struct {
	*os.File
	path string
	done bool
}

// Create sweeps path's stale temporary outputs and creates a new, locked temporary file next
// to path. Write to it, then Commit (or Abort on failure).
func Create(path string) (*File, error) {
	Sweep(path)
	dir, pattern := tempPattern(path)
	for range 8 {
		fh, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		// Another process's sweep may have removed it between its creation and the lock:
		// then the name no longer leads to this file, and a new one is made.
		if ok, err := lockAndCheck(fh); err != nil {
			fh.Close()
			os.Remove(fh.Name())
			return nil, err
		} else if !ok {
			fh.Close()
			continue
		}
		return &File{File: fh, path: path}, nil
	}
	return nil, fmt.Errorf("create a temporary file for %s: removed by other processes again and again", path)
}

// Commit makes the file readable (0644), puts it on the disk (so that a crash of the machine
// cannot leave an empty file in place of the old one) and renames it to the final path.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: committed or aborted already")
	}
	f.done = true
	name := f.Name()
	err := f.Chmod(0o644)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		// Renamed while the lock is held: a sweep never takes a file about to be renamed.
		err = os.Rename(name, f.path)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// Abort removes the temporary file; the final path is left as it was. It does nothing after
// Commit, so it may be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	os.Remove(f.Name())
}

// Dir is a temporary directory being filled for a final path.
type Dir struct {
	Name string // the temporary directory
	path string
	lock *os.File
	done bool
}

// MkdirTemp sweeps path's stale temporary outputs and makes a new, locked temporary directory
// next to path. Fill it, then Commit (or Abort on failure).
func MkdirTemp(path string) (*Dir, error) {
	Sweep(path)
	parent, pattern := tempPattern(path)
	for range 8 {
		name, err := os.MkdirTemp(parent, pattern)
		if err != nil {
			return nil, err
		}
		fh, err := os.Open(name)
		if err != nil {
			os.RemoveAll(name)
			return nil, err
		}
		if ok, err := lockAndCheck(fh); err != nil {
			fh.Close()
			os.RemoveAll(name)
			return nil, err
		} else if !ok {
			fh.Close()
			continue
		}
		return &Dir{Name: name, path: path, lock: fh}, nil
	}
	return nil, fmt.Errorf("make a temporary directory for %s: removed by other processes again and again", path)
}

// Commit puts the directory at the final path, replacing what was there (a directory, or a
// file). Where the system can swap the two names in one step (Linux's RENAME_EXCHANGE), a
// reader finds the old output or the new one at every moment, and a process killed at any
// point leaves a complete one there; elsewhere the old output is renamed away first, and a
// sweep puts it back if the process died before the new one was in place.
func (d *Dir) Commit() error {
	if d.done {
		return errors.New("atomicfile: committed or aborted already")
	}
	d.done = true
	defer d.lock.Close()
	if err := os.Chmod(d.Name, 0o755); err != nil {
		os.RemoveAll(d.Name)
		return err
	}
	if _, err := os.Lstat(d.path); err != nil {
		if err := os.Rename(d.Name, d.path); err != nil {
			os.RemoveAll(d.Name)
			return err
		}
		return nil
	}
	if ok, err := Exchange(d.Name, d.path); err != nil {
		os.RemoveAll(d.Name)
		return err
	} else if ok {
		os.RemoveAll(d.Name) // the old output, now
		return nil
	}
	old := d.Name + ".old"
	if err := os.Rename(d.path, old); err != nil {
		os.RemoveAll(d.Name)
		return err
	}
	if err := os.Rename(d.Name, d.path); err != nil {
		os.Rename(old, d.path)
		os.RemoveAll(d.Name)
		return err
	}
	os.RemoveAll(old)
	return nil
}

// Abort removes the temporary directory; the final path is left as it was. It does nothing
// after Commit, so it may be deferred.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	os.RemoveAll(d.Name)
	d.lock.Close()
}

// Sweep removes the temporary outputs of path that no live writer holds (a killed writer's),
// and puts back an old output that a killed fallback replace had renamed away. It reports how
// many it removed. Errors are ignored: a sweep is housekeeping, never a reason to fail a write.
func Sweep(path string) int {
	dir, base := split(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	prefix := "." + base + ".tmp-"
	names := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			names[e.Name()] = true
		}
	}
	n := 0
	for name := range names {
		if strings.HasSuffix(name, ".old") {
			continue // with its temporary output, below
		}
		p := filepath.Join(dir, name)
		// A live writer holds its lock: tryLock runs nothing then.
		_, _ = tryLock(p, func() {
			if old := p + ".old"; names[name+".old"] {
				// Killed between the two renames of the fallback replace: the old output is
				// the good one if nothing took its place.
				if _, err := os.Lstat(path); os.IsNotExist(err) {
					os.Rename(old, path)
				} else {
					os.RemoveAll(old)
				}
			}
			if os.RemoveAll(p) == nil {
				n++
			}
		})
	}
	// An ".old" whose temporary output is gone: the replace completed and was killed before it
	// removed the old output.
	for name := range names {
		base, ok := strings.CutSuffix(name, ".old")
		if !ok || names[base] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, base)); os.IsNotExist(err) {
			if _, err := os.Lstat(path); err == nil && os.RemoveAll(filepath.Join(dir, name)) == nil {
				n++
			}
		}
	}
	return n
}
