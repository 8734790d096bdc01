package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Shuffle task kinds (taskSpec.Kind); their shuffleSpec is gob-encoded in taskSpec.Chunk.
const (
	kindShuffleTransfer = "shuffle-transfer" // hash-split an input partition, push it to the owners
	kindShuffleUnpack   = "shuffle-unpack"   // join one column of an output partition from its shards
	kindShuffleDrop     = "shuffle-drop"     // forget a run's shards on this worker
)

// shuffleSpec says what one shuffle task does.
type shuffleSpec struct {
	Run string
	// Part is the input partition (transfer) or the output partition (unpack).
	Part int
	// N is the number of output partitions; NIn the number of input partitions.
	N, NIn int
	// Owners gives, per output partition, the data address of the worker that receives it.
	Owners []string
	// Keys are the input columns hashed, Valid their validity columns (-1: none).
	Keys, Valid []int
	// Col is the column an unpack task joins, Rows the rows its output partition receives
	// in all (0: not told).
	Col  int
	Rows int64
	// Range, when set, partitions on the first key by range instead of by hash.
	Range *shuffleRange
}

// shuffleRange is a range partitioning (a sort's): partition p holds the first key's values
// in [Bounds[p-1], Bounds[p]) as orderKeys encodes them, the reverse for Desc, and the nulls
// go first (NullsFirst) or last.
type shuffleRange struct {
	Bounds           []int64
	Desc, NullsFirst bool
}

func encodeShuffleSpec(s shuffleSpec) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return nil, fmt.Errorf("encode shuffle task: %w", err)
	}
	return buf.Bytes(), nil
}

// shuffleState is a worker's side of the shuffles it takes part in.
type shuffleState struct {
	mu         sync.Mutex
	ended      map[string]bool // runs dropped: late shards of them are refused
	sent, recv atomic.Int64    // bytes of shard values pushed to peers and stored from them
}

func shardKey(run string, out, in, col int) string {
	return fmt.Sprintf("%s/%d/%d/%d", run, out, in, col)
}

// beginReceive counts the buffers of a shard being read in the store's buffers in flight.
func (w *worker) beginReceive() *receive { return w.store.beginReceive() }

// putShard keeps a shard's column pieces in the store, where they count in the memory limit
// (as its receive buffers did until now) and spill to disk as results do.
func (w *worker) putShard(s *shard, rc *receive) error {
	w.shuf.mu.Lock()
	ended := w.shuf.ended[s.Run]
	w.shuf.mu.Unlock()
	if ended {
		rc.end()
		return fmt.Errorf("shuffle %s has ended on worker %s", s.Run, w.cfg.Name)
	}
	w.shuf.recv.Add(s.valueBytes)
	if w.cfg.GPU != "" && !strings.HasPrefix(s.Run, groupSplitPrefix) && w.putShardOnDevice(s, rc) {
		return nil
	}
	keys := make([]string, len(s.Cols))
	bs := make([]*blob, len(s.Cols))
	for c, b := range s.Cols {
		keys[c], bs[c] = shardKey(s.Run, s.Out, s.In, c), &blob{Enc: encShard, Data: b}
	}
	w.store.putReceived(rc, keys, bs)
	return nil
}

// uploadShardPiece puts a shard's column piece in this worker's GPU memory (a variable: tests
// without a GPU hold it in host memory that stands for the device's).
var uploadShardPiece = func(o *plan.Output) (devValue, error) { return uploadOutput(o) }

// putShardOnDevice keeps a shard's column pieces in a GPU worker's device memory, where they
// count in its device limit and spill to host memory, then disk, beyond it, as its persisted
// chunks do; the receive buffers are freed. It reports false, having kept nothing, when the
// GPU does not take them (the caller keeps them in host memory).
func (w *worker) putShardOnDevice(s *shard, rc *receive) bool {
	dvs := make([]devValue, 0, len(s.Cols))
	free := func() {
		for _, dv := range dvs {
			dv.Free()
		}
	}
	for c, b := range s.Cols {
		p, err := shardPiece(&blob{Enc: encShard, Data: b})
		if err == nil {
			var dv devValue
			if dv, err = uploadShardPiece(&plan.Output{Shape: []int{p.Len()}, Data: p}); err == nil {
				dvs = append(dvs, dv)
				continue
			}
		}
		free()
		w.cfg.Logf("worker %s: shuffle %s: column %d of a shard kept in host memory, not on the GPU: %v", w.cfg.Name, s.Run, c, err)
		return false
	}
	rc.end()
	for c, dv := range dvs {
		w.store.putDev(shardKey(s.Run, s.Out, s.In, c), dv)
	}
	return true
}

// shardPieceAt returns a stored shard piece's values, from whichever tier holds it: a piece
// received in host memory (encShard), or one kept on the device, or spilled from it (a chunk).
func (w *worker) shardPieceAt(k string) (dtype.Slice, error) {
	b, err := w.store.blob(k)
	if err != nil {
		return dtype.Slice{}, err
	}
	if b.Enc == encShard {
		return shardPiece(b)
	}
	v, err := decodeShared(b) // the unpack only reads it, into its output partition
	if err != nil {
		return dtype.Slice{}, err
	}
	return keptValues(v)
}

// bigResult reports whether a result of n bytes passes a quarter of the worker's memory
// limit: it is not made whole in memory where it can be written to disk as it is made.
func (w *worker) bigResult(n uint64) bool {
	l := w.cfg.MemoryLimit
	return l > 0 && l < math.MaxInt64 && n > l/4
}

// shardRoom bounds one shard: no more than the worker's memory limit.
func (w *worker) shardRoom() int64 {
	if l := w.cfg.MemoryLimit; l > 0 && l < math.MaxInt64 {
		return int64(l)
	}
	return 1 << 40
}

// shuffleTask runs a shuffle task; resolve gives the values of its inputs.
func (w *worker) shuffleTask(ctx context.Context, t *taskMsg, resolve func(string) (any, error)) (any, error) {
	var sp shuffleSpec
	if err := gob.NewDecoder(bytes.NewReader(t.Spec.Chunk)).Decode(&sp); err != nil {
		return nil, fmt.Errorf("decode shuffle task: %w", err)
	}
	switch t.Spec.Kind {
	case kindShuffleTransfer:
		cols := make([]dtype.Slice, len(t.Spec.Inputs))
		for i, ref := range t.Spec.Inputs {
			v, err := resolve(ref)
			if err == nil {
				cols[i], err = keptValues(v)
			}
			if err != nil {
				return nil, fmt.Errorf("shuffle %s: input partition %d, column %d: %w", sp.Run, sp.Part, i, err)
			}
		}
		return w.shuffleTransfer(ctx, sp, cols)
	case kindShuffleUnpack:
		return w.unpackAs(t.Key, sp)
	case kindShuffleDrop:
		w.shuf.mu.Lock()
		if w.shuf.ended == nil {
			w.shuf.ended = map[string]bool{}
		}
		w.shuf.ended[sp.Run] = true
		w.shuf.mu.Unlock()
		return int64(w.store.dropPrefix(sp.Run + "/")), nil
	}
	return nil, fmt.Errorf("unknown shuffle task kind %q", t.Spec.Kind)
}

// shuffleKeys encodes the key columns for hashjoin.Partition as dataframe's host shuffle
// does, so that a frame shuffled on a cluster and one shuffled in the notebook put equal keys
// in partitions of the same number: integers, bools and datetimes as their values, floats as
// canonical bits (NaN as null, -0 as 0), and a null flag column per key.
func shuffleKeys(cols []dtype.Slice, keys, valid []int) (hashjoin.Keys, error) {
	var k hashjoin.Keys
	for j, c := range keys {
		if c < 0 || c >= len(cols) {
			return nil, fmt.Errorf("key column %d of %d", c, len(cols))
		}
		vals := cols[c]
		n := vals.Len()
		var ok []bool
		if j < len(valid) && valid[j] >= 0 {
			if valid[j] >= len(cols) || cols[valid[j]].DType() != dtype.Bool || cols[valid[j]].Len() != n {
				return nil, fmt.Errorf("validity column %d of key %d", valid[j], j)
			}
			ok = cols[valid[j]].Bools()
		}
		v := make([]int64, n)
		null := make([]int64, n)
		if vals.DType().IsFloat() {
			f := dtype.Convert(vals, dtype.Float64).Float64s()
			for i, x := range f {
				switch {
				case (ok != nil && !ok[i]) || math.IsNaN(x):
					null[i] = 1
				case x == 0:
				default:
					v[i] = int64(math.Float64bits(x))
				}
			}
		} else {
			copy(v, dtype.Convert(vals, dtype.Int64).Int64s())
			for i := range v {
				if ok != nil && !ok[i] {
					v[i], null[i] = 0, 1
				}
			}
		}
		k = append(k, v, null)
	}
	return k, nil
}

// gather returns the values of s at rows, in order.
func gather(s dtype.Slice, rows []int32) dtype.Slice {
	out := dtype.Make(s.DType(), len(rows))
	sz := s.DType().Size()
	src, dst := s.Bytes(), out.Bytes()
	switch sz {
	case 8:
		for j, r := range rows {
			copy(dst[j*8:j*8+8], src[int(r)*8:int(r)*8+8])
		}
	default:
		for j, r := range rows {
			copy(dst[j*sz:(j+1)*sz], src[int(r)*sz:(int(r)+1)*sz])
		}
	}
	return out
}

// shuffleTransfer hash-splits one input partition and pushes every output partition's rows
// (an empty shard too, so that owners can tell a lost shard from an empty one) to its owner,
// one connection per owner at once. It returns the rows sent per output partition and where
// the partitioning ran (shuffleDone, gob-encoded).
func (w *worker) shuffleTransfer(ctx context.Context, sp shuffleSpec, cols []dtype.Slice) ([]byte, error) {
	if len(sp.Owners) != sp.N || sp.N < 1 {
		return nil, fmt.Errorf("shuffle %s: %d owners for %d partitions", sp.Run, len(sp.Owners), sp.N)
	}
	n := -1
	for i, c := range cols {
		if n >= 0 && c.Len() != n {
			return nil, fmt.Errorf("shuffle %s: input partition %d: column %d has %d rows, column 0 %d", sp.Run, sp.Part, i, c.Len(), n)
		}
		n = c.Len()
	}
	// The input's values and the pieces gathered from them are in memory until pushed.
	var inBytes uint64
	for _, c := range cols {
		inBytes += uint64(len(c.Bytes()))
	}
	w.store.reserve(2 * inBytes)
	defer w.store.unreserve(2 * inBytes)
	part, where, err := w.shuffleParts(ctx, cols, sp)
	if err != nil {
		return nil, fmt.Errorf("shuffle %s: %w", sp.Run, err)
	}
	rows := make([][]int32, sp.N)
	for i, p := range part {
		rows[p] = append(rows[p], int32(i))
	}
	counts := make([]int64, sp.N)
	byOwner := map[string]*shardBatch{}
	var bytesOut int64
	for p := range rows {
		counts[p] = int64(len(rows[p]))
		pieces := make([]dtype.Slice, len(cols))
		for c, col := range cols {
			pieces[c] = gather(col, rows[p])
			bytesOut += int64(len(pieces[c].Bytes()))
		}
		b := byOwner[sp.Owners[p]]
		if b == nil {
			b = &shardBatch{}
			byOwner[sp.Owners[p]] = b
		}
		b.out = append(b.out, p)
		b.cols = append(b.cols, pieces)
	}
	if err := w.pushBatches(ctx, sp, byOwner); err != nil {
		return nil, err
	}
	w.shuf.sent.Add(bytesOut)
	b, err := encodeGob(shuffleDone{Counts: counts, Where: where})
	if err != nil {
		return nil, fmt.Errorf("shuffle %s: encode the transfer's result: %w", sp.Run, err)
	}
	return b, nil
}

// pushBatches pushes input partition sp.Part's shards to their owners, one connection per
// owner at once.
func (w *worker) pushBatches(ctx context.Context, sp shuffleSpec, byOwner map[string]*shardBatch) error {
	addrs := make([]string, 0, len(byOwner))
	for a := range byOwner {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pushShards(ctx, a, w.cfg.Token, w.fetchTLS(), sp.Run, sp.Part, *byOwner[a])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shuffle %s: input partition %d: %w", sp.Run, sp.Part, err)
	}
	return nil
}

// shuffleUnpack joins column sp.Col of output partition sp.Part from the shards of every
// input partition, in input order, and drops them: the result is a kept chunk, on a GPU
// worker in device memory. The pieces are joined in host memory (those on the device copied
// from it).
func (w *worker) shuffleUnpack(sp shuffleSpec) (any, error) { return w.unpackAs("", sp) }

// unpackAs is shuffleUnpack for the task of key k (k "": the result is not stored by key
// here). The pieces are read one at a time, copied into the output partition where it is
// kept (raw, encChunk, so it is never copied again to be stored) and dropped as they are
// copied: the pieces and the partition are not in memory twice. On a CPU worker an output
// partition larger than the room the store keeps results in is written to a file of its
// spill directory as the pieces come, never whole in memory (a *spilledChunk), as is one
// larger than a quarter of the worker's memory limit (the store's room follows the
// runtime's measures of the binary's resident pages, a second late).
func (w *worker) unpackAs(k string, sp shuffleSpec) (any, error) {
	piece := func(i int) (dtype.Slice, error) {
		p, err := w.shardPieceAt(shardKey(sp.Run, sp.Part, i, sp.Col))
		if err != nil {
			return dtype.Slice{}, fmt.Errorf("shuffle %s: output partition %d lacks the rows of input partition %d (lost with a worker?): %w", sp.Run, sp.Part, i, err)
		}
		return p, nil
	}
	if sp.NIn < 1 {
		return nil, fmt.Errorf("shuffle %s: no input partitions", sp.Run)
	}
	first, err := piece(0)
	if err != nil {
		return nil, err
	}
	dt := first.DType()
	total := int(sp.Rows)
	if sp.Rows <= 0 { // not told: count the pieces first
		total = 0
		for i := range sp.NIn {
			p, err := piece(i)
			if err != nil {
				return nil, err
			}
			total += p.Len()
		}
	}
	size := uint64(total * dt.Size())
	var sink chunkSink
	if w.cfg.GPU == "" && k != "" && (w.store.overRoom(size) || w.bigResult(size)) {
		f, err := w.store.createChunkFile(k, dt, total)
		if err != nil {
			return nil, fmt.Errorf("shuffle %s: output partition %d: %w", sp.Run, sp.Part, err)
		}
		sink = f
	} else {
		// The partition is in memory until it is stored.
		w.store.reserve(size)
		defer w.store.unreserve(size)
		m, err := newMemChunk(dt, total)
		if err != nil {
			return nil, fmt.Errorf("shuffle %s: %w", sp.Run, err)
		}
		sink = m
	}
	ok := false
	defer func() {
		if !ok {
			sink.abort()
		}
	}()
	at := 0
	for i := range sp.NIn {
		p := first
		if i > 0 {
			if p, err = piece(i); err != nil {
				return nil, err
			}
		}
		if p.DType() != dt {
			return nil, fmt.Errorf("shuffle %s: column %d is %v in input partition 0, %v in %d", sp.Run, sp.Col, dt, p.DType(), i)
		}
		if at+p.Len() > total {
			return nil, fmt.Errorf("shuffle %s: output partition %d: more than the %d rows sent to it", sp.Run, sp.Part, total)
		}
		if err := sink.write(at, p); err != nil {
			return nil, fmt.Errorf("shuffle %s: output partition %d: %w", sp.Run, sp.Part, err)
		}
		at += p.Len()
		first = dtype.Slice{}
		w.store.drop(shardKey(sp.Run, sp.Part, i, sp.Col))
	}
	if at != total {
		return nil, fmt.Errorf("shuffle %s: output partition %d: %d rows received, %d sent", sp.Run, sp.Part, at, total)
	}
	v, err := sink.done(total)
	if err != nil {
		return nil, fmt.Errorf("shuffle %s: output partition %d: %w", sp.Run, sp.Part, err)
	}
	ok = true
	m, inMem := sink.(*memChunk)
	if !inMem || w.cfg.GPU == "" {
		return v, nil
	}
	o := &plan.Output{Shape: []int{total}, Data: m.vals}
	// A GPU worker keeps the output partition in device memory, as its persisted chunks: the
	// tasks that read it next (a merge's, a groupby's) read it there in place.
	dv, err := uploadShardPiece(o)
	if err == nil {
		return dv, nil
	}
	o.HostFallback = fmt.Sprintf("shuffle output partition kept in host memory, not on the GPU: %v", err)
	return []*plan.Output{o}, nil
}

// shuffleParts returns each row's output partition: by hash of the keys (hashParts), or by
// range of the first key (sp.Range), and where that ran.
func (w *worker) shuffleParts(ctx context.Context, cols []dtype.Slice, sp shuffleSpec) ([]int32, string, error) {
	if r := sp.Range; r != nil {
		if len(sp.Keys) == 0 || sp.Keys[0] < 0 || sp.Keys[0] >= len(cols) || len(r.Bounds)+1 != sp.N {
			return nil, "", fmt.Errorf("a range shuffle on keys %v with %d bounds into %d partitions", sp.Keys, len(r.Bounds), sp.N)
		}
		var ok []bool
		if len(sp.Valid) > 0 && sp.Valid[0] >= 0 {
			if v := sp.Valid[0]; v >= len(cols) || cols[v].DType() != dtype.Bool || cols[v].Len() != cols[sp.Keys[0]].Len() {
				return nil, "", fmt.Errorf("validity column %d of the range key", v)
			}
			ok = cols[sp.Valid[0]].Bools()
		}
		return rangeParts(cols[sp.Keys[0]], ok, r.Bounds, r.Desc, r.NullsFirst), "range partitioning on the CPU", nil
	}
	k, err := shuffleKeys(cols, sp.Keys, sp.Valid)
	if err != nil {
		return nil, "", err
	}
	return w.hashParts(ctx, k, sp.N)
}

// shuffleDone is the value of a transfer task: the rows it sent per output partition, and
// where its partitioning ran (for Path).
type shuffleDone struct {
	Counts []int64
	Where  string
}

func decodeShuffleDone(v any, n int) (*shuffleDone, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("transfer returned %T", v)
	}
	var d shuffleDone
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&d); err != nil {
		return nil, fmt.Errorf("decode a transfer's result: %w", err)
	}
	if len(d.Counts) != n {
		return nil, fmt.Errorf("transfer returned %d counts for %d partitions", len(d.Counts), n)
	}
	return &d, nil
}
