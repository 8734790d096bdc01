package interp

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// capture redirects file descriptors 1 and 2 into pipes while a cell runs, so output from
// interpreted code, compiled packages, goroutines and child processes all reaches the cell.
type capture struct {
	savedOut, savedErr int
	wOut, wErr         *os.File
	wg                 sync.WaitGroup
	acks               chan struct{} // flush acknowledgements from both pumps
}

// bufPool keeps the pipe readers' buffers across cells: allocating them per cell costs more
// GC time than the rest of a trivial cell.
var bufPool = sync.Pool{New: func() any { return new([256 << 10]byte) }}

// streamFunc receives captured output in chunks, as large as the pipe delivers them.
type streamFunc func(name, text string)

func startCapture(emit streamFunc) (*capture, error) {
	c := &capture{savedOut: -1, savedErr: -1, acks: make(chan struct{}, 2)}
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
	return c, nil
}

func (c *capture) redirect(fd int, name string, w **os.File, emit streamFunc) error {
	r, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe for %s: %w", name, err)
	}
	enlargePipe(pw)
	if err := syscall.Dup3(int(pw.Fd()), fd, 0); err != nil {
		r.Close()
		pw.Close()
		return fmt.Errorf("redirect %s: %w", name, err)
	}
	*w = pw
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer r.Close()
		pumpStream(r, func(text string) { emit(name, text) }, c.acks)
	}()
	return nil
}

// flushMark is written into a pipe by flush; the pump acknowledges it once everything written
// before it has been emitted. Bytes this unlikely in real output never leave the pump.
var flushMark = []byte("\x00\x1bgpunotes-flush\x00")

// pumpStream reads r until EOF and emits what it read. While one emit is in flight, further
// reads accumulate and leave as one message: a loop printing 10,000 lines sends a few dozen
// stream messages, not 10,000, while a single print still leaves at once. Each flushMark in
// the stream is acknowledged on acks after everything before it was emitted.
func pumpStream(r io.Reader, emit func(string), acks chan<- struct{}) {
	var (
		mu      sync.Mutex
		pending []byte
		eof     bool
		wake    = make(chan struct{}, 1)
		done    = make(chan struct{})
	)
	// take removes the next piece of pending to emit: text up to a mark (then mark is true),
	// or all of it but a trailing partial mark (unless the stream ended).
	take := func() (text []byte, mark, fin bool) {
		mu.Lock()
		defer mu.Unlock()
		if i := bytes.Index(pending, flushMark); i >= 0 {
			text = append([]byte(nil), pending[:i]...)
			pending = append(pending[:0], pending[i+len(flushMark):]...)
			return text, true, false
		}
		n := len(pending)
		if !eof {
			n -= partialMark(pending)
		}
		text = append([]byte(nil), pending[:n]...)
		pending = append(pending[:0], pending[n:]...)
		return text, false, eof && len(pending) == 0
	}
	go func() {
		defer close(done)
		for range wake {
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
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	buf := bufPool.Get().(*[256 << 10]byte)
	defer bufPool.Put(buf)
	for {
		n, err := r.Read(buf[:])
		if n > 0 {
			mu.Lock()
			pending = append(pending, buf[:n]...)
			mu.Unlock()
			signal()
		}
		if err != nil {
			break
		}
	}
	mu.Lock()
	eof = true
	mu.Unlock()
	signal()
	close(wake)
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

// flush waits until everything written to fds 1 and 2 so far has been emitted, so that a
// display the cell shows next follows the text printed before it.
func (c *capture) flush() {
	for _, w := range []*os.File{c.wOut, c.wErr} {
		if w != nil {
			w.Write(flushMark)
		}
	}
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
	c.wg.Wait()
}
