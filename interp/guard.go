package interp

import (
	"errors"
	"os"
)

// currentStdout writes to whatever os.Stdout is now. The interpreter gets it instead of the
// *os.File itself, so that cells see the real os.Stdout variable, and a file that a cell closed
// can be replaced for the next cells (reopenStdio).
type currentStdout struct{}

// Write hands the running cell's stdout pump p directly when that keeps the order of the
// output (pump.direct), saving the write syscall of each print; else it writes to os.Stdout.
func (currentStdout) Write(p []byte) (int, error) {
	if pp := stdoutPump.Load(); pp != nil && os.Stdout == capturedStdout.Load() && pp.direct(p) {
		return len(p), nil
	}
	return os.Stdout.Write(p)
}

// reopenStdio gives os.Stdout and os.Stderr new files on fds 1 and 2 when a cell closed them
// (os.Stdout.Close() would otherwise silence every later print of the session). It returns
// a note for the cell that closed them, or "".
func reopenStdio() string {
	note := ""
	for _, f := range []struct {
		file **os.File
		fd   uintptr
		name string
	}{{&os.Stdout, 1, "os.Stdout"}, {&os.Stderr, 2, "os.Stderr"}} {
		if _, err := (*f.file).Stat(); errors.Is(err, os.ErrClosed) {
			*f.file = os.NewFile(f.fd, "/dev/"+f.name[3:])
			note += "gpunotes: the cell closed " + f.name + "; it was reopened for the next cells\n"
		}
	}
	return note
}
