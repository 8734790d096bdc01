package cluster

import (
	"bytes"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestChunkEncodingRoundTrips encodes kept chunks of every dtype raw (encChunk) and decodes
// them copied and in place: the values, shape and notes come back, a decode in place reads
// the blob's own memory and a copy does not, and values other than one chunk stay gob.
func TestChunkEncodingRoundTrips(t *testing.T) {
	for _, dt := range dtype.All {
		for _, n := range []int{0, 1, 7, 1000} {
			vals := dtype.Make(dt, n)
			for i := range vals.Bytes() {
				vals.Bytes()[i] = byte(i*7 + int(dt))
			}
			if dt == dtype.Bool {
				for i := range vals.Bytes() {
					vals.Bytes()[i] &= 1
				}
			}
			o := &plan.Output{Shape: []int{n, 1}, Data: vals, HostFallback: "on the CPU", HostSeconds: 1.5, HostRead: "read", Lib: "lib"}
			b, err := encodeValue([]*plan.Output{o})
			if err != nil {
				t.Fatal(err)
			}
			if b.Enc != encChunk {
				t.Fatalf("%v[%d]: encoding %d, want encChunk", dt, n, b.Enc)
			}
			for _, shared := range []bool{false, true} {
				v, err := decodeBlob(b, shared)
				if err != nil {
					t.Fatal(err)
				}
				outs := v.([]*plan.Output)
				g := outs[0]
				if !dtype.Equal(g.Data, vals) || !slices.Equal(g.Shape, o.Shape) || g.HostFallback != o.HostFallback || g.HostSeconds != o.HostSeconds || g.HostRead != o.HostRead || g.Lib != o.Lib {
					t.Fatalf("%v[%d] shared %v: decoded %+v, want %+v", dt, n, shared, g, o)
				}
				if n > 0 {
					inPlace := &g.Data.Bytes()[0] == &b.Data[len(b.Data)-len(vals.Bytes())]
					if inPlace != shared {
						t.Fatalf("%v[%d]: decoded in place %v, want %v", dt, n, inPlace, shared)
					}
				}
			}
		}
	}
	for _, v := range []any{[]*plan.Output{{Data: dtype.OfFloat64([]float64{1}), Aux: [][]float64{{2}}}}, []float64{1, 2}} {
		b, err := encodeValue(v)
		if err != nil {
			t.Fatal(err)
		}
		if b.Enc != encGob {
			t.Fatalf("%T: encoding %d, want gob", v, b.Enc)
		}
	}
	if _, err := decodeBlob(&blob{Enc: encChunk, Data: []byte{byte(dtype.Float64), 0, 0, 0}}, true); err == nil {
		t.Fatal("a truncated chunk decoded")
	}
}

// TestSpilledChunkReadsInPlace spills a raw chunk to disk and reads it back for a task: the
// file holds the encoding byte then the data (written without a joined copy), and the value
// read is decoded in the buffer read from the file.
func TestSpilledChunkReadsInPlace(t *testing.T) {
	st := newStore(0, 1, t.TempDir()) // a one-byte limit: every result spills
	defer st.close()
	want := chunkOf(1000, 3)
	b := encodeChunk(&plan.Output{Shape: []int{1000}, Data: dtype.OfFloat64(want)})
	st.putBlob("a", b)
	if w := st.where("a"); w != tierDisk {
		t.Fatalf("the chunk is in %q, want spilled to disk", w)
	}
	v, done, err := st.valueFor("a", false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if got := valuesOf(t, v); !slices.Equal(got, want) {
		t.Fatal("the chunk read back from disk differs")
	}
	rb, err := st.blob("a")
	if err != nil {
		t.Fatal(err)
	}
	if rb.Enc != encChunk || !bytes.Equal(rb.Data, b.Data) {
		t.Fatal("the spilled file does not hold the blob as it was")
	}
}

// TestUnpackStreamsLargePartitionsToDisk unpacks an output partition larger than the room
// the store keeps results in: it is written to its spill file as its pieces come (the result
// a spilledChunk, kept in the disk tier), the pieces are dropped, and the chunk read back is
// the pieces joined in input order. One that fits is made in its stored form in memory.
func TestUnpackStreamsLargePartitionsToDisk(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		tier  string
	}{{limit: 1000, tier: tierDisk}, {limit: 1 << 20, tier: tierHost}} {
		w := &worker{cfg: WorkerConfig{Name: "cpu0"}, store: newStore(0, c.limit, t.TempDir())}
		var want []float64
		for in := range 4 {
			x := chunkOf(100, float64(in*100))
			want = append(want, x...)
			var buf bytes.Buffer
			if err := writeShard(&buf, "shuffle-u", 0, in, []dtype.Slice{dtype.OfFloat64(x)}); err != nil {
				t.Fatal(err)
			}
			s, err := readShard(&buf, 1<<20, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.putShard(s, nil); err != nil {
				t.Fatal(err)
			}
		}
		v, err := w.unpackAs("unpack-0", shuffleSpec{Run: "shuffle-u", Part: 0, NIn: 4, Rows: 400})
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case *spilledChunk:
			w.store.putSpilled("unpack-0", v)
		case *blob:
			w.store.putBlob("unpack-0", v)
		default:
			t.Fatalf("limit %d: the unpack returned a %T", c.limit, v)
		}
		if got := w.store.where("unpack-0"); got != c.tier {
			t.Fatalf("limit %d: the partition is in %q, want %q", c.limit, got, c.tier)
		}
		if n := w.store.stats().Count; n != 1 {
			t.Fatalf("limit %d: %d results in the store, want the partition alone (the pieces dropped)", c.limit, n)
		}
		got, done, err := w.store.value("unpack-0", false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(valuesOf(t, got), want) {
			t.Fatalf("limit %d: the partition is not the pieces joined in input order", c.limit)
		}
		done()
		if _, err := w.unpackAs("unpack-1", shuffleSpec{Run: "shuffle-u", Part: 0, NIn: 4, Rows: 400}); err == nil {
			t.Fatalf("limit %d: an unpack of pieces already dropped succeeded", c.limit)
		}
		w.store.close()
	}
}
