package kernel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"

	"github.com/gpunotes/gpunotes/kernel/prebind"
)

// Defaults of the guarded transport (Options.MaxMessage, Options.HandshakeTimeout).
const (
	DefaultMaxMessage       = 256 << 20
	DefaultHandshakeTimeout = 10 * time.Second
)

// ZMTP 3 framing (rfc.zeromq.org/spec/23): a 64-byte greeting, then frames of a flags byte
// (bit 0 more, bit 1 long size, bit 2 command), a 1- or 8-byte big-endian size, and the body.
const (
	greetingLen = 64
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
	// maxPendingHandshakes bounds the connections being greeted at once.
	maxPendingHandshakes = 64
)

// nullGreeting is the greeting a NULL-mechanism ZMTP 3.0 peer sends.
func nullGreeting() []byte {
	g := make([]byte, greetingLen)
	g[0], g[9] = 0xff, 0x7f
	g[10], g[11] = 3, 0
	copy(g[12:32], "NULL")
	return g
}

var transportSeq atomic.Int64

// guardedTransport is a zmq4 transport whose listeners hand zmq4 only connections that
// completed the ZMTP greeting and READY within a deadline (each handshake on its own goroutine,
// so an idle client never blocks the accept loop), and whose connections drop a peer that
// declares a frame or message above the limit before zmq4 allocates it. zmq4 v0.17.0 has
// neither bound: it allocates the size a frame header claims, and greets in its accept loop.
type guardedTransport struct {
	base     transport.Transport
	network  string // "tcp" or "unix"
	maxMsg   int64
	deadline time.Duration
	log      *log.Logger
	mu       sync.Mutex
	names    map[string]string   // listen address -> channel name, for logs
	peers    map[string][]string // listen address -> socket types that may connect
}

// registerGuarded registers a new guarded transport with zmq4 and returns its scheme.
func registerGuarded(zmqTransport string, maxMsg int64, deadline time.Duration, lg *log.Logger) (string, *guardedTransport, error) {
	network := "tcp"
	if zmqTransport == "ipc" {
		network = "unix"
	} else if zmqTransport != "tcp" {
		return "", nil, fmt.Errorf("transport %q not supported (want tcp or ipc)", zmqTransport)
	}
	t := &guardedTransport{base: transport.New(network), network: network, maxMsg: maxMsg, deadline: deadline,
		log: lg, names: map[string]string{}, peers: map[string][]string{}}
	name := fmt.Sprintf("gpunotes-%s-%d", zmqTransport, transportSeq.Add(1))
	if err := zmq4.RegisterTransport(name, t); err != nil {
		return "", nil, fmt.Errorf("register guarded transport: %w", err)
	}
	return name, t, nil
}

// name sets the channel name logged for addr and the peer socket types it accepts (ZMTP's
// compatible pairs); zmq4 keeps an incompatible connection open after refusing it.
func (t *guardedTransport) name(addr, channel string, peers ...string) {
	t.mu.Lock()
	t.names[addr] = channel
	t.peers[addr] = peers
	t.mu.Unlock()
}

// Dial is the plain dialer: the kernel only listens.
func (t *guardedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	return t.base.Dial(ctx, d, addr)
}

// Addr normalizes an endpoint address as the plain transport does.
func (t *guardedTransport) Addr(ep string) (string, error) { return t.base.Addr(ep) }

// Listen listens on addr and starts greeting the connections it accepts.
func (t *guardedTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var l net.Listener
	if t.network == "tcp" {
		if f := prebind.Take(addr); f != nil {
			l, _ = net.FileListener(f)
			f.Close()
		}
	}
	if l == nil {
		var err error
		if l, err = net.Listen(t.network, addr); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	ch, peers := t.names[addr], t.peers[addr]
	t.mu.Unlock()
	if ch == "" {
		ch = addr
	}
	gl := &guardedListener{Listener: l, t: t, channel: ch, peers: peers, ready: make(chan net.Conn), done: make(chan struct{})}
	if t.network == "unix" {
		gl.unixPath = addr
	}
	go gl.acceptLoop()
	return gl, nil
}

type guardedListener struct {
	net.Listener
	t         *guardedTransport
	channel   string
	peers     []string
	unixPath  string
	ready     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	pending   atomic.Int32
}

func (l *guardedListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.t.log.Printf("%s: accept: %v", l.channel, err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if l.pending.Add(1) > maxPendingHandshakes {
			l.pending.Add(-1)
			l.t.log.Printf("%s: refused a connection from %s: %d handshakes already pending", l.channel, c.RemoteAddr(), maxPendingHandshakes)
			c.Close()
			continue
		}
		go func() {
			defer l.pending.Add(-1)
			gc, err := l.t.handshake(c, l.peers)
			if err != nil {
				l.t.log.Printf("%s: dropped a connection from %s: %v", l.channel, c.RemoteAddr(), err)
				c.Close()
				return
			}
			gc.channel = l.channel
			select {
			case l.ready <- gc:
			case <-l.done:
				c.Close()
			}
		}()
	}
}

// Accept returns the next connection that completed its greeting.
func (l *guardedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; an ipc listener removes its socket file.
func (l *guardedListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.Listener.Close()
		if l.unixPath != "" {
			os.Remove(l.unixPath)
		}
	})
	return err
}

// handshake sends our greeting, then reads the peer's greeting and its first command (READY
// with the NULL mechanism) within the deadline. zmq4 later replays them from the returned
// connection, whose first greetingLen written bytes (zmq4's own greeting) are dropped.
func (t *guardedTransport) handshake(c net.Conn, peers []string) (*guardedConn, error) {
	if err := c.SetDeadline(time.Now().Add(t.deadline)); err != nil {
		return nil, fmt.Errorf("set handshake deadline: %w", err)
	}
	if _, err := c.Write(nullGreeting()); err != nil {
		return nil, fmt.Errorf("send greeting: %w", err)
	}
	var buf bytes.Buffer
	g := make([]byte, greetingLen)
	if err := readFull(c, g, t.deadline); err != nil {
		return nil, fmt.Errorf("greeting: %w", err)
	}
	if g[0] != 0xff || g[9]&0x01 != 0x01 {
		return nil, errors.New("greeting: not a ZMTP signature")
	}
	if g[10] < 3 {
		return nil, fmt.Errorf("greeting: ZMTP %d.%d, want 3.0 or later", g[10], g[11])
	}
	if mech := string(bytes.TrimRight(g[12:32], "\x00")); mech != "NULL" {
		return nil, fmt.Errorf("greeting: security mechanism %q, want NULL", mech)
	}
	buf.Write(g)
	hdr := make([]byte, 2)
	if err := readFull(c, hdr, t.deadline); err != nil {
		return nil, fmt.Errorf("READY: %w", err)
	}
	// A short frame: READY (the socket type and an identity of at most 255 bytes) is read
	// whole before zmq4 sees the connection, so it is bounded to 255 bytes.
	if hdr[0]&flagCommand == 0 || hdr[0]&flagLong != 0 {
		return nil, fmt.Errorf("READY: want a short command frame, got flags %#x", hdr[0])
	}
	size := int(hdr[1])
	buf.Write(hdr)
	body := make([]byte, size)
	if err := readFull(c, body, t.deadline); err != nil {
		return nil, fmt.Errorf("READY: %w", err)
	}
	if size < 6 || string(body[1:6]) != "READY" || body[0] != 5 {
		return nil, errors.New("READY: first command is not READY")
	}
	if len(peers) > 0 {
		typ, err := readyProperty(body[6:], "Socket-Type")
		if err != nil {
			return nil, fmt.Errorf("READY: %w", err)
		}
		if !slices.Contains(peers, typ) {
			return nil, fmt.Errorf("READY: a %q socket cannot connect here (want one of %v)", typ, peers)
		}
	}
	buf.Write(body)
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear handshake deadline: %w", err)
	}
	return &guardedConn{Conn: &frameWriter{Conn: c}, replay: buf.Bytes(), swallow: greetingLen, max: t.maxMsg, log: t.log}, nil
}

// readyProperty finds a property of READY metadata: name length (1 byte), name, value length
// (4 bytes), value.
func readyProperty(meta []byte, name string) (string, error) {
	for len(meta) > 0 {
		n := int(meta[0])
		if len(meta) < 1+n+4 {
			return "", errors.New("truncated metadata")
		}
		key := string(meta[1 : 1+n])
		vn := binary.BigEndian.Uint32(meta[1+n:])
		meta = meta[1+n+4:]
		if uint64(vn) > uint64(len(meta)) {
			return "", errors.New("truncated metadata")
		}
		if strings.EqualFold(key, name) {
			return string(meta[:vn]), nil
		}
		meta = meta[vn:]
	}
	return "", fmt.Errorf("no %s property", name)
}

func readFull(c net.Conn, p []byte, deadline time.Duration) error {
	if _, err := io.ReadFull(c, p); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("nothing within %v", deadline)
		}
		return err
	}
	return nil
}

// errTooLarge is returned to zmq4 when a peer declares a frame or message above the limit.
var errTooLarge = errors.New("frame or message above the size limit")

// guardedConn replays the handshake bytes read by the listener, drops zmq4's greeting (the
// listener sent it already), and checks every frame header before zmq4 reads it.
type guardedConn struct {
	net.Conn
	channel string
	replay  []byte
	swallow int
	max     int64
	log     *log.Logger

	wmu sync.Mutex
	// frame parser state (reads happen on one goroutine)
	hdr     [9]byte
	hdrN    int   // header bytes seen of the current frame
	hdrLen  int   // header length once the flags byte is known (2 or 9)
	body    int64 // body bytes left in the current frame
	msgSize int64 // bytes of the current multipart message so far
	failed  error
}

func (c *guardedConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.swallow > 0 {
		n := min(c.swallow, len(p))
		c.swallow -= n
		if n == len(p) {
			return n, nil
		}
		m, err := c.Conn.Write(p[n:])
		return n + m, err
	}
	return c.Conn.Write(p)
}

func (c *guardedConn) Read(p []byte) (int, error) {
	if c.failed != nil {
		return 0, c.failed
	}
	if len(c.replay) > 0 {
		n := copy(p, c.replay)
		c.replay = c.replay[n:]
		return n, nil
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if ferr := c.scan(p[:n]); ferr != nil {
			c.failed = ferr
			c.log.Printf("%s: dropped the connection from %s: %v", c.channel, c.RemoteAddr(), ferr)
			c.Conn.Close()
			return 0, ferr
		}
	}
	return n, err
}

// scan follows the frame boundaries through b and fails on a header declaring too much.
func (c *guardedConn) scan(b []byte) error {
	for len(b) > 0 {
		if c.body > 0 {
			k := min(c.body, int64(len(b)))
			c.body -= k
			b = b[k:]
			continue
		}
		// in a header
		c.hdr[c.hdrN] = b[0]
		c.hdrN++
		b = b[1:]
		if c.hdrN == 1 {
			c.hdrLen = 2
			if c.hdr[0]&flagLong != 0 {
				c.hdrLen = 9
			}
			continue
		}
		if c.hdrN < c.hdrLen {
			continue
		}
		var size uint64
		if c.hdrLen == 2 {
			size = uint64(c.hdr[1])
		} else {
			size = binary.BigEndian.Uint64(c.hdr[1:9])
		}
		flags := c.hdr[0]
		c.hdrN = 0
		if size > uint64(c.max) {
			return fmt.Errorf("a frame header declares %d bytes (limit %d): %w", size, c.max, errTooLarge)
		}
		if flags&flagCommand == 0 {
			c.msgSize += int64(size)
			if c.msgSize > c.max {
				return fmt.Errorf("a message of more than %d bytes (limit %d): %w", c.msgSize, c.max, errTooLarge)
			}
			if flags&flagMore == 0 {
				c.msgSize = 0
			}
		}
		c.body = int64(size)
	}
	return nil
}
