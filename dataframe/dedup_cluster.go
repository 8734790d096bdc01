package dataframe

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// columnDistinct is a scheduler that drops repeated rows on its workers itself: a cluster
// client (cluster.Client.DistinctColumns). dataframe does not import cluster; this is the seam.
type columnDistinct interface {
	DistinctColumns(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, keep string, n int) ([]*gpuarray.Array, error)
}

// clusterDistinct runs DropDuplicates on the workers of the cluster rc's options name: f is
// persisted there, hash-partitioned on subset worker to worker into n partitions, and each
// partition keeps its rows where it is. String and categorical keys are coded in this
// process first (Path says so). ok is false where it does not apply (no such cluster, no
// rows).
func clusterDistinct(rc *runCtx, f *Frame, subset []string, keep string, n int) (*table, bool, error) {
	cd, isDistinct := rc.target.Scheduler.(columnDistinct)
	if !isDistinct {
		return nil, false, nil
	}
	t, s, ok, err := persistedSide(rc, f)
	if !ok || err != nil {
		return nil, false, err
	}
	var keys, valid []int
	for _, name := range subset {
		c, err := t.find(name)
		if err != nil {
			return nil, false, err
		}
		k := c.arr
		if c.dt == String || c.dt == Category {
			ht, err := rc.toHost(&table{cols: []*column{c}, rows: t.rows})
			if err != nil {
				return nil, false, err
			}
			codes, _ := stringCodes(ht.cols[0], map[string]int64{})
			if k = gpuarray.FromSliceInt64(codes, gpuarray.ChunkSizes(partLens(t))).Persist(rc.opts...); k.Err() != nil {
				return nil, false, k.Err()
			}
			rc.host("drop duplicates: string key %q coded on the host", name)
		}
		keys, valid = append(keys, s.add(k)), append(valid, s.add(c.valid))
	}
	ctx := rc.target.Context
	if ctx == nil {
		ctx = context.Background()
	}
	out, err := cd.DistinctColumns(ctx, s.arrs, keys, valid, keep, n)
	if err != nil {
		return nil, false, err
	}
	rc.mu.Lock()
	rc.notes = append(rc.notes, fmt.Sprintf("drop duplicates: hash-partitioned on the key into %d partitions worker to worker, a hash table per partition on the cluster's workers (in their host memory)", n))
	rc.mu.Unlock()
	if out == nil {
		ht := &hostTable{}
		for _, c := range t.cols {
			adt, _ := c.dt.array()
			ht.cols = append(ht.cols, &hostCol{name: c.name, dt: c.dt, vals: dtype.Make(adt, 0), heap: c.heap})
		}
		res, err := tableOf(ht)
		return res, true, err
	}
	lens := out[0].Chunks()[0]
	total := 0
	for _, l := range lens {
		total += l
	}
	res := &table{rows: gpuarray.Arange(total, gpuarray.WithDType(gpuarray.Int64), gpuarray.ChunkSizes(lens))}
	for _, c := range t.cols {
		d := *c
		d.arr = out[s.at[c.arr]]
		if c.valid != nil {
			d.valid = out[s.at[c.valid]]
		}
		res.cols = append(res.cols, &d)
	}
	return res, true, nil
}
