package dataframe

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// columnShuffler is a scheduler that moves partitions between its workers itself: a cluster
// client (cluster.Client.ShuffleColumns). dataframe does not import cluster; this is the seam.
type columnShuffler interface {
	ShuffleColumns(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, n int) ([]*gpuarray.Array, []int, error)
}

// clusterShuffle hash-partitions a frame's columns on its workers when opts name a cluster
// that shuffles (On(c)) and the key columns are numeric, bool or datetime (strings and
// categoricals are hashed by their bytes, which stay in this process): the columns are
// persisted there first (those persisted already stay), then moved worker to worker. It
// returns nil, nil when it does not apply. full reports that no partition came out empty.
func (f *Frame) clusterShuffle(on []string, n int, opts []ComputeOption) (out *Frame, full bool, err error) {
	tg, err := gpuarray.TargetOf(opts...)
	if err != nil {
		return nil, false, err
	}
	sh, ok := tg.Scheduler.(columnShuffler)
	if !ok {
		return nil, false, nil
	}
	for _, name := range on {
		fd, err := f.field(name)
		if err != nil {
			return nil, false, err
		}
		if fd.DType == String || fd.DType == Category {
			return nil, false, nil
		}
	}
	p := f.Persist(opts...)
	if err := p.Err(); err != nil {
		return nil, false, err
	}
	t := p.done
	// The arrays to move: every column's values and validity, then the rows' positions.
	var arrs []*gpuarray.Array
	at := map[*gpuarray.Array]int{}
	add := func(a *gpuarray.Array) int {
		if i, ok := at[a]; ok {
			return i
		}
		at[a] = len(arrs)
		arrs = append(arrs, a)
		return len(arrs) - 1
	}
	valIdx := make([]int, len(t.cols))
	validIdx := make([]int, len(t.cols))
	for i, c := range t.cols {
		valIdx[i] = add(c.arr)
		validIdx[i] = -1
		if c.valid != nil {
			validIdx[i] = add(c.valid)
		}
	}
	if t.rows != nil {
		if t.rows = t.rows.Persist(opts...); t.rows.Err() != nil {
			return nil, false, t.rows.Err()
		}
	}
	rowsIdx := add(t.rows)
	var keys, valid []int
	for _, name := range on {
		for i, c := range t.cols {
			if c.name == name {
				keys, valid = append(keys, valIdx[i]), append(valid, validIdx[i])
			}
		}
	}
	ctx := tg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	moved, parts, err := sh.ShuffleColumns(ctx, arrs, keys, valid, n)
	if err != nil {
		return nil, false, err
	}
	res := &table{rows: moved[rowsIdx]}
	for i, c := range t.cols {
		d := *c
		d.arr = moved[valIdx[i]]
		if validIdx[i] >= 0 {
			d.valid = moved[validIdx[i]]
		}
		res.cols = append(res.cols, &d)
	}
	rc := &runCtx{opts: opts, target: tg,
		notes: []string{fmt.Sprintf("shuffle: hash partitioning on the cluster's workers into %d partitions, moved worker to worker", n)}}
	return rc.computed(f, res), len(parts) == n, nil
}
