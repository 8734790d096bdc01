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
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// A shuffle moves the pieces of partitions between workers over their data ports (role
// roleShuffle after the token exchange), never through the scheduler. A sender streams shards,
// each the rows of one input partition bound for one output partition, one column after the
// other, then an end mark; the receiver keeps every column piece in its store (counted in its
// memory limit from its first byte read, spilled to disk as results are; on a GPU worker in
// device memory, spilled to host memory first) and answers once for the stream:
//
//	shard:  u8 1 | u32 len, run | u32 output | u32 input | u32 ncols | ncols × (u8 dtype | u64 len, values)
//	end:    u8 0
//	answer: u8 status (0: stored) | u32 len, error
//
// Values are in this machine's byte order: shuffles run between workers of one cluster.

const (
	shardMark = 1
	endMark   = 0
	// maxShardCols bounds the columns of one shard.
	maxShardCols = 1 << 12
	// encShard marks a stored shard piece: Data is the dtype byte, zeros to shardPad bytes,
	// then the values, aligned as a kept chunk's are (read in place, never copied).
	encShard = 3
	// shardPad is the bytes before a stored shard piece's values.
	shardPad = chunkAlign
	// shardBuffer is the buffer of a shard stream's reader and writer: the pieces are read
	// into their own buffers, and values larger than it pass it by.
	shardBuffer = 64 << 10
)

// shard is one input partition's rows bound for one output partition: Cols[c] holds column
// c's piece in the layout the store keeps (encShard: the dtype byte, padding, the values).
type shard struct {
	Run        string
	Out, In    int
	Cols       [][]byte
	valueBytes int64
}

// writeShard writes one shard frame: a column is its dtype and values.
func writeShard(w io.Writer, run string, out, in int, cols []dtype.Slice) error {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriter(w)
		defer bw.Flush()
	}
	if err := bw.WriteByte(shardMark); err != nil {
		return err
	}
	if err := writeBytes32(bw, []byte(run)); err != nil {
		return err
	}
	var hdr [12]byte
	binary.BigEndian.PutUint32(hdr[0:], uint32(out))
	binary.BigEndian.PutUint32(hdr[4:], uint32(in))
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(cols)))
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	for _, c := range cols {
		var h [9]byte
		h[0] = byte(c.DType())
		binary.BigEndian.PutUint64(h[1:], uint64(len(c.Bytes())))
		if _, err := bw.Write(h[:]); err != nil {
			return err
		}
		if _, err := bw.Write(c.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// errEndOfShards is readShard's answer to the end mark.
var errEndOfShards = errors.New("end of shards")

// readShard reads one shard frame, refusing one whose values would pass limit bytes (the
// receiver's room) before it allocates them; it returns errEndOfShards at the end mark.
// Memory grows only as bytes arrive, so a length that lies costs nothing, and rc counts
// every buffer before it is allocated (rc nil: nothing counts them).
func readShard(r io.Reader, limit int64, rc *receive) (*shard, error) {
	var mark [1]byte
	if _, err := io.ReadFull(r, mark[:]); err != nil {
		return nil, fmt.Errorf("read shard mark: %w", err)
	}
	switch mark[0] {
	case endMark:
		return nil, errEndOfShards
	case shardMark:
	default:
		return nil, fmt.Errorf("bad shard mark %d", mark[0])
	}
	run, err := readBytes32(r)
	if err != nil {
		return nil, fmt.Errorf("read shard run: %w", err)
	}
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read shard header: %w", err)
	}
	s := &shard{Run: string(run), Out: int(binary.BigEndian.Uint32(hdr[0:])), In: int(binary.BigEndian.Uint32(hdr[4:]))}
	ncols := binary.BigEndian.Uint32(hdr[8:])
	if ncols > maxShardCols {
		return nil, fmt.Errorf("shard of %d columns", ncols)
	}
	for c := uint32(0); c < ncols; c++ {
		var h [9]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return nil, fmt.Errorf("read shard column %d: %w", c, err)
		}
		dt := dtype.DType(h[0])
		if !dt.Valid() || dt.Size() == 0 {
			return nil, fmt.Errorf("shard column %d: bad dtype %d", c, h[0])
		}
		n := binary.BigEndian.Uint64(h[1:])
		if n%uint64(dt.Size()) != 0 {
			return nil, fmt.Errorf("shard column %d: %d bytes are not whole %v values", c, n, dt)
		}
		if n > uint64(limit-s.valueBytes) || s.valueBytes > limit {
			return nil, fmt.Errorf("shard column %d: %d bytes exceed the %d bytes allowed", c, n, limit)
		}
		b, err := readGrowing(r, int(n), shardPad, rc)
		if err != nil {
			return nil, fmt.Errorf("read shard column %d: %w", c, err)
		}
		b[0] = byte(dt)
		s.Cols = append(s.Cols, b)
		s.valueBytes += int64(n)
	}
	return s, nil
}

// readGrowing reads n bytes after pre spare leading bytes, growing the buffer as they come;
// rc counts each growth of the buffer before it is allocated.
func readGrowing(r io.Reader, n, pre int, rc *receive) ([]byte, error) {
	const step = 1 << 20
	rc.grow(uint64(pre + min(n, step)))
	b := make([]byte, pre, pre+min(n, step))
	for len(b) < pre+n {
		k := min(pre+n-len(b), step)
		if cap(b)-len(b) < k {
			c := min(pre+n, 2*cap(b)+k)
			rc.grow(uint64(c - cap(b)))
			nb := make([]byte, len(b), c)
			copy(nb, b)
			b = nb
		}
		m, err := io.ReadFull(r, b[len(b):len(b)+k])
		b = b[:len(b)+m]
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// shardPiece decodes a stored shard piece (encShard) into its values, in place in b's Data
// (copied only when they are not aligned for their dtype).
func shardPiece(b *blob) (dtype.Slice, error) {
	if b == nil || b.Enc != encShard || len(b.Data) < shardPad {
		return dtype.Slice{}, errors.New("not a shuffle piece")
	}
	dt := dtype.DType(b.Data[0])
	if !dt.Valid() {
		return dtype.Slice{}, fmt.Errorf("shuffle piece of dtype %d", b.Data[0])
	}
	if v, ok := viewBytes(dt, b.Data[shardPad:]); ok {
		return v, nil
	}
	return dtype.FromBytes(dt, b.Data[shardPad:])
}

// shardSink receives shards: the worker's store, in tests a map.
type shardSink interface {
	// beginReceive starts counting the buffers of a shard about to be read (nil: not counted).
	beginReceive() *receive
	// putShard keeps s, whose buffers rc counted, and ends rc.
	putShard(s *shard, rc *receive) error
	shardRoom() int64
}

// serveShards stores the shards a peer streams, then answers for them all. The buffers of a
// shard count towards the worker's memory from its first byte (beginReceive), not only once
// stored.
func serveShards(c io.ReadWriter, sink shardSink) error {
	r := bufio.NewReaderSize(c, shardBuffer)
	var failed error
	for {
		rc := sink.beginReceive()
		s, err := readShard(r, sink.shardRoom(), rc)
		if errors.Is(err, errEndOfShards) {
			rc.end()
			break
		}
		if err != nil {
			rc.end()
			return err // the stream is broken: the sender sees the connection drop
		}
		if failed == nil {
			failed = sink.putShard(s, rc)
		} else {
			rc.end()
		}
	}
	bw := bufio.NewWriter(c)
	status := byte(0)
	var msg []byte
	if failed != nil {
		status, msg = 1, []byte(failed.Error())
		if len(msg) > maxDataKey {
			msg = msg[:maxDataKey]
		}
	}
	_ = bw.WriteByte(status)
	_ = writeBytes32(bw, msg)
	return bw.Flush()
}

// shardBatch is what one input partition sends one peer: output partitions and their columns.
type shardBatch struct {
	out  []int
	cols [][]dtype.Slice
}

// pushShards streams a batch of shards to the peer at addr and waits for its answer.
func pushShards(ctx context.Context, addr, token string, tlsCfg *tls.Config, run string, in int, b shardBatch) error {
	d := net.Dialer{Timeout: 5 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to peer %s: %w", addr, err)
	}
	defer raw.Close()
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer stop()
	if tlsCfg != nil {
		if raw, err = tlsHandshake(raw, tlsCfg, addr, 10*time.Second); err != nil {
			return fmt.Errorf("connect to peer %s: %w", addr, err)
		}
		defer raw.Close()
	}
	c := deadlineConn{raw}
	if err := authDial(c, token, roleShuffle); err != nil {
		return fmt.Errorf("shuffle to peer %s: %w", addr, err)
	}
	bw := bufio.NewWriterSize(c, shardBuffer)
	for j, p := range b.out {
		if err := writeShard(bw, run, p, in, b.cols[j]); err != nil {
			return fmt.Errorf("shuffle to peer %s: %w", addr, err)
		}
	}
	if err := bw.WriteByte(endMark); err != nil {
		return fmt.Errorf("shuffle to peer %s: %w", addr, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("shuffle to peer %s: %w", addr, err)
	}
	r := bufio.NewReader(c)
	status, err := r.ReadByte()
	if err != nil {
		return fmt.Errorf("shuffle to peer %s: no answer: %w", addr, err)
	}
	msg, err := readBytes32(r)
	if err != nil {
		return fmt.Errorf("shuffle to peer %s: %w", addr, err)
	}
	if status != 0 {
		return fmt.Errorf("shuffle to peer %s: %s", addr, msg)
	}
	return nil
}
