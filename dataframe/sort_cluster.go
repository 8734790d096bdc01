package dataframe

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// columnSorter is a scheduler that sorts partitions on its workers itself: a cluster client
// (cluster.Client.SortColumns). dataframe does not import cluster; this is the seam.
type columnSorter interface {
	SortColumns(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, desc []bool, nullsFirst bool, n int) ([]*gpuarray.Array, error)
}

// clusterOrHost is hostStep with a first try on a cluster: onCluster returns ok false where
// it does not apply, and the host step runs.
func (f *Frame) clusterOrHost(what string, fields []Field, onCluster func(rc *runCtx) (*table, bool, error), fn func(rc *runCtx, ht *hostTable) (*hostTable, error)) *Frame {
	g := f.hostStep(what, fields, fn)
	if g.err != nil {
		return g
	}
	host := g.read
	g.read = func(rc *runCtx, need map[string]bool) (*table, error) {
		t, ok, err := onCluster(rc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return t, nil
		}
		return host(rc, need)
	}
	return g
}

// clusterSort sorts f's rows on the workers of the cluster rc's options name (On(c)), by
// cluster.Client.SortColumns into at most n range partitions: f is persisted there, sampled
// for the bounds, range-partitioned worker to worker and each partition sorted where it is.
// The result stays on the workers. ok is false where it does not apply: no such cluster, a
// string or categorical key (their order is by the strings, in this process), no rows.
func clusterSort(rc *runCtx, f *Frame, by []string, o sortOpts, n int) (*table, bool, error) {
	cs, isSorter := rc.target.Scheduler.(columnSorter)
	if !isSorter {
		return nil, false, nil
	}
	if len(o.asc) > 1 && len(o.asc) != len(by) {
		return nil, false, fmt.Errorf("%d directions for %d keys", len(o.asc), len(by))
	}
	desc := make([]bool, len(by))
	for i, name := range by {
		fd, err := f.field(name)
		if err != nil {
			return nil, false, err
		}
		if fd.DType == String || fd.DType == Category {
			rc.host("sort on the cluster: key %q is %v, ordered by its strings, which are in this process, so the rows are sorted here", name, fd.DType)
			return nil, false, nil
		}
		if len(o.asc) == 1 {
			desc[i] = !o.asc[0]
		} else if len(o.asc) > 1 {
			desc[i] = !o.asc[i]
		}
	}
	t, s, ok, err := persistedSide(rc, f)
	if !ok || err != nil {
		return nil, false, err
	}
	var keys, valid []int
	for _, name := range by {
		c, err := t.find(name)
		if err != nil {
			return nil, false, err
		}
		keys, valid = append(keys, s.add(c.arr)), append(valid, s.add(c.valid))
	}
	ctx := rc.target.Context
	if ctx == nil {
		ctx = context.Background()
	}
	out, err := cs.SortColumns(ctx, s.arrs, keys, valid, desc, o.nullsFirst, n)
	if err != nil {
		return nil, false, err
	}
	lens := out[0].Chunks()[0]
	res := &table{rows: gpuarray.Arange(rowsOf(t), gpuarray.WithDType(gpuarray.Int64), gpuarray.ChunkSizes(lens))}
	for _, c := range t.cols {
		d := *c
		d.arr = out[s.at[c.arr]]
		if c.valid != nil {
			d.valid = out[s.at[c.valid]]
		}
		res.cols = append(res.cols, &d)
	}
	rc.mu.Lock()
	rc.notes = append(rc.notes, fmt.Sprintf("sort: sampled quantiles, %d range partitions moved worker to worker and sorted on the cluster's workers (in their host memory, GPU workers' too)", len(lens)))
	rc.mu.Unlock()
	return res, true, nil
}

// clusterDivisions returns the divisions of a frame sorted on the cluster on index: the
// first value of every partition, then the last value that is not null, read from the
// workers (a value per partition, the null count).
func clusterDivisions(c *Frame, index string, opts []gpuarray.ComputeOption) ([]any, error) {
	col, err := c.done.find(index)
	if err != nil {
		return nil, err
	}
	lens := partLens(c.done)
	total := rowsOf(c.done)
	last := total - 1
	if col.valid != nil {
		nv, err := col.valid.AsType(gpuarray.Int64).Sum().Float64(opts...)
		if err != nil {
			return nil, err
		}
		last = int(nv) - 1 // nulls come last
	}
	at := make([]int64, 0, len(lens)+1)
	off := 0
	for _, l := range lens {
		at = append(at, int64(off))
		off += l
	}
	at = append(at, int64(max(last, 0)))
	vals, err := col.arr.Take(gpuarray.FromSliceInt64(at)).Values(opts...)
	if err != nil {
		return nil, err
	}
	h := &hostCol{name: index, dt: col.dt, vals: vals, heap: col.heap}
	if col.valid != nil {
		if h.valid, err = col.valid.Take(gpuarray.FromSliceInt64(at)).ToSliceBool(opts...); err != nil {
			return nil, err
		}
	}
	out := make([]any, len(at))
	for i := range at {
		out[i] = valueAt(h, i)
	}
	if last < 0 {
		out[len(out)-1] = nil
	}
	return out, nil
}
