//go:build unix

package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockAndCheck takes fh's exclusive lock, waiting for a sweep that holds it, and reports
// whether fh's name still leads to fh (a sweep removed it otherwise).
func lockAndCheck(fh *os.File) (bool, error) {
	if err := unix.Flock(int(fh.Fd()), unix.LOCK_EX); err != nil {
		return false, err
	}
	st, err := fh.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Lstat(fh.Name())
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(st, now), nil
}

// tryLock runs fn while it holds the lock of the file or directory p, if no one else holds
// it; held reports that someone did (a live writer).
func tryLock(p string, fn func()) (held bool, err error) {
	fh, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer fh.Close()
	if err := unix.Flock(int(fh.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return true, nil
		}
		return false, err
	}
	fn()
	return false, nil
}
