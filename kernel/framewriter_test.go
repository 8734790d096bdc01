package kernel

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"net"
	"testing"
)

// recordingConn records each Write it is given.
type recordingConn struct {
	net.Conn
	writes [][]byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, append([]byte(nil), p...))
	return len(p), nil
}

// zmtpFrames encodes frames as zmq4 writes them: each frame's header, then its body.
func zmtpFrames(frames [][]byte, command bool) [][]byte {
	var out [][]byte
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags |= flagMore
		}
		if command {
			flags |= flagCommand
		}
		var hdr []byte
		if len(f) > 255 {
			hdr = make([]byte, 9)
			hdr[0] = flags | flagLong
			binary.BigEndian.PutUint64(hdr[1:], uint64(len(f)))
		} else {
			hdr = []byte{flags, byte(len(f))}
		}
		out = append(out, hdr)
		if len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// TestFrameWriterOneWritePerMessage: a Jupyter-shaped message (identity, delimiter, signature,
// four JSON parts, one of them long) leaves in one write, byte for byte, whatever way the
// frames are split into writes; a large frame goes out without being held.
func TestFrameWriterOneWritePerMessage(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	msg := [][]byte{[]byte("kernel.status"), []byte("<IDS|MSG>"), bytes.Repeat([]byte("a"), 64),
		[]byte(`{"msg_type":"status"}`), []byte(`{}`), []byte(`{}`), bytes.Repeat([]byte("c"), 300), {}}
	ready := zmtpFrames([][]byte{[]byte("\x05READY\x0bSocket-Type\x00\x00\x00\x03PUB")}, true)
	for trial := 0; trial < 200; trial++ {
		rec := &recordingConn{}
		w := &frameWriter{Conn: rec}
		var want [][]byte
		for _, m := range [][][]byte{ready, zmtpFrames(msg, false), zmtpFrames(msg[:3], false)} {
			whole := bytes.Join(m, nil)
			want = append(want, whole)
			writes := m
			if trial > 0 { // split at random points, one byte pieces included
				writes = nil
				for rest := whole; len(rest) > 0; {
					n := 1 + rng.Intn(len(rest))
					writes = append(writes, rest[:n])
					rest = rest[n:]
				}
			}
			for _, p := range writes {
				if n, err := w.Write(p); n != len(p) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
		}
		if len(rec.writes) != len(want) {
			t.Fatalf("trial %d: %d writes for %d messages", trial, len(rec.writes), len(want))
		}
		for i := range want {
			if !bytes.Equal(rec.writes[i], want[i]) {
				t.Fatalf("trial %d: message %d went out as %q, want %q", trial, i, rec.writes[i], want[i])
			}
		}
	}

	rec := &recordingConn{}
	w := &frameWriter{Conn: rec}
	big := make([]byte, 2*maxGather)
	for _, p := range zmtpFrames([][]byte{[]byte("id"), big}, false) {
		w.Write(p)
	}
	if len(rec.writes) != 2 || len(rec.writes[1]) != len(big) {
		t.Fatalf("a %d-byte frame went out in writes of %d bytes", len(big), lens(rec.writes))
	}
}

func lens(ws [][]byte) []int {
	var out []int
	for _, w := range ws {
		out = append(out, len(w))
	}
	return out
}

// TestFrameWriterReadAhead: reads of any sizes return the peer's bytes in order and whole,
// including reads larger than the read-ahead buffer.
func TestFrameWriterReadAhead(t *testing.T) {
	a, b := net.Pipe()
	data := make([]byte, 3*readAhead+123)
	rand.New(rand.NewSource(2)).Read(data)
	go func() {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1000)
			a.Write(rest[:n])
			rest = rest[n:]
		}
		a.Close()
	}()
	r := &frameWriter{Conn: b}
	rng := rand.New(rand.NewSource(3))
	var got []byte
	for {
		p := make([]byte, []int{1, 2, 9, 300, 2 * readAhead}[rng.Intn(5)])
		n, err := r.Read(p)
		got = append(got, p[:n]...)
		if err != nil {
			break
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want the %d written, in order", len(got), len(data))
	}
}
