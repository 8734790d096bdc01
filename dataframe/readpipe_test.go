package dataframe

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// pipeFrame is a frame of every column type, nulls in the float, string and integer columns
// of some partitions only, in parts partitions of unequal lengths.
func pipeFrame(n, parts int) *Frame {
	i64 := make([]int64, n)
	i32 := make([]int32, n)
	f64 := make([]float64, n)
	fv := make([]bool, n)
	b := make([]bool, n)
	s := make([]string, n)
	sv := make([]bool, n)
	ts := make([]time.Time, n)
	for i := range n {
		i64[i] = int64(i*7919%1000) - 500
		i32[i] = int32(i % 37)
		f64[i] = float64(i) / 3
		fv[i] = i < n/2 || i%5 != 0 // nulls only in the second half
		b[i] = i%3 == 0
		s[i] = fmt.Sprintf("s%d", i%13)
		sv[i] = i%11 != 4
		ts[i] = time.Unix(int64(1_700_000_000+i*61), 0).UTC()
	}
	return FromSlices([]string{"i64", "i32", "f64", "b", "s", "t"},
		[]any{i64, i32, Nullable(f64, fv), b, Nullable(s, sv), ts}, NPartitions(parts)).
		Assign("cat", Col("s").FillNA("none").ToCategory())
}

// hostSink is a chunkSink into host memory, standing for a GPU: it copies each chunk, records
// the order chunks arrive in, and makes arrays of the copies.
type hostSink struct {
	mu     sync.Mutex
	order  []int
	before func(part int) // runs first in upload
}

func (s *hostSink) upload(v dtype.Slice, part int) (any, error) {
	if s.before != nil {
		s.before(part)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) == 0 || s.order[len(s.order)-1] != part {
		s.order = append(s.order, part)
	}
	return v.Clone(), nil
}

func (s *hostSink) array(cs []any, dt dtype.DType) (*gpuarray.Array, error) {
	var lens []int
	n := 0
	for _, c := range cs {
		lens = append(lens, c.(dtype.Slice).Len())
		n += lens[len(lens)-1]
	}
	out := dtype.Make(dt, n)
	at := 0
	for _, c := range cs {
		v := c.(dtype.Slice)
		dtype.Copy(out.Slice(at, at+v.Len()), v)
		at += v.Len()
	}
	if len(lens) == 0 {
		lens = []int{0}
	}
	a := gpuarray.WrapValues(out, gpuarray.ChunkSizes(lens))
	return a, a.Err()
}

func (s *hostSink) free([]any) {}

// withSink pipelines every Parquet read into sink with the window, observing the pipeline's
// events, until the returned func runs.
func withSink(sink chunkSink, window int, observe func(event string, part int, held, bytes int64)) func() {
	old := pipeHooks
	pipeHooks.sink = func() chunkSink { return sink }
	pipeHooks.window = window
	pipeHooks.observe = observe
	return func() { pipeHooks = old }
}

// TestParquetPipelineOrderAndBound reads a Parquet dataset of 9 row groups through the
// pipeline into a sink that stands for a GPU, with a window of 2 partitions: the chunks arrive
// in partition order, the decode of partition i+1 starts before partition i's upload ends (the
// sink's upload of i waits for it, so a read that did not overlap would never finish), at most
// 2 partitions are held at once and their bytes stay within 2 of the largest, and the frame
// equals the one the host reads.
func TestParquetPipelineOrderAndBound(t *testing.T) {
	const parts, window = 9, 2
	dir := filepath.Join(t.TempDir(), "ds")
	if err := pipeFrame(5003, parts).ToParquet(dir); err != nil {
		t.Fatal(err)
	}
	want, err := ReadParquet(dir).Compute()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	started := make([]chan struct{}, parts)
	for i := range started {
		started[i] = make(chan struct{})
	}
	inFlight, maxInFlight := 0, 0
	var maxHeld, maxPart int64
	decodedBytes := map[int]int64{}
	observe := func(ev string, part int, held, bytes int64) {
		mu.Lock()
		defer mu.Unlock()
		switch ev {
		case "decode":
			inFlight++
			maxInFlight = max(maxInFlight, inFlight)
			close(started[part])
		case "decoded":
			maxHeld = max(maxHeld, held)
			decodedBytes[part] = bytes
			maxPart = max(maxPart, bytes)
		case "uploaded":
			inFlight--
		}
	}
	sink := &hostSink{before: func(part int) {
		if part+1 < parts {
			<-started[part+1]
		}
	}}
	restore := withSink(sink, window, observe)
	got, err := ReadParquet(dir).Compute()
	restore()
	if err != nil {
		t.Fatal(err)
	}
	// After the 9 partitions come the all-true validity chunks of the partitions that had no
	// nulls in a column that has some elsewhere.
	if len(sink.order) < parts || !slices.Equal(sink.order[:parts], []int{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("chunks arrived for partitions %v", sink.order)
	}
	if maxInFlight > window || maxInFlight < 2 {
		t.Fatalf("%d partitions held at once, the window %d", maxInFlight, window)
	}
	if len(decodedBytes) != parts || maxPart <= 0 || maxHeld > window*maxPart {
		t.Fatalf("held at most %d bytes, the largest partition %d (window %d, %d partitions seen)", maxHeld, maxPart, window, len(decodedBytes))
	}
	if got.NPartitions() != parts {
		t.Fatalf("%d partitions, want %d", got.NPartitions(), parts)
	}
	if p := got.Path(); !strings.Contains(p, "at most 2 at a time") || !strings.Contains(p, "pinned buffers") || !strings.Contains(p, `string columns "s"`) {
		t.Fatalf("Path %q does not name the pipeline", p)
	}
	sameFrames(t, "pipelined read", got, want, 0)
	// Projection and a filter pushed down to row groups take the same path.
	f := ReadParquet(dir, Columns("i64", "cat", "f64"), Filters(Col("i32").Lt(5)))
	wantF, err := f.Compute()
	if err != nil {
		t.Fatal(err)
	}
	restore = withSink(&hostSink{}, window, nil)
	gotF, err := f.Compute()
	restore()
	if err != nil {
		t.Fatal(err)
	}
	sameFrames(t, "pipelined read, projected and filtered", gotF, wantF, 0)
}

// TestParquetPipelineStopsOnError: a row group that fails to decode stops the pipeline with
// the file's name, and the chunks uploaded before it are given back.
func TestParquetPipelineStopsOnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if err := pipeFrame(900, 6).ToParquet(dir); err != nil {
		t.Fatal(err)
	}
	f := ReadParquet(dir)
	// Spoil one file after the metadata was read: its row group no longer decodes.
	bad := filepath.Join(dir, "part.3.parquet")
	if err := os.WriteFile(bad, []byte("not Parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := &countingSink{}
	defer withSink(sink, 2, nil)()
	if _, err := f.Compute(); err == nil || !strings.Contains(err.Error(), "part.3.parquet") {
		t.Fatalf("Compute: %v, want an error naming part.3.parquet", err)
	}
	if sink.live != 0 {
		t.Fatalf("%d chunks not given back", sink.live)
	}
}

// countingSink counts the chunks uploaded and not yet taken or freed.
type countingSink struct {
	hostSink
	live int
}

func (s *countingSink) upload(v dtype.Slice, part int) (any, error) {
	c, err := s.hostSink.upload(v, part)
	s.mu.Lock()
	s.live++
	s.mu.Unlock()
	return &c, err
}

func (s *countingSink) array(cs []any, dt dtype.DType) (*gpuarray.Array, error) {
	vs := make([]any, len(cs))
	for i, c := range cs {
		vs[i] = *c.(*any)
	}
	s.free(cs)
	return s.hostSink.array(vs, dt)
}

func (s *countingSink) free(cs []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		if p, ok := c.(*any); ok && *p != nil {
			*p = nil
			s.live--
		}
	}
}
