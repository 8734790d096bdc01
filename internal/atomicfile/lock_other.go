//go:build !unix

package atomicfile

import "os"

// lockAndCheck takes no lock where flock is missing: a sweep then removes nothing.
func lockAndCheck(fh *os.File) (bool, error) { return true, nil }

// tryLock reports every temporary output held: without locks, a live writer's cannot be told
// from a dead one's, so none is removed.
func tryLock(p string, fn func()) (held bool, err error) { return true, nil }
