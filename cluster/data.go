package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"time"
)

// Workers move task results between each other directly: every worker serves the results it
// holds on a data listener, and a task whose inputs are held elsewhere comes with their
// holders' data addresses (taskMsg.Who). The data protocol is a plain byte stream, so a large
// result is copied once into the socket and once out of it, with no gob framing:
//
//	request:  u32 len, token | u32 count | count × (u32 len, key)
//	response: per key: u8 enc | u32 len, error | u64 len, data

// maxDataKey bounds keys, tokens and error texts on the data protocol.
const maxDataKey = 1 << 16

// dataIOTimeout bounds each read or write of the data protocol (renewed as bytes move).
const dataIOTimeout = 20 * time.Second

func writeBytes32(w io.Writer, b []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

func readBytes32(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxDataKey {
		return nil, fmt.Errorf("field of %d bytes is too long", size)
	}
	b := make([]byte, size)
	_, err := io.ReadFull(r, b)
	return b, err
}

// deadlineConn renews the connection's deadline before every read and write, so that a
// transfer that keeps moving never times out and one that stalls does.
type deadlineConn struct{ net.Conn }

func (c deadlineConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(dataIOTimeout))
	return c.Conn.Read(p)
}

func (c deadlineConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(dataIOTimeout))
	return c.Conn.Write(p)
}

// serveData answers peers' requests for results until ln is closed.
func (w *worker) serveData(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if err := w.serveDataConn(deadlineConn{c}); err != nil {
				w.cfg.Logf("worker %s: data request from %s: %v", w.cfg.Name, c.RemoteAddr(), err)
			}
		}()
	}
}

func (w *worker) serveDataConn(c net.Conn) error {
	role, err := authListen(c, w.cfg.Token)
	if err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	switch role {
	case roleShuffle:
		return serveShards(c, w)
	case roleData:
	default:
		return fmt.Errorf("refused: role %q on the data port", role)
	}
	r := bufio.NewReaderSize(c, 64<<10)
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return fmt.Errorf("read key count: %w", err)
	}
	count := binary.BigEndian.Uint32(n[:])
	if count > maxDataKey {
		return fmt.Errorf("%d keys requested", count)
	}
	keys := make([]string, count)
	for i := range keys {
		k, err := readBytes32(r)
		if err != nil {
			return fmt.Errorf("read key: %w", err)
		}
		keys[i] = string(k)
	}
	bw := bufio.NewWriterSize(c, dataBuffer)
	for _, k := range keys {
		b, err := w.load(k)
		var enc byte
		var msg []byte
		var data []byte
		if err != nil {
			msg = []byte(err.Error())
		} else {
			enc, data = b.Enc, b.Data
		}
		if err := bw.WriteByte(enc); err != nil {
			return err
		}
		if err := writeBytes32(bw, msg); err != nil {
			return err
		}
		var size [8]byte
		binary.BigEndian.PutUint64(size[:], uint64(len(data)))
		if _, err := bw.Write(size[:]); err != nil {
			return err
		}
		if _, err := bw.Write(data); err != nil {
			return fmt.Errorf("send %s: %w", k, err)
		}
	}
	return bw.Flush()
}

// fetchFrom gets results from the peer serving them at addr.
// With tlsCfg (nil: plaintext) the connection is under TLS.
// dataBuffer is the buffer of a fetch's reader and its server's writer: a result's values,
// the most of what they move, are read into their own buffer and written from the result's,
// passing it by (1 MiB buffers came to a quarter of a shuffle worker's allocations).
const dataBuffer = 64 << 10

func fetchFrom(ctx context.Context, addr, token string, keys []string, tlsCfg *tls.Config) (map[string]*blob, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to peer %s: %w", addr, err)
	}
	defer raw.Close()
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer stop()
	if tlsCfg != nil {
		if raw, err = tlsHandshake(raw, tlsCfg, addr, 10*time.Second); err != nil {
			return nil, fmt.Errorf("connect to peer %s: %w", addr, err)
		}
		defer raw.Close()
	}
	c := deadlineConn{raw}
	if err := authDial(c, token, roleData); err != nil {
		return nil, fmt.Errorf("request from peer %s: %w", addr, err)
	}
	bw := bufio.NewWriter(c)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(keys)))
	_, _ = bw.Write(n[:])
	for _, k := range keys {
		_ = writeBytes32(bw, []byte(k))
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("request from peer %s: %w", addr, err)
	}
	r := bufio.NewReaderSize(c, dataBuffer)
	out := make(map[string]*blob, len(keys))
	for _, k := range keys {
		enc, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("fetch %s from peer %s: %w", k, addr, err)
		}
		msg, err := readBytes32(r)
		if err != nil {
			return nil, fmt.Errorf("fetch %s from peer %s: %w", k, addr, err)
		}
		var size [8]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return nil, fmt.Errorf("fetch %s from peer %s: %w", k, addr, err)
		}
		if len(msg) > 0 {
			return nil, fmt.Errorf("fetch %s from peer %s: %s", k, addr, msg)
		}
		data := make([]byte, binary.BigEndian.Uint64(size[:]))
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("fetch %s from peer %s: %w", k, addr, err)
		}
		out[k] = &blob{Enc: enc, Data: data}
	}
	return out, nil
}

// fetchInputs gets the inputs of t held by peers, one connection per peer at once, and adds
// them to t.Deps. It returns the bytes fetched, or the keys it could not get.
func (w *worker) fetchInputs(ctx context.Context, t *taskMsg) (int64, []string, error) {
	byPeer := map[string][]string{}
	for k, addr := range t.Who {
		if t.Deps[k] != nil {
			continue
		}
		if !w.store.has(k) {
			byPeer[addr] = append(byPeer[addr], k)
		}
	}
	if len(byPeer) == 0 {
		return 0, nil, nil
	}
	if t.Deps == nil {
		t.Deps = map[string]*blob{}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var total int64
	var missing []string
	var errs []error
	for addr, keys := range byPeer {
		sort.Strings(keys)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tlsCfg *tls.Config
			if w.sec != nil {
				tlsCfg = w.sec.fetch
			}
			got, err := fetchFrom(ctx, addr, w.cfg.Token, keys, tlsCfg)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				missing = append(missing, keys...)
				errs = append(errs, err)
				return
			}
			for k, b := range got {
				t.Deps[k] = b
				total += int64(len(b.Data))
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		sort.Strings(missing)
		return total, missing, errors.Join(errs...)
	}
	return total, nil, nil
}
