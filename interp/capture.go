package interp

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// capture redirects file descriptors 1 and 2 into pipes while a cell runs, so output from
// interpreted code, compiled packages, goroutines and child processes all reaches the cell.
// The pipes and their readers are made once per process (stdio) and kept: a cell only points
// fds 1 and 2 at them and back, and drains them itself when it ends. Making them per cell (two
// pipes, four dups, four goroutines, their netpoll registrations, and waiting for the readers
// to see EOF) was a third of a trivial cell's time in the interpreter.
type capture struct {
	stdout *pump
	pumps  []*pump
	route  atomic.Pointer[streamFunc] // set while an Output widget captures (route.go)
}

// readPause is how long a pump waits after a read that returned output before reading again.
const readPause = 100 * time.Microsecond

// pipeSize is what the capture pipes are grown to (F_SETPIPE_SZ; 1 MiB is Linux's default limit
// for unprivileged processes), so that writes rarely wait for a pump while it pauses.
const pipeSize = 1 << 20

// streamFunc receives captured output in chunks, as large as the pipe delivers them.
type streamFunc func(name, text string)

// stdio is the process's capture pipes, made at the first capture: fds 1 and 2 as they were
// then (restored after each capture), and a pump for each.
var stdio struct {
	once               sync.Once
	err                error
	savedOut, savedErr int
	out, err2          *pump
}

func initStdio() error {
	stdio.once.Do(func() {
		var err error
		if stdio.savedOut, err = syscall.Dup(1); err != nil {
			stdio.err = fmt.Errorf("dup stdout: %w", err)
			return
		}
		syscall.CloseOnExec(stdio.savedOut)
		if stdio.savedErr, err = syscall.Dup(2); err != nil {
			stdio.err = fmt.Errorf("dup stderr: %w", err)
			return
		}
		syscall.CloseOnExec(stdio.savedErr)
		if stdio.out, err = newPump("stdout"); err != nil {
			stdio.err = err
			return
		}
		if stdio.err2, err = newPump("stderr"); err != nil {
			stdio.err = err
		}
	})
	return stdio.err
}

func startCapture(emit streamFunc) (*capture, error) {
	if err := initStdio(); err != nil {
		return nil, err
	}
	c := &capture{stdout: stdio.out, pumps: []*pump{stdio.out, stdio.err2}}
	emit = c.routed(emit)
	for _, p := range c.pumps {
		p.emit.Store(&emit)
	}
	if err := syscall.Dup3(int(stdio.out.w.Fd()), 1, 0); err != nil {
		return nil, fmt.Errorf("redirect stdout: %w", err)
	}
	if err := syscall.Dup3(int(stdio.err2.w.Fd()), 2, 0); err != nil {
		syscall.Dup3(stdio.savedOut, 1, 0)
		return nil, fmt.Errorf("redirect stderr: %w", err)
	}
	capturedStdout.Store(os.Stdout)
	stdoutPump.Store(c.stdout)
	for _, p := range c.pumps {
		p.signal() // what reached the pipes between captures goes to this one
	}
	return c, nil
}

func newPump(name string) (*pump, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe for %s: %w", name, err)
	}
	// Best effort: a smaller pipe only means that a busy loop waits for the pump sooner.
	syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), syscall.F_SETPIPE_SZ, pipeSize)
	p := &pump{name: name, r: r, w: w, wake: make(chan struct{}, 1), buf: make([]byte, 256<<10)}
	if p.rc, err = r.SyscallConn(); err == nil {
		err = p.rc.Control(func(fd uintptr) { p.rfd = int(fd) })
	}
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("pipe for %s: %w", name, err)
	}
	go p.read()
	go p.emitLoop()
	return p, nil
}

// pump is the reading end of one captured stream. Interpreted code's prints can skip the pipe
// (direct) when that cannot reorder them: see direct. The pipe is read only under mu, so what
// was written into it is at every moment either still in it or in pending.
type pump struct {
	name    string
	r, w    *os.File // the pipe; w stays open, so the pipe never ends
	rc      syscall.RawConn
	rfd     int // r's descriptor (non-blocking), for FIONREAD and drain
	buf     []byte
	mu      sync.Mutex
	pending []byte
	// emitMu is held while text is taken from pending and emitted, so emits keep its order.
	emitMu sync.Mutex
	emit   atomic.Pointer[streamFunc] // the running capture's; nil between captures
	wake   chan struct{}
}

// readLocked reads what the pipe holds into pending, without waiting; p.mu is held.
func (p *pump) readLocked() (int, error) {
	total := 0
	for {
		n, err := syscall.Read(p.rfd, p.buf)
		if n > 0 {
			p.pending = append(p.pending, p.buf[:n]...)
			total += n
		}
		if err == syscall.EINTR {
			continue
		}
		if n == 0 && err == nil {
			return total, io.EOF // every write end closed: not while w is open
		}
		if err != nil || n < len(p.buf) {
			if err == syscall.EAGAIN {
				err = nil
			}
			return total, err
		}
	}
}

func (p *pump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// direct appends b to the stream without the pipe, and reports whether it did. It does only
// when everything written into the pipe before has been read and is in pending: the pipe is
// empty. Otherwise the caller writes b into the pipe, behind what is there. Output from
// anything but interpreted prints (compiled code writing to fd 1, child processes) always goes
// through the pipe, so its order with the prints is kept.
func (p *pump) direct(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(p.rfd), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 || n != 0 {
		return false
	}
	p.pending = append(p.pending, b...)
	p.signal()
	return true
}

// stdoutPump is the running cell's stdout pump, for currentStdout (nil between cells), and
// capturedStdout the os.Stdout of that cell's start: a cell that sets os.Stdout to another file
// gets its prints written there.
var (
	stdoutPump     atomic.Pointer[pump]
	capturedStdout atomic.Pointer[os.File]
)

// read waits for the pipe to be readable and reads it into pending. After a read that returned
// output it waits readPause before reading again, so a busy loop's prints find the pipe empty
// and go through direct.
func (p *pump) read() {
	pause := time.NewTimer(readPause)
	defer pause.Stop()
	for {
		got := 0
		err := p.rc.Read(func(uintptr) bool {
			p.mu.Lock()
			n, err := p.readLocked()
			p.mu.Unlock()
			got = n
			return n > 0 || err != nil
		})
		if got > 0 {
			p.signal()
		}
		if err != nil {
			return
		}
		pause.Reset(readPause)
		<-pause.C
	}
}

// emitLoop emits what pending holds when signalled. While one emit is in flight, further reads
// accumulate and leave as one message: a loop printing 10,000 lines sends a few dozen stream
// messages, not 10,000, while a single print still leaves at once.
func (p *pump) emitLoop() {
	for range p.wake {
		for p.emitPending(false, false) > 0 {
			// A busy stream: let a little more gather before the next message.
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// emitPending emits what pending holds (after reading what the pipe holds, with drain) to the
// running capture, and returns its length. Between captures it keeps it for the next one. With
// end, the capture ends there: nothing is emitted to it after emitPending returns.
func (p *pump) emitPending(drain, end bool) int {
	p.emitMu.Lock()
	defer p.emitMu.Unlock()
	f := p.emit.Load()
	if end {
		p.emit.Store(nil)
	}
	if f == nil {
		return 0
	}
	p.mu.Lock()
	if drain {
		p.readLocked()
	}
	text := string(p.pending)
	p.pending = p.pending[:0]
	p.mu.Unlock()
	if text != "" {
		(*f)(p.name, text)
	}
	return len(text)
}

// flush emits everything written to fds 1 and 2 so far, so that a display the cell shows next
// follows the text printed before it.
func (c *capture) flush() {
	for _, p := range c.pumps {
		p.emitPending(true, false)
	}
}

// stop restores fds 1 and 2 and emits everything written before it. Writers still holding the
// pipe (a child process the cell left running) reach the next capture.
func (c *capture) stop() {
	stdoutPump.CompareAndSwap(c.stdout, nil)
	syscall.Dup3(stdio.savedOut, 1, 0)
	syscall.Dup3(stdio.savedErr, 2, 0)
	for _, p := range c.pumps {
		p.emitPending(true, true)
	}
}
