package cluster

import (
	"bufio"
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// storeSink keeps shards in a store, as a worker does.
type storeSink struct{ st *store }

func (s storeSink) beginReceive() *receive { return s.st.beginReceive() }
func (s storeSink) shardRoom() int64       { return 1 << 30 }
func (s storeSink) putShard(sh *shard, rc *receive) error {
	keys := make([]string, len(sh.Cols))
	bs := make([]*blob, len(sh.Cols))
	for c, b := range sh.Cols {
		keys[c], bs[c] = shardKey(sh.Run, sh.Out, sh.In, c), &blob{Enc: encShard, Data: b}
	}
	s.st.putReceived(rc, keys, bs)
	return nil
}

// shardStream encodes one shard of a float64 column of n values, then the end mark.
func shardStream(t *testing.T, in, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := writeShard(bw, "shuffle-r", 0, in, []dtype.Slice{dtype.OfFloat64(make([]float64, n))}); err != nil {
		t.Fatal(err)
	}
	_ = bw.WriteByte(endMark)
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stream serves one peer's stream on a pipe and returns its writing end and the serve's end.
func stream(sink shardSink) (net.Conn, <-chan error) {
	a, b := net.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- serveShards(a, sink) }()
	return b, errc
}

func answer(t *testing.T, c net.Conn, errc <-chan error) {
	t.Helper()
	r := bufio.NewReader(c)
	if status, err := r.ReadByte(); err != nil || status != 0 {
		t.Fatalf("answer %d, %v", status, err)
	}
	if _, err := readBytes32(r); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func (st *store) heldNow() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.held
}

// TestShardReceivesCountTowardsTheLimit streams shards to a store under a 4 MiB limit: a
// shard half read already counts (a result kept before spills to make room for it), and a
// second shard arriving meanwhile waits for room rather than pass the limit beside it, then is
// stored once the first is; the peak stays within the limit plus the oldest shard, the one let
// past it.
func TestShardReceivesCountTowardsTheLimit(t *testing.T) {
	const limit = 4 << 20
	st := newStore(0, limit, t.TempDir())
	defer st.close()
	st.recvWait = time.Hour // the waits end on room, not on a timer, whatever the machine's load
	waiting := make(chan struct{}, 16)
	st.onRecvWait = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	st.putBlob("kept", &blob{Data: make([]byte, 3<<20)})
	sink := storeSink{st}
	const vals = 3 << 17 // 3 MiB of float64s a shard
	a, b := shardStream(t, 0, vals), shardStream(t, 1, vals)

	// net.Pipe's writes return once read: 2 MiB of a's values are in the receiver's buffers.
	ca, ea := stream(sink)
	cut := len(a) - vals*8 + 2<<20
	if _, err := ca.Write(a[:cut]); err != nil {
		t.Fatal(err)
	}
	if h, s := st.heldNow(), st.stats(); h < 1<<20 || s.Disk != 3<<20 || s.Count != 1 {
		t.Fatalf("half a shard received: %d bytes held, %+v; want its buffers counted and the kept result spilled", h, s)
	}
	cb, eb := stream(sink)
	wroteB := make(chan error, 1)
	go func() { _, err := cb.Write(b); wroteB <- err }()
	<-waiting // b's receive found no room beside a's
	// Only the oldest receive (a) may pass the limit, by at most its own shard.
	if h := st.heldNow(); h > limit+vals*8+shardPad {
		t.Fatalf("%d bytes held by two receives, past the %d-byte limit and a's shard", h, limit)
	}
	if _, err := ca.Write(a[cut:]); err != nil {
		t.Fatal(err)
	}
	answer(t, ca, ea)
	if err := <-wroteB; err != nil {
		t.Fatal(err)
	}
	answer(t, cb, eb)
	s := st.stats()
	if h := st.heldNow(); h != 0 || s.Count != 3 || s.Host+s.Disk != 9<<20+2*shardPad || s.RecvWaits == 0 {
		t.Fatalf("after both shards: %d bytes held, %+v; want nothing held, three results of 9 MiB and two pieces' padding", h, s)
	}
	if s.Peak > limit+vals*8+shardPad {
		t.Fatalf("peak %d bytes, past the limit %d and one shard", s.Peak, limit)
	}
	for _, in := range []int{0, 1} {
		bl, err := st.blob(shardKey("shuffle-r", 0, in, 0))
		if err != nil {
			t.Fatal(err)
		}
		if p, err := shardPiece(bl); err != nil || p.Len() != vals {
			t.Fatalf("shard %d: %v values, %v", in, p.Len(), err)
		}
	}
}
