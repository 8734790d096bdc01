package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// mapSink keeps shards in memory.
type mapSink struct {
	got  []*shard
	room int64
}

func (m *mapSink) beginReceive() *receive              { return nil }
func (m *mapSink) putShard(s *shard, _ *receive) error { m.got = append(m.got, s); return nil }
func (m *mapSink) shardRoom() int64                    { return m.room }

func encodedShards(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	cols := []dtype.Slice{dtype.OfInt64([]int64{1, -2, 3}), dtype.OfFloat64([]float64{0.5, 1.5, -2}), dtype.OfBool([]bool{true, false, true})}
	if err := writeShard(bw, "shuffle-1", 2, 0, cols); err != nil {
		t.Fatal(err)
	}
	if err := writeShard(bw, "shuffle-1", 3, 0, []dtype.Slice{dtype.OfInt64(nil)}); err != nil {
		t.Fatal(err)
	}
	_ = bw.WriteByte(endMark)
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestShardRoundTrip reads back what writeShard writes, piece by piece.
func TestShardRoundTrip(t *testing.T) {
	r := bytes.NewReader(encodedShards(t))
	s, err := readShard(r, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Run != "shuffle-1" || s.Out != 2 || s.In != 0 || len(s.Cols) != 3 || s.valueBytes != 3*8+3*8+3 {
		t.Fatalf("shard %+v", s)
	}
	f, err := shardPiece(&blob{Enc: encShard, Data: s.Cols[1]})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Float64s(); len(got) != 3 || got[0] != 0.5 || got[2] != -2 {
		t.Fatalf("float column %v", got)
	}
	if &f.Bytes()[0] != &s.Cols[1][shardPad] {
		t.Fatal("the piece's values were copied, not read in place")
	}
	if s, err = readShard(r, 1<<20, nil); err != nil || s.Out != 3 || len(s.Cols) != 1 || len(s.Cols[0]) != shardPad {
		t.Fatalf("empty shard: %+v, %v", s, err)
	}
	if _, err := readShard(r, 1<<20, nil); !errors.Is(err, errEndOfShards) {
		t.Fatalf("end mark: %v", err)
	}
}

// TestShardLimit refuses a shard past the receiver's room before reading its values.
func TestShardLimit(t *testing.T) {
	if _, err := readShard(bytes.NewReader(encodedShards(t)), 16, nil); err == nil {
		t.Fatal("a shard of 51 value bytes passed a 16-byte room")
	}
}

// TestServeShardsAnswers stores the shards a peer streams and answers once.
func TestServeShardsAnswers(t *testing.T) {
	a, b := net.Pipe()
	sink := &mapSink{room: 1 << 20}
	errc := make(chan error, 1)
	go func() { errc <- serveShards(a, sink) }()
	go func() { _, _ = b.Write(encodedShards(t)) }()
	r := bufio.NewReader(b)
	status, err := r.ReadByte()
	if err != nil || status != 0 {
		t.Fatalf("answer %d, %v", status, err)
	}
	if _, err := readBytes32(r); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(sink.got) != 2 {
		t.Fatalf("%d shards stored, want 2", len(sink.got))
	}
}

// FuzzReadShard feeds the shard decoder bytes from a peer: it must return an error or shards
// whose pieces decode, never panic, and never hold more than its room.
func FuzzReadShard(f *testing.F) {
	f.Add(encodedShards(f))
	f.Add([]byte{shardMark, 0, 0, 0, 1, 'r', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, byte(dtype.Int64), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf8})
	f.Add([]byte{endMark})
	f.Fuzz(func(t *testing.T, data []byte) {
		const room = 1 << 16
		r := bytes.NewReader(data)
		for {
			s, err := readShard(r, room, nil)
			if err != nil {
				return
			}
			if s.valueBytes > room {
				t.Fatalf("a shard of %d value bytes passed a room of %d", s.valueBytes, room)
			}
			for _, c := range s.Cols {
				if _, err := shardPiece(&blob{Enc: encShard, Data: c}); err != nil {
					t.Fatalf("a piece readShard accepted does not decode: %v", err)
				}
			}
		}
	})
}
