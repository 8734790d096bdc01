package dataframe

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// A Parquet read on a GPU is a bounded pipeline (issue 31): row groups are decoded on host
// goroutines, and each decoded partition's column chunks go to the device through its pinned
// staging buffers (gpuarray.Uploader) while later partitions decode. At most window partitions
// are held on the host at once (decoding, decoded, or being copied), so the host never holds
// the whole table: only the string columns' bytes stay there (a string column's rows on the
// GPU are positions into them, as after Persist).

// chunkSink receives a pipelined read's column chunks, in partition order per column.
type chunkSink interface {
	// upload copies chunk part of a column; v may be reused when it returns.
	upload(v dtype.Slice, part int) (any, error)
	// array makes the column of the chunks (in order) that upload returned.
	array(cs []any, dt dtype.DType) (*gpuarray.Array, error)
	// free gives back chunks that array did not take.
	free(cs []any)
}

// gpuSink uploads to the GPUs of a Compute's options.
type gpuSink struct{ u *gpuarray.Uploader }

func (s *gpuSink) upload(v dtype.Slice, part int) (any, error) { return s.u.Upload(v, part) }

func (s *gpuSink) array(cs []any, dt dtype.DType) (*gpuarray.Array, error) {
	dc := make([]*gpuarray.DeviceChunk, len(cs))
	for i, c := range cs {
		dc[i] = c.(*gpuarray.DeviceChunk)
	}
	return gpuarray.HeldArray(dc, dt, "")
}

func (s *gpuSink) free(cs []any) {
	for _, c := range cs {
		if d, ok := c.(*gpuarray.DeviceChunk); ok {
			d.Free()
		}
	}
}

// pipeHooks replace the GPU sink and observe the pipeline, for tests (export_pipe_test.go).
var pipeHooks struct {
	sink    func() chunkSink // non-nil: every read is pipelined into this sink
	window  int              // non-zero: the window
	observe func(event string, part int, held, bytes int64)
}

// readSink returns the sink a read with rc's options streams into, and its window; ok is
// false when the read assembles the table on the host (CPU, cluster).
func (rc *runCtx) readSink() (s chunkSink, window int, ok bool, err error) {
	window = runtime.GOMAXPROCS(0) + 1
	if pipeHooks.window > 0 {
		window = pipeHooks.window
	}
	if pipeHooks.sink != nil {
		return pipeHooks.sink(), window, true, nil
	}
	if rc.target.Backend != "gpu" {
		return nil, 0, false, nil
	}
	u, err := gpuarray.NewUploader(rc.opts...)
	if err != nil {
		return nil, 0, false, err
	}
	return &gpuSink{u: u}, window, true, nil
}

// decoded is one partition from a decoding goroutine.
type decoded struct {
	ht    *hostTable
	bytes int64
	err   error
}

// hostBytes is about how much memory a decoded partition holds.
func hostBytes(ht *hostTable) int64 {
	var n int64
	for _, c := range ht.cols {
		n += int64(len(c.vals.Bytes())) + int64(len(c.valid))
		if c.heap != nil {
			n += int64(len(c.heap.data)) + 8*int64(len(c.heap.offsets))
		}
	}
	return n
}

// pipeline runs decode(i) for i in [0, n) on up to window goroutines and upload(i, partition)
// on the caller's goroutine in order: at most window partitions are decoding or held, and a
// partition is dropped once uploaded. The first error stops it.
func pipeline(ctx context.Context, n, window int, decode func(ctx context.Context, i int) (*hostTable, error), upload func(i int, ht *hostTable) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	window = max(window, 1)
	results := make([]chan decoded, n)
	for i := range results {
		results[i] = make(chan decoded, 1)
	}
	sem := make(chan struct{}, window)
	var held atomic.Int64
	observe := func(ev string, i int, b int64) {
		if pipeHooks.observe != nil {
			pipeHooks.observe(ev, i, held.Load(), b)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the dispatcher: partition i starts once one of window slots is free
		defer wg.Done()
		for i := range n {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				observe("decode", i, 0)
				ht, err := decode(ctx, i)
				var b int64
				if err == nil {
					b = hostBytes(ht)
					held.Add(b)
				}
				observe("decoded", i, b)
				results[i] <- decoded{ht: ht, bytes: b, err: err}
			}()
		}
	}()
	var err error
	for i := range n {
		var r decoded
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
		if r.err != nil {
			err = r.err
			break
		}
		observe("upload", i, r.bytes)
		err = upload(i, r.ht)
		held.Add(-r.bytes)
		observe("uploaded", i, r.bytes)
		<-sem
		if err != nil {
			break
		}
	}
	cancel()
	wg.Wait()
	return err
}

// colStream joins one column's partitions as they arrive, as concatCols joins them at once:
// a string column's bytes go to one heap (its chunks are positions into it), a categorical's
// dictionaries to one dictionary (its chunks are codes of it).
type colStream struct {
	name string
	dt   DType
	adt  dtype.DType
	heap *strHeap         // String: the strings; Category: the dictionary
	at   map[string]int32 // Category: each string's code
}

// add returns partition p's chunk of values (in the column's array dtype) and validity.
func (s *colStream) add(p *hostCol) (dtype.Slice, []bool, error) {
	if p.dt != s.dt || p.name != s.name {
		return dtype.Slice{}, nil, fmt.Errorf("column %q of %s, the read's %q of %s", p.name, p.dt, s.name, s.dt)
	}
	valid := p.valid
	if valid != nil && allTrue(valid) {
		valid = nil
	}
	switch s.dt {
	case String:
		pos := make([]int64, p.vals.Len())
		for i, x := range p.vals.Int64s() {
			pos[i] = int64(s.heap.len())
			if !p.isValid(i) {
				s.heap.add("")
				continue
			}
			s.heap.data = append(s.heap.data, p.heap.bytesAt(x)...)
			s.heap.offsets = append(s.heap.offsets, int64(len(s.heap.data)))
		}
		return dtype.OfInt64(pos), valid, nil
	case Category:
		remap := make([]int32, p.heap.len())
		for i := range remap {
			str := p.heap.at(int64(i))
			c, ok := s.at[str]
			if !ok {
				c = int32(s.heap.len())
				s.at[str] = c
				s.heap.add(str)
			}
			remap[i] = c
		}
		codes := make([]int32, p.vals.Len())
		for i, x := range p.vals.Int32s() {
			if p.isValid(i) {
				codes[i] = remap[x]
			}
		}
		v, _ := dtype.Of(codes)
		return v, valid, nil
	}
	v := p.vals
	if v.DType() != s.adt {
		v = dtype.Convert(v, s.adt)
	}
	return v, valid, nil
}

// readPipelined reads parts through sink (see pipeline) into a table of the columns cols.
func readPipelined(rc *runCtx, sink chunkSink, window int, parts []pqPart, cols []string, fields []Field, hive, hiveText map[string]bool) (*table, error) {
	n := len(parts)
	streams := make([]*colStream, len(cols))
	for j, c := range cols {
		var dt DType
		for _, fd := range fields {
			if fd.Name == c {
				dt = fd.DType
			}
		}
		adt, ok := dt.array()
		if !ok {
			return nil, fmt.Errorf("column %q: no array type for %s", c, dt)
		}
		s := &colStream{name: c, dt: dt, adt: adt}
		if dt == String || dt == Category {
			s.heap, s.at = newHeap(0), map[string]int32{}
		}
		streams[j] = s
	}
	vals := make([][]any, len(cols))
	valids := make([][]any, len(cols)) // nil entries: no nulls in that partition
	for j := range cols {
		valids[j] = make([]any, n)
	}
	var rows []any
	var lens []int
	freeAll := func() {
		sink.free(rows)
		for j := range cols {
			sink.free(vals[j])
			sink.free(valids[j])
		}
	}
	start := 0
	decode := func(ctx context.Context, i int) (*hostTable, error) {
		return readPart(ctx, parts[i], cols, hive, hiveText)
	}
	upload := func(i int, ht *hostTable) error {
		l := ht.lens[0]
		for j, s := range streams {
			v, valid, err := s.add(ht.cols[j])
			if err != nil {
				return fmt.Errorf("read %s row group %d: %w", parts[i].file, parts[i].rowGroup, err)
			}
			c, err := sink.upload(v, i)
			if err != nil {
				return fmt.Errorf("column %q: %w", s.name, err)
			}
			vals[j] = append(vals[j], c)
			if valid != nil {
				if valids[j][i], err = sink.upload(dtype.OfBool(valid), i); err != nil {
					return fmt.Errorf("column %q's nulls: %w", s.name, err)
				}
			}
		}
		r := make([]int64, l)
		for k := range r {
			r[k] = int64(start + k)
		}
		c, err := sink.upload(dtype.OfInt64(r), i)
		if err != nil {
			return fmt.Errorf("row numbers: %w", err)
		}
		rows = append(rows, c)
		lens = append(lens, l)
		start += l
		return nil
	}
	if err := pipeline(rc.target.Context, n, window, decode, upload); err != nil {
		freeAll()
		return nil, err
	}
	t := &table{}
	var err error
	if t.rows, err = sink.array(rows, dtype.Int64); err != nil {
		freeAll()
		return nil, fmt.Errorf("row numbers: %w", err)
	}
	rows = nil
	for j, s := range streams {
		c := &column{name: s.name, dt: s.dt, heap: s.heap}
		if c.arr, err = sink.array(vals[j], s.adt); err != nil {
			freeAll()
			return nil, fmt.Errorf("column %q: %w", s.name, err)
		}
		vals[j] = nil
		if c.valid, err = uploadNulls(sink, valids[j], lens); err != nil {
			freeAll()
			return nil, fmt.Errorf("column %q's nulls: %w", s.name, err)
		}
		valids[j] = nil
		t.cols = append(t.cols, c)
	}
	return t, nil
}

// uploadNulls makes a column's validity of its partitions' chunks (nil: no nulls there, uploaded
// now as all true), or returns nil when no partition has nulls.
func uploadNulls(sink chunkSink, vs []any, lens []int) (*gpuarray.Array, error) {
	some := false
	for _, v := range vs {
		some = some || v != nil
	}
	if !some {
		return nil, nil
	}
	for i, v := range vs {
		if v != nil {
			continue
		}
		ones := make([]bool, lens[i])
		for k := range ones {
			ones[k] = true
		}
		c, err := sink.upload(dtype.OfBool(ones), i)
		if err != nil {
			return nil, err
		}
		vs[i] = c
	}
	return sink.array(vs, dtype.Bool)
}

// stringsKept names the string columns whose bytes a pipelined read kept on the host.
func stringsKept(t *table) string {
	var names []string
	var n int
	for _, c := range t.cols {
		if c.dt == String {
			names = append(names, c.name)
			n += len(c.heap.data)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the bytes of string columns %s, %d, stay on the host until Persist copies them)", quoteList(names), n)
}
