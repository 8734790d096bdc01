package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// DistinctColumns drops the rows of 1-D arrays persisted on this cluster (the columns of a
// frame, each chunk a partition) whose keys repeat, on the workers: the rows are
// hash-partitioned on the key columns keys (valid: their validity columns, -1: none; encoded
// as ShuffleColumns encodes them, nulls equal to nulls) into n partitions worker to worker,
// then a task per partition keeps the first row of each key (keep "first"), the last
// ("last"), or the rows of keys that do not repeat ("none"), and a gather task per column
// keeps them there. Within a partition the rows keep their order. It returns nil when no row
// is left. A worker lost mid-run makes it start again, as in ShuffleColumns. It is plumbing
// for package dataframe (DropDuplicates on a cluster).
func (c *Client) DistinctColumns(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, keep string, n int) ([]*gpuarray.Array, error) {
	ctx = ctxOr(ctx)
	if keep != "first" && keep != "last" && keep != "none" {
		return nil, fmt.Errorf("cluster: distinct: keep %q (want first, last or none)", keep)
	}
	var out []*gpuarray.Array
	err := c.rerunLost(ctx, "distinct", func(ws []WorkerInfo) (err error) {
		out, err = c.distinctRun(ctx, ws, cols, keys, valid, keep, n)
		return err
	})
	return out, err
}

func (c *Client) distinctRun(ctx context.Context, ws []WorkerInfo, cols []*gpuarray.Array, keys, valid []int, keep string, n int) ([]*gpuarray.Array, error) {
	if len(ws) == 0 {
		return nil, errors.New("no workers")
	}
	moved, _, err := c.ShuffleColumns(ctx, cols, keys, valid, n)
	if err != nil {
		return nil, c.lostOr(ws, err)
	}
	defer func() {
		for _, a := range moved {
			a.Release()
		}
	}()
	var mc [][]plan.Kept
	for j, a := range moved {
		k := gpuarray.KeptChunks(a, c)
		if k == nil {
			return nil, fmt.Errorf("shuffled column %d is not on this cluster", j)
		}
		mc = append(mc, k)
	}
	run := c.s.newKey("distinct")
	nq := len(mc[0])
	rows := make([]*task, nq)
	lens := make([]*task, nq)
	for q := 0; q < nq; q++ {
		t := &task{key: fmt.Sprintf("%s-rows-%d", run, q), maxRetries: c.retries, refs: 1, priority: c.priority}
		kp, err := c.refsOf(t, mc, keys, q)
		if err != nil {
			return nil, err
		}
		vp, err := c.refsOf(t, mc, valid, q)
		if err != nil {
			return nil, err
		}
		spec, err := encodeSortSpec(sortSpec{Keys: kp, Valid: vp, Keep: keep})
		if err != nil {
			return nil, err
		}
		t.spec.Kind, t.spec.Chunk = kindDistinctRows, spec
		rows[q] = t
		if spec, err = encodeJoinSpec(joinSpec{}); err != nil {
			return nil, err
		}
		lens[q] = &task{key: fmt.Sprintf("%s-len-%d", run, q), spec: taskSpec{Kind: kindJoinLen, Chunk: spec, Inputs: []string{t.key}},
			deps: []*task{t}, maxRetries: c.retries, refs: 1, priority: c.priority}
	}
	if err := c.s.add(append(slices.Clone(rows), lens...)); err != nil {
		return nil, err
	}
	fs := make([]*Future, nq)
	for q, t := range lens {
		fs[q] = c.newFuture(t, nil)
	}
	defer func() {
		for _, f := range fs {
			f.Release()
		}
	}()
	counts := make([]int, nq)
	for q, f := range fs {
		if err := c.waitShuffleTask(ctx, f.t, ws); err != nil {
			for _, t := range rows {
				c.s.release(t.key)
			}
			return nil, fmt.Errorf("partition %d: %w", q, err)
		}
		v, err := f.Result(ctx)
		m, ok := v.([]int64)
		if err != nil || !ok || len(m) != 1 {
			for _, t := range rows {
				c.s.release(t.key)
			}
			return nil, c.lostOr(ws, fmt.Errorf("partition %d: its length: %v (a %T)", q, err, v))
		}
		counts[q] = int(m[0])
	}
	return c.gatherRows(ctx, ws, run, moved, mc, rows, counts, "distinct: output pieces stored")
}
