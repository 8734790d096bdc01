package interp

import (
	"bytes"
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
type capture struct {
	savedOut, savedErr int
	wOut, wErr         *os.File
	wg                 sync.WaitGroup
	acks               chan struct{} // flush acknowledgements from both pumps
	stdout             *pump
	pumps              []*pump
	route              atomic.Pointer[streamFunc] // set while an Output widget captures (route.go)
}

// bufPool keeps the pipe readers' buffers across cells: allocating them per cell costs more
// GC time than the rest of a trivial cell.
var bufPool = sync.Pool{New: func() any { return new([256 << 10]byte) }}

// readPause is how long a pump waits after a read that returned output before reading again.
const readPause = 100 * time.Microsecond

// pipeSize is what the capture pipes are grown to (F_SETPIPE_SZ; 1 MiB is Linux's default limit
// for unprivileged processes), so that writes rarely wait for a pump while it pauses.
const pipeSize = 1 << 20

// streamFunc receives captured output in chunks, as large as the pipe delivers them.
type streamFunc func(name, text string)

func startCapture(emit streamFunc) (*capture, error) {
	c := &capture{savedOut: -1, savedErr: -1, acks: make(chan struct{}, 2)}
	emit = c.routed(emit)
	var err error
	if c.savedOut, err = syscall.Dup(1); err != nil {
		return nil, fmt.Errorf("dup stdout: %w", err)
	}
	if c.savedErr, err = syscall.Dup(2); err != nil {
		syscall.Close(c.savedOut)
		return nil, fmt.Errorf("dup stderr: %w", err)
	}
	if err := c.redirect(1, "stdout", &c.wOut, emit); err != nil {
		c.stop()
		return nil, err
	}
	if err := c.redirect(2, "stderr", &c.wErr, emit); err != nil {
		c.stop()
		return nil, err
	}
	capturedStdout.Store(os.Stdout)
	stdoutPump.Store(c.stdout)
	return c, nil
}

func (c *capture) redirect(fd int, name string, w **os.File, emit streamFunc) error {
	r, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe for %s: %w", name, err)
	}
	// Best effort: a smaller pipe only means that a busy loop waits for the pump sooner.
	syscall.Syscall(syscall.SYS_FCNTL, pw.Fd(), syscall.F_SETPIPE_SZ, pipeSize)
	if err := syscall.Dup3(int(pw.Fd()), fd, 0); err != nil {
		r.Close()
		pw.Close()
		return fmt.Errorf("redirect %s: %w", name, err)
	}
	*w = pw
	p := &pump{wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1)}
	rc, err := r.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) { p.rfd = fd })
	}
	if err != nil {
		r.Close()
		return fmt.Errorf("pipe for %s: %w", name, err)
	}
	if fd == 1 {
		c.stdout = p
	}
	c.pumps = append(c.pumps, p)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer r.Close()
		p.run(r, func(text string) { emit(name, text) }, c.acks)
	}()
	return nil
}

// flushMark is written into a pipe by flush; the pump acknowledges it once everything written
// before it has been emitted. Bytes this unlikely in real output never leave the pump.
var flushMark = []byte("\x00\x1bgpunotes-flush\x00")

// pump is the reading end of one captured stream. Interpreted code's prints can skip the pipe
// (direct) when that cannot reorder them: see direct.
type pump struct {
	mu      sync.Mutex
	pending []byte
	eof     bool
	inRead  bool    // a read is under way: what it returns is not in pending yet
	rfd     uintptr // the pipe's read end, for FIONREAD
	wake    chan struct{}
	hurry   chan struct{} // ends a pause at once: a flush or the cell's end waits for the pump
}

// rush ends the pump's pause, if it is in one.
func (p *pump) rush() {
	select {
	case p.hurry <- struct{}{}:
	default:
	}
}

func (p *pump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// direct appends b to the stream without the pipe, and reports whether it did. It does only
// when everything written into the pipe before has been read and is in pending: no read is
// under way and the pipe is empty. Otherwise the caller writes b into the pipe, behind what
// is there. Output from anything but interpreted prints (compiled code writing to fd 1, child
// processes) always goes through the pipe, so its order with the prints is kept.
func (p *pump) direct(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eof || p.inRead {
		return false
	}
	var n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, p.rfd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 || n != 0 {
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

// pumpStream reads r until EOF and emits what it read. While one emit is in flight, further
// reads accumulate and leave as one message: a loop printing 10,000 lines sends a few dozen
// stream messages, not 10,000, while a single print still leaves at once. Each flushMark in
// the stream is acknowledged on acks after everything before it was emitted. After a read that
// returned output it waits readPause before reading again, so a busy loop's prints find no read
// under way and go through direct.
func (p *pump) run(r io.Reader, emit func(string), acks chan<- struct{}) {
	done := make(chan struct{})
	// take removes the next piece of pending to emit: text up to a mark (then mark is true),
	// or all of it but a trailing partial mark (unless the stream ended).
	take := func() (text []byte, mark, fin bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if i := bytes.Index(p.pending, flushMark); i >= 0 {
			text = append([]byte(nil), p.pending[:i]...)
			p.pending = append(p.pending[:0], p.pending[i+len(flushMark):]...)
			return text, true, false
		}
		n := len(p.pending)
		if !p.eof {
			n -= partialMark(p.pending)
		}
		text = append([]byte(nil), p.pending[:n]...)
		p.pending = append(p.pending[:0], p.pending[n:]...)
		return text, false, p.eof && len(p.pending) == 0
	}
	go func() {
		defer close(done)
		for range p.wake {
			for {
				text, mark, fin := take()
				if len(text) > 0 {
					emit(string(text))
				}
				if mark {
					select {
					case acks <- struct{}{}:
					default:
					}
					continue
				}
				if fin {
					return
				}
				if len(text) == 0 {
					break
				}
				// A busy stream: let a little more gather before the next message.
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
	buf := bufPool.Get().(*[256 << 10]byte)
	defer bufPool.Put(buf)
	pause := time.NewTimer(readPause)
	defer pause.Stop()
	for {
		p.mu.Lock()
		p.inRead = true
		p.mu.Unlock()
		n, err := r.Read(buf[:])
		p.mu.Lock()
		p.pending = append(p.pending, buf[:n]...)
		p.inRead = false
		if err != nil {
			p.eof = true
		}
		p.mu.Unlock()
		if n > 0 || err != nil {
			p.signal()
		}
		if err != nil {
			break
		}
		if n > 0 {
			pause.Reset(readPause)
			select {
			case <-pause.C:
			case <-p.hurry:
			}
		}
	}
	close(p.wake)
	<-done
}

// partialMark is the length of the longest suffix of p that begins flushMark.
func partialMark(p []byte) int {
	for n := min(len(flushMark)-1, len(p)); n > 0; n-- {
		if bytes.HasPrefix(flushMark, p[len(p)-n:]) {
			return n
		}
	}
	return 0
}

// rush ends the pumps' pauses, so that what flush or stop wrote is read now.
func (c *capture) rush() {
	for _, p := range c.pumps {
		p.rush()
	}
}

// flush waits until everything written to fds 1 and 2 so far has been emitted, so that a
// display the cell shows next follows the text printed before it.
func (c *capture) flush() {
	for _, w := range []*os.File{c.wOut, c.wErr} {
		if w != nil {
			w.Write(flushMark)
		}
	}
	c.rush()
	timeout := time.After(time.Second)
	for i := 0; i < 2; i++ {
		select {
		case <-c.acks:
		case <-timeout:
			return
		}
	}
}

// stop restores fds 1 and 2 and waits until everything written before it has been emitted.
// Writers still holding the pipe (a goroutine the cell left running) write to the real fds
// from then on.
func (c *capture) stop() {
	stdoutPump.CompareAndSwap(c.stdout, nil)
	if c.savedOut >= 0 {
		syscall.Dup3(c.savedOut, 1, 0)
		syscall.Close(c.savedOut)
	}
	if c.savedErr >= 0 {
		syscall.Dup3(c.savedErr, 2, 0)
		syscall.Close(c.savedErr)
	}
	if c.wOut != nil {
		c.wOut.Close()
	}
	if c.wErr != nil {
		c.wErr.Close()
	}
	c.rush()
	c.wg.Wait()
}
