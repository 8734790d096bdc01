package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// sortSamples is the number of keys sampled per output partition for a sort's bounds.
const sortSamples = 100

// SortColumns sorts the rows of 1-D arrays persisted on this cluster (the columns of a
// frame, each chunk a partition) on the workers, stably, by the key columns keys (valid:
// their validity columns, -1: none; desc: the direction of each; nulls and NaNs first or
// last): a sample task per input partition returns evenly spaced values of the first key,
// from which this process picks the bounds of n range partitions (quantiles, as dask's
// set_index does); a range shuffle moves the rows worker to worker (as ShuffleColumns);
// then a sort task per output partition keeps its rows' stable order where it is, and a
// gather task per column and partition keeps the sorted piece. The partitions, in order,
// hold the stable sort of the input; empty ones are left out, and rows with equal first keys
// share one. Keys are numeric, bool or datetime columns. A worker lost mid-sort makes the
// run start again, as in ShuffleColumns. It is plumbing for package dataframe (SortValues and
// SetIndex on a cluster).
func (c *Client) SortColumns(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, desc []bool, nullsFirst bool, n int) ([]*gpuarray.Array, error) {
	ctx = ctxOr(ctx)
	if len(cols) == 0 || n < 1 || len(keys) == 0 || len(valid) != len(keys) || len(desc) != len(keys) {
		return nil, fmt.Errorf("cluster: sort: %d columns, %d keys (%d validity columns, %d directions) into %d partitions", len(cols), len(keys), len(valid), len(desc), n)
	}
	for i := range keys {
		if keys[i] < 0 || keys[i] >= len(cols) || valid[i] < -1 || valid[i] >= len(cols) {
			return nil, fmt.Errorf("cluster: sort: key %d names no column", i)
		}
	}
	var out []*gpuarray.Array
	err := c.rerunLost(ctx, "sort", func(ws []WorkerInfo) (err error) {
		out, err = c.sortRun(ctx, ws, cols, keys, valid, desc, nullsFirst, n)
		return err
	})
	return out, err
}

// refsOf adds to t the chunk i of every column of cols that idx names (-1: none), returning
// each one's position among t's inputs (-1 for none).
func (c *Client) refsOf(t *task, chunks [][]plan.Kept, idx []int, i int) ([]int, error) {
	pos := make([]int, len(idx))
	for k, j := range idx {
		pos[k] = -1
		if j < 0 {
			continue
		}
		ref := chunks[j][i].Ref()
		if at := slices.Index(t.spec.Inputs, ref); at >= 0 {
			pos[k] = at
			continue
		}
		d, err := c.keptTask(ref)
		if err != nil {
			return nil, err
		}
		t.deps = append(t.deps, d)
		pos[k] = len(t.spec.Inputs)
		t.spec.Inputs = append(t.spec.Inputs, ref)
	}
	return pos, nil
}

// sortRun is one run of a sort on the workers there are now.
func (c *Client) sortRun(ctx context.Context, ws []WorkerInfo, cols []*gpuarray.Array, keys, valid []int, desc []bool, nullsFirst bool, n int) ([]*gpuarray.Array, error) {
	if len(ws) == 0 {
		return nil, errors.New("no workers")
	}
	chunksOf := func(as []*gpuarray.Array) ([][]plan.Kept, error) {
		var out [][]plan.Kept
		for j, a := range as {
			k := gpuarray.KeptChunks(a, c)
			if k == nil {
				return nil, fmt.Errorf("column %d is not persisted on this cluster", j)
			}
			out = append(out, k)
		}
		return out, nil
	}
	in, err := chunksOf(cols)
	if err != nil {
		return nil, err
	}
	run := c.s.newKey("sort")
	// The bounds: a sample of the first key from every input partition.
	nin := len(in[0])
	per := max(1, (sortSamples*n+nin-1)/nin)
	samples := make([]*Future, nin)
	defer func() {
		for _, f := range samples {
			if f != nil {
				f.Release()
			}
		}
	}()
	var sampleTasks []*task
	for i := 0; i < nin; i++ {
		t := &task{key: fmt.Sprintf("%s-sample-%d", run, i), maxRetries: c.retries, refs: 1, priority: c.priority}
		pos, err := c.refsOf(t, in, []int{keys[0], valid[0]}, i)
		if err != nil {
			return nil, err
		}
		spec, err := encodeSortSpec(sortSpec{Keys: pos[:1], Valid: pos[1:], Sample: per})
		if err != nil {
			return nil, err
		}
		t.spec.Kind, t.spec.Chunk = kindSortSample, spec
		sampleTasks = append(sampleTasks, t)
	}
	if err := c.s.add(sampleTasks); err != nil {
		return nil, err
	}
	for i, t := range sampleTasks {
		samples[i] = c.newFuture(t, nil)
	}
	var all []int64
	for i, f := range samples {
		if err := c.waitShuffleTask(ctx, f.t, ws); err != nil {
			return nil, fmt.Errorf("sample of input partition %d: %w", i, err)
		}
		v, err := f.Result(ctx)
		if err != nil {
			return nil, c.lostOr(ws, fmt.Errorf("sample of input partition %d: %w", i, err))
		}
		s, ok := v.([]int64)
		if !ok && v != nil {
			return nil, fmt.Errorf("sample of input partition %d is a %T", i, v)
		}
		all = append(all, s...)
	}
	slices.Sort(all)
	var bounds []int64
	for p := 1; p < n && len(all) > 0; p++ {
		b := all[p*len(all)/n]
		if len(bounds) == 0 || bounds[len(bounds)-1] < b {
			bounds = append(bounds, b)
		}
	}
	moved, _, _, err := c.shuffleColumns(ctx, cols, keys, valid, len(bounds)+1, &shuffleRange{Bounds: bounds, Desc: desc[0], NullsFirst: nullsFirst})
	if err != nil {
		return nil, c.lostOr(ws, err)
	}
	defer func() {
		for _, a := range moved {
			a.Release()
		}
	}()
	mc, err := chunksOf(moved)
	if err != nil {
		return nil, err
	}
	lens := moved[0].Chunks()[0]
	perms := make([]*task, len(lens))
	for q := range lens {
		t := &task{key: fmt.Sprintf("%s-perm-%d", run, q), maxRetries: c.retries, refs: 1, priority: c.priority}
		kp, err := c.refsOf(t, mc, keys, q)
		if err != nil {
			return nil, err
		}
		vp, err := c.refsOf(t, mc, valid, q)
		if err != nil {
			return nil, err
		}
		spec, err := encodeSortSpec(sortSpec{Keys: kp, Valid: vp, Desc: desc, NullsFirst: nullsFirst})
		if err != nil {
			return nil, err
		}
		t.spec.Kind, t.spec.Chunk = kindSortPerm, spec
		perms[q] = t
	}
	if err := c.s.add(perms); err != nil {
		return nil, err
	}
	return c.gatherRows(ctx, ws, run, moved, mc, perms, lens, "sort: output pieces sorted")
}

// gatherRows runs the row tasks rows (one per chunk of cols; each returns the rows to keep
// of its chunk, in order, as a pair of equal int32 outputs) and a gather task per column and
// chunk after it, where the chunk is, keeping the rows of lens[q] > 0 chunks q. It returns the
// gathered columns, held on the workers (nil when no row is kept), and releases the row tasks.
func (c *Client) gatherRows(ctx context.Context, ws []WorkerInfo, run string, cols []*gpuarray.Array, chunks [][]plan.Kept, rows []*task, lens []int, what string) ([]*gpuarray.Array, error) {
	var keep []*task
	done := false
	defer func() {
		if !done {
			var keys []string
			for _, t := range append(slices.Clone(rows), keep...) {
				keys = append(keys, t.key)
			}
			c.s.cancel(keys)
			for _, t := range keep {
				c.s.release(t.key)
			}
		}
		for _, t := range rows {
			c.s.release(t.key)
		}
	}()
	gathers := make([][]*task, len(cols))
	var outLens []int
	for q, t := range rows {
		if lens[q] == 0 {
			continue
		}
		outLens = append(outLens, lens[q])
		for j := range cols {
			spec, err := encodeJoinSpec(joinSpec{Side: 0, NSrc: 1, DType: cols[j].DType()})
			if err != nil {
				return nil, err
			}
			g := &task{key: fmt.Sprintf("%s-gather-%d-%d", run, q, j), spec: taskSpec{Kind: kindJoinGather, Chunk: spec, Keep: true, Inputs: []string{t.key}},
				deps: []*task{t}, maxRetries: c.retries, refs: 1, priority: c.priority}
			if _, err := c.refsOf(g, chunks, []int{j}, q); err != nil {
				return nil, err
			}
			gathers[j] = append(gathers[j], g)
			keep = append(keep, g)
		}
	}
	if len(outLens) == 0 {
		done = true
		return nil, nil
	}
	if err := c.s.add(keep); err != nil {
		keep = nil
		return nil, err
	}
	bar := display.NewProgress(what, int64(len(keep)))
	for _, t := range keep {
		if err := c.waitShuffleTask(ctx, t, ws); err != nil {
			return nil, fmt.Errorf("piece %s: %w", t.key, err)
		}
		bar.Add(1)
	}
	bar.Done()
	done = true
	out := make([]*gpuarray.Array, len(cols))
	var errs []error
	for j, ts := range gathers {
		ks := make([]plan.Kept, len(ts))
		keptMu.Lock()
		for i, t := range ts {
			kept[keptID{c.s, t.key}] = t
			ks[i] = &keptChunk{f: c.newFuture(t, nil)}
		}
		keptMu.Unlock()
		var err error
		if out[j], err = gpuarray.FromKept(c, cols[j].DType(), outLens, ks); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, a := range out {
			if a != nil {
				a.Release()
			}
		}
		return nil, err
	}
	return out, nil
}
