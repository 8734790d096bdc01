package gpuarray

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange atomically swaps the names tmp and path (renameat2 with RENAME_EXCHANGE): a reader
// finds the old store or the new one at path at every moment, and a process killed at any
// point leaves a complete store there. It reports false when the file system cannot.
func exchange(tmp, path string) (bool, error) {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return false, nil
	}
	return err == nil, err
}
