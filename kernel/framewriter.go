package kernel

import (
	"encoding/binary"
	"net"
)

// maxGather bounds what frameWriter holds back: larger writes go out as they come.
const maxGather = 256 << 10

// frameWriter writes each outgoing ZMTP message with one write call. zmq4 writes a frame's
// header and its body apart, so a Jupyter message of seven frames cost fourteen syscalls (and as
// many TCP segments for the client to take in); on a trivial cell's five messages that was the
// largest share of the kernel's own time. It follows the frames of what it is given and sends
// what it holds once a message's last frame is complete (or past maxGather bytes).
//
// It also reads ahead: zmq4 reads a frame's header and body apart too, one syscall each.
type frameWriter struct {
	net.Conn
	rbuf   []byte // read ahead, not yet returned
	rspace []byte
	buf    []byte
	hdr    [9]byte
	hdrN   int   // header bytes seen of the current frame
	hdrLen int   // 2 or 9 once the flags byte is seen
	body   int64 // body bytes left in the current frame
	more   bool  // the current frame has the MORE flag
}

// Read returns what was read ahead, or reads up to 64 KiB more when none is left.
func (w *frameWriter) Read(p []byte) (int, error) {
	if len(w.rbuf) == 0 {
		if len(p) >= readAhead {
			return w.Conn.Read(p)
		}
		if w.rspace == nil {
			w.rspace = make([]byte, readAhead)
		}
		n, err := w.Conn.Read(w.rspace)
		w.rbuf = w.rspace[:n]
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, w.rbuf)
	w.rbuf = w.rbuf[n:]
	return n, nil
}

// readAhead is the read buffer of a connection.
const readAhead = 64 << 10

// Write holds p back unless it ends a message; then it writes all it holds at once.
func (w *frameWriter) Write(p []byte) (int, error) {
	end := w.scan(p)
	if len(w.buf)+len(p) > maxGather {
		if err := w.flush(); err != nil {
			return 0, err
		}
		if len(p) > maxGather {
			return w.Conn.Write(p)
		}
	}
	w.buf = append(w.buf, p...)
	if end {
		if err := w.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *frameWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.Conn.Write(w.buf)
	if cap(w.buf) > maxGather {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return err
}

// scan follows the frames in p and reports whether p ends exactly at the end of a message (a
// complete frame without the MORE flag, or a command).
func (w *frameWriter) scan(p []byte) bool {
	end := false
	for len(p) > 0 {
		end = false
		if w.body > 0 {
			n := min(int64(len(p)), w.body)
			w.body -= n
			p = p[n:]
			if w.body == 0 {
				end = !w.more
			}
			continue
		}
		if w.hdrN == 0 {
			flags := p[0]
			w.more = flags&flagMore != 0 && flags&flagCommand == 0
			w.hdrLen = 2
			if flags&flagLong != 0 {
				w.hdrLen = 9
			}
		}
		n := copy(w.hdr[w.hdrN:w.hdrLen], p)
		w.hdrN += n
		p = p[n:]
		if w.hdrN < w.hdrLen {
			continue
		}
		w.hdrN = 0
		if w.hdrLen == 9 {
			w.body = int64(binary.BigEndian.Uint64(w.hdr[1:9]) & (1<<63 - 1))
		} else {
			w.body = int64(w.hdr[1])
		}
		if w.body == 0 {
			end = !w.more
		}
	}
	return end
}
