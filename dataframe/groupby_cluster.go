package dataframe

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// groupPartialer is a scheduler that aggregates partitions where its workers hold them: a
// cluster client (cluster.Client.GroupPartials). dataframe does not import cluster; this is
// the seam.
type groupPartialer interface {
	GroupPartials(ctx context.Context, cols []*gpuarray.Array, keys, keyValid, vals, valValid []int, pos int, specs []hashagg.Spec) (*hashagg.Partial, string, error)
}

// groupSplitter is a scheduler that also splits a groupby's partials over output partitions
// by key hash, worker to worker (cluster.Client.GroupPartialsSplit): SplitOut on a cluster.
type groupSplitter interface {
	GroupPartialsSplit(ctx context.Context, cols []*gpuarray.Array, keys, keyValid, vals, valValid []int, pos int, specs []hashagg.Spec, n int) ([]*hashagg.Partial, string, error)
}

// aggregateOnWorkers runs a groupby on the cluster that rc's options name (On(c)): the key
// and value columns are persisted there (those persisted already stay), each worker folds the
// partitions it holds into partial aggregates (on its GPU where it has one and the grouping is
// dense, on its CPU otherwise) and the partials are combined there as a tree; only the last
// comes to this process, which sorts (Sorted) and decodes it. With SplitOut(n) (and not
// Sorted) the partials are split by key hash on the workers instead and shuffled between them,
// each output partition combined on the worker owning it, so that no one place holds every
// group's partials; the n combined partials come here to be decoded. ok is false
// when it does not apply (no such cluster, string columns, no rows), and the caller's path
// runs.
func aggregateOnWorkers(rc *runCtx, t *table, keys []string, p *aggPlan, splitOut int, sorted bool) (res *table, ok bool, err error) {
	sched, isCluster := rc.target.Scheduler.(groupPartialer)
	keeper, keeps := rc.target.Scheduler.(plan.Keeper)
	if !isCluster || !keeps || len(keys) == 0 {
		return nil, false, nil
	}
	var keyCols, valCols []*column
	for _, names := range [][]string{keys, p.vals} {
		for _, name := range names {
			c, err := t.find(name)
			if err != nil {
				return nil, true, err
			}
			if c.dt == String {
				rc.host("groupby on the cluster: %q is a string column, dictionary-encoded in this process, so the partitions are aggregated here", name)
				return nil, false, nil
			}
			if len(keyCols) < len(keys) {
				keyCols = append(keyCols, c)
			} else {
				valCols = append(valCols, c)
			}
		}
	}
	var arrs []*gpuarray.Array
	add := func(a *gpuarray.Array) (int, error) {
		if a == nil {
			return -1, nil
		}
		a = a.Persist(rc.opts...)
		if err := a.Err(); err != nil {
			return 0, err
		}
		arrs = append(arrs, a)
		return len(arrs) - 1, nil
	}
	cols := func(cs []*column) (idx, valid []int, err error) {
		for _, c := range cs {
			i, err := add(c.arr)
			if err != nil {
				return nil, nil, fmt.Errorf("column %q: %w", c.name, err)
			}
			v, err := add(c.valid)
			if err != nil {
				return nil, nil, fmt.Errorf("column %q's validity: %w", c.name, err)
			}
			idx, valid = append(idx, i), append(valid, v)
		}
		return idx, valid, nil
	}
	kIdx, kValid, err := cols(keyCols)
	if err != nil {
		return nil, true, err
	}
	vIdx, vValid, err := cols(valCols)
	if err != nil {
		return nil, true, err
	}
	pos := -1
	if p.needPos() {
		if pos, err = add(t.rows); err != nil {
			return nil, true, fmt.Errorf("row positions: %w", err)
		}
	}
	for _, a := range arrs {
		if gpuarray.KeptChunks(a, keeper) == nil {
			rc.host("groupby on the cluster: columns held %s, not on the cluster's workers, so the partitions are aggregated here", a.Where())
			return nil, false, nil
		}
	}
	if len(arrs[0].Chunks()) == 0 || len(arrs[0].Chunks()[0]) == 0 {
		return nil, false, nil
	}
	ctx := rc.target.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if splitter, ok := rc.target.Scheduler.(groupSplitter); ok && splitOut > 1 && !sorted {
		parts, note, err := splitter.GroupPartialsSplit(ctx, arrs, kIdx, kValid, vIdx, vValid, pos, p.specs, splitOut)
		if err != nil {
			return nil, true, err
		}
		rc.device(note)
		res, err = finishResults(parts, keyCols, valCols, p, false, false)
		return res, true, err
	}
	all, note, err := sched.GroupPartials(ctx, arrs, kIdx, kValid, vIdx, vValid, pos, p.specs)
	if err != nil {
		return nil, true, err
	}
	rc.device(note)
	res, err = finishAggregate(all, keyCols, valCols, p, false, splitOut, sorted)
	return res, true, err
}
