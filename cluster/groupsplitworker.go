package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// groupSplitTask runs a task of a groupby split out by key hash (GroupPartialsSplit).
func (w *worker) groupSplitTask(ctx context.Context, t *taskMsg, resolve func(string) (any, error)) (any, error) {
	var sp groupSplitSpec
	if err := gob.NewDecoder(bytes.NewReader(t.Spec.Chunk)).Decode(&sp); err != nil {
		return nil, fmt.Errorf("decode groupby task: %w", err)
	}
	switch t.Spec.Kind {
	case kindGroupSplit:
		ins := make([]any, len(t.Spec.Inputs))
		for i, ref := range t.Spec.Inputs {
			v, err := resolve(ref)
			if err != nil {
				return nil, fmt.Errorf("groupby: input %d: %w", i, err)
			}
			ins[i] = v
		}
		return w.groupSplit(ctx, sp, ins)
	case kindGroupSplitCombine:
		return w.groupSplitCombine(sp.Shuffle)
	}
	return nil, fmt.Errorf("unknown groupby task kind %q", t.Spec.Kind)
}

// groupSplit aggregates one input partition where it is held (groupPartial), splits the
// partial by key hash into the output partitions (hashagg's Split, the buckets the notebook's
// SplitOut makes) and pushes each piece, gob-encoded as one byte column of a shuffle shard, to
// the worker owning its output partition, as a shuffle's transfer does. It returns the groups
// sent per output partition and where the partition was aggregated (shuffleDone).
func (w *worker) groupSplit(ctx context.Context, sp groupSplitSpec, ins []any) ([]byte, error) {
	ss := sp.Shuffle
	if len(ss.Owners) != ss.N || ss.N < 1 {
		return nil, fmt.Errorf("groupby %s: %d owners for %d partitions", ss.Run, len(ss.Owners), ss.N)
	}
	p, where, err := w.groupPartial(ctx, sp.Group, ins)
	if err != nil {
		return nil, fmt.Errorf("groupby partial: %w", err)
	}
	parts := p.Split(ss.N)
	counts := make([]int64, ss.N)
	byOwner := map[string]*shardBatch{}
	var bytesOut int64
	for b, q := range parts {
		enc, err := encodeGob(q)
		if err != nil {
			return nil, fmt.Errorf("groupby %s: encode the partial of output partition %d: %w", ss.Run, b, err)
		}
		piece, err := dtype.Of(enc)
		if err != nil {
			return nil, err
		}
		counts[b] = int64(q.N)
		bytesOut += int64(len(enc))
		o := byOwner[ss.Owners[b]]
		if o == nil {
			o = &shardBatch{}
			byOwner[ss.Owners[b]] = o
		}
		o.out = append(o.out, b)
		o.cols = append(o.cols, []dtype.Slice{piece})
	}
	// The partial's pieces are in memory until pushed.
	w.store.reserve(uint64(bytesOut))
	defer w.store.unreserve(uint64(bytesOut))
	if err := w.pushBatches(ctx, ss, byOwner); err != nil {
		return nil, err
	}
	w.shuf.sent.Add(bytesOut)
	b, err := encodeGob(shuffleDone{Counts: counts, Where: "partitions " + where})
	if err != nil {
		return nil, fmt.Errorf("groupby %s: encode the split's result: %w", ss.Run, err)
	}
	return b, nil
}

// groupSplitCombine combines the pieces of output partition sp.Part that every input
// partition's split pushed here, in input order (groupFanIn at a time: the pieces are decoded
// a batch at a time, not all at once), drops them, and returns the combined partial
// (groupResult).
func (w *worker) groupSplitCombine(sp shuffleSpec) ([]byte, error) {
	var acc *hashagg.Partial
	batch := make([]*hashagg.Partial, 0, groupFanIn)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ps := batch
		if acc != nil {
			ps = append([]*hashagg.Partial{acc}, batch...)
		}
		if len(ps) == 1 {
			acc = ps[0]
		} else {
			c, err := hashagg.Combine(ps...)
			if err != nil {
				return fmt.Errorf("groupby combine: %w", err)
			}
			acc = c
		}
		batch = batch[:0]
		return nil
	}
	for i := range sp.NIn {
		k := shardKey(sp.Run, sp.Part, i, 0)
		b, err := w.store.blob(k)
		if err != nil {
			return nil, fmt.Errorf("groupby %s: output partition %d lacks the groups of input partition %d (lost with a worker?): %w", sp.Run, sp.Part, i, err)
		}
		piece, err := shardPiece(b)
		if err != nil {
			return nil, fmt.Errorf("groupby %s: output partition %d, input partition %d: %w", sp.Run, sp.Part, i, err)
		}
		var q hashagg.Partial
		if err := gob.NewDecoder(bytes.NewReader(piece.Bytes())).Decode(&q); err != nil {
			return nil, fmt.Errorf("groupby %s: decode the partial of input partition %d: %w", sp.Run, i, err)
		}
		batch = append(batch, &q)
		w.store.drop(k)
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if acc == nil {
		return nil, fmt.Errorf("groupby %s: output partition %d: no input partitions", sp.Run, sp.Part)
	}
	r := &groupResult{P: acc, Where: map[string]int{w.cfg.Name + "\x00combines of split partials on the CPU (hashagg.Combine)": 1}}
	out, err := encodeGob(r)
	if err != nil {
		return nil, fmt.Errorf("groupby: encode partial: %w", err)
	}
	return out, nil
}
