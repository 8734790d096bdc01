package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// countingRW feeds in to the reader and records how much was read and written.
type countingRW struct {
	in   *bytes.Reader
	read int
	out  bytes.Buffer
}

func (c *countingRW) Read(p []byte) (int, error) {
	n, err := c.in.Read(p)
	c.read += n
	return n, err
}

func (c *countingRW) Write(p []byte) (int, error) { return c.out.Write(p) }

// FuzzSchedulerPreAuth: whatever a peer sends before it is authenticated, the listener reads
// at most the opener and one proof (73 bytes), never lets it in without the token, and never
// panics.
func FuzzSchedulerPreAuth(f *testing.F) {
	f.Add([]byte(authMagic + "w" + strings.Repeat("n", authNonce) + strings.Repeat("m", authMAC)))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add(append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, make([]byte, 100)...))
	f.Add([]byte(authMagic + "x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rw := &countingRW{in: bytes.NewReader(data)}
		_, err := authListen(rw, "secret-token")
		if err == nil {
			t.Fatalf("authenticated without the token from %q", data)
		}
		if rw.read > openerLen+authMAC {
			t.Fatalf("read %d bytes before authentication (limit %d)", rw.read, openerLen+authMAC)
		}
		if bytes.Contains(rw.out.Bytes(), []byte("secret-token")) {
			t.Fatal("the token left the listener")
		}
	})
}

// TestAuthRoundTrip: both sides agree with one token, and each detects the other's wrong one.
func TestAuthRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dialer, listener   string
		dialErr, listenErr error
	}{
		{"t1", "t1", nil, errBadToken},
		{"t1", "t2", ErrRefused, errBadToken},
	} {
		a, b := net.Pipe()
		errc := make(chan error, 1)
		go func() { _, err := authListener(b, tc.listener); errc <- err; b.Close() }()
		err := authDialer(a, tc.dialer, roleClient)
		a.Close()
		lerr := <-errc
		if tc.dialErr == nil && (err != nil || lerr != nil) {
			t.Fatalf("same token: dialer %v, listener %v", err, lerr)
		}
		if tc.dialErr != nil && (!errors.Is(err, tc.dialErr) || !errors.Is(lerr, tc.listenErr)) {
			t.Fatalf("different tokens: dialer %v, listener %v", err, lerr)
		}
	}
}

// TestWorkerRefusesImpostor: a worker reconnecting to whatever listens on its scheduler's port
// never sends its token, and refuses a listener that cannot prove it knows the token (before,
// it sent the token in clear and ran the tasks it got). dask.distributed has no token: with
// its default Security, a worker joins and runs what any process on the port sends.
func TestWorkerRefusesImpostor(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	token := "the-real-token-0123456789"
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		opener := make([]byte, openerLen)
		if _, err := io.ReadFull(c, opener); err != nil {
			got <- nil
			return
		}
		// Challenge, then (having read the worker's proof) a made-up proof of our own.
		nonce := make([]byte, authNonce)
		_, _ = rand.Read(nonce)
		_, _ = c.Write(append([]byte{authGo}, nonce...))
		proof := make([]byte, authMAC)
		_, _ = io.ReadFull(c, proof)
		fake := make([]byte, authMAC)
		_, _ = rand.Read(fake)
		_, _ = c.Write(append([]byte{authGo}, fake...))
		rest, _ := io.ReadAll(c)
		got <- append(append(opener, proof...), rest...)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = RunWorker(ctx, WorkerConfig{Scheduler: "tcp://" + ln.Addr().String(), Token: token, Name: "w"}, nil)
	if err == nil || !strings.Contains(err.Error(), "did not prove") {
		t.Fatalf("worker against an impostor: %v", err)
	}
	if errors.Is(err, ErrRefused) {
		t.Fatal("an impostor must not stop a reconnecting worker for good (the real scheduler may come back)")
	}
	sent := <-got
	if bytes.Contains(sent, []byte(token)) {
		t.Fatal("the worker sent its token in clear")
	}
	if len(sent) != openerLen+authMAC {
		t.Fatalf("the worker sent %d bytes, want the opener and its proof only (%d): it went on after a bad proof", len(sent), openerLen+authMAC)
	}
}

func rssKB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestSchedulerPreAuthBounded: unauthenticated peers that announce huge gob messages (the
// issue's three 300 MB hellos took a scheduler from 28 MB to 1.7 GB) are dropped after at
// most the 41-byte opener, and the scheduler's memory does not grow with what they send.
func TestSchedulerPreAuthBounded(t *testing.T) {
	s, err := newScheduler("127.0.0.1:0", "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.shutdown(false)
	runtime.GC()
	before := rssKB(t)
	// A gob message header claiming 300 MB, then 300 MB, on three connections at once.
	hdr := binary.AppendUvarint(nil, 300<<20)
	chunk := make([]byte, 1<<20)
	done := make(chan int, 3)
	for i := 0; i < 3; i++ {
		go func() {
			c, err := net.Dial("tcp", strings.TrimPrefix(s.address(), "tcp://"))
			if err != nil {
				done <- 0
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			sent := 0
			if _, err := c.Write(hdr); err == nil {
				for sent < 300<<20 {
					n, err := c.Write(chunk)
					sent += n
					if err != nil {
						break
					}
				}
			}
			done <- sent
		}()
	}
	for i := 0; i < 3; i++ {
		if sent := <-done; sent >= 300<<20 {
			t.Errorf("the scheduler took all %d bytes of an unauthenticated peer", sent)
		}
	}
	grew := rssKB(t) - before
	t.Logf("RSS %d KB before, grew by %d KB", before, grew)
	if grew > 64<<10 {
		t.Fatalf("RSS grew by %d KB for unauthenticated peers", grew)
	}
}
