package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Task kinds of a groupby split out by key hash (GroupPartialsSplit); their groupSplitSpec is
// gob-encoded in taskSpec.Chunk.
const (
	kindGroupSplit        = "groupby-split"         // aggregate a partition, split its partial, push the pieces to their owners
	kindGroupSplitCombine = "groupby-split-combine" // combine an output partition's pieces on its owner
)

// groupSplitPrefix begins the run names of split groupbys: their shards are encoded partials,
// which a GPU worker keeps in host memory (not its device's, as a shuffle's columns).
const groupSplitPrefix = "groupby-split"

// groupSplitSpec says what one task of a split groupby does: the aggregation of its
// partition (Group) and the shuffle of the partials (Shuffle: the run, partitions, owners).
type groupSplitSpec struct {
	Group   groupSpec
	Shuffle shuffleSpec
}

// GroupPartialsSplit is GroupPartials for many groups (dataframe's SplitOut(n)): a task per
// partition aggregates it where it is held, splits its partial by key hash into n output
// partitions and pushes each piece straight to the worker owning that output partition over
// the workers' data ports (the worker-to-worker shuffle, counted in their memory limits and
// spilled as shards are); a task per output partition then combines its pieces there, in
// input order. No worker and no process holds the partials of every group at once: each
// output partition's combined partial comes to this process alone. It returns the n
// partials, output partition b holding the keys that hashagg's Split puts in bucket b (so the
// groups land in the partitions where the notebook's SplitOut puts them), and a note of
// where each step ran. A worker lost meanwhile makes the run start again once the chunks it
// held are computed again from the graph. It is plumbing for package dataframe (GroupBy with
// SplitOut on a cluster).
func (c *Client) GroupPartialsSplit(ctx context.Context, cols []*gpuarray.Array, keys, keyValid, vals, valValid []int, pos int, specs []hashagg.Spec, n int) ([]*hashagg.Partial, string, error) {
	ctx = ctxOr(ctx)
	if len(cols) == 0 || len(keys) == 0 || n < 1 {
		return nil, "", fmt.Errorf("cluster: groupby: %d columns, %d keys, %d output partitions", len(cols), len(keys), n)
	}
	in := make([][]plan.Kept, len(cols))
	for j, a := range cols {
		if in[j] = gpuarray.KeptChunks(a, c); in[j] == nil {
			return nil, "", fmt.Errorf("cluster: groupby: column %d is not persisted on this cluster", j)
		}
		if len(in[j]) != len(in[0]) || !slices.Equal(a.Chunks()[0], cols[0].Chunks()[0]) {
			return nil, "", fmt.Errorf("cluster: groupby: column %d is not partitioned as column 0", j)
		}
	}
	gs := groupSpec{Keys: keys, KeyValid: keyValid, Vals: vals, ValValid: valValid, Pos: pos, Specs: specs}
	var out []*hashagg.Partial
	var note string
	err := c.rerunLost(ctx, "groupby", func(ws []WorkerInfo) (err error) {
		out, note, err = c.groupSplitRun(ctx, ws, in, gs, n)
		return err
	})
	return out, note, err
}

// groupSplitRun is one run of a split groupby on the workers there are now.
func (c *Client) groupSplitRun(ctx context.Context, ws []WorkerInfo, in [][]plan.Kept, gs groupSpec, n int) ([]*hashagg.Partial, string, error) {
	if len(ws) == 0 {
		return nil, "", errors.New("no workers")
	}
	run := c.s.newKey(groupSplitPrefix)
	owners, ownerNames, err := shuffleOwners(ws, n)
	if err != nil {
		return nil, "", err
	}
	var futures []*Future
	done := false
	defer func() { c.endShuffleRun(run, ws, futures, done, nil) }()
	nin := len(in[0])
	splits := make([]*task, nin)
	for i := range splits {
		spec, err := encodeGob(groupSplitSpec{Group: gs, Shuffle: shuffleSpec{Run: run, Part: i, N: n, NIn: nin, Owners: owners}})
		if err != nil {
			return nil, "", fmt.Errorf("encode groupby task: %w", err)
		}
		t, err := c.inputTask(fmt.Sprintf("%s-split-%d", run, i), kindGroupSplit, spec, in, i)
		if err != nil {
			return nil, "", err
		}
		splits[i] = t
	}
	if err := c.s.add(splits); err != nil {
		return nil, "", err
	}
	for _, t := range splits {
		futures = append(futures, c.newFuture(t, nil))
	}
	sentBar := display.NewProgress("groupby: partials split and sent", int64(nin))
	moved := newShuffleBytes(c, ws)
	where := map[string]int{}
	groups := int64(0)
	for i, f := range futures {
		if err := c.waitShuffleTask(ctx, f.t, ws); err != nil {
			return nil, "", fmt.Errorf("input partition %d: %w", i, err)
		}
		v, err := f.Result(ctx)
		if err != nil {
			return nil, "", c.lostOr(ws, fmt.Errorf("input partition %d: %w", i, err))
		}
		d, err := decodeShuffleDone(v, n)
		if err != nil {
			return nil, "", fmt.Errorf("input partition %d: %w", i, err)
		}
		for _, k := range d.Counts {
			groups += k
		}
		where[f.workerName()+"\x00"+d.Where]++
		sentBar.Add(1)
		moved.update()
	}
	sentBar.Done()
	// One combine per output partition, on its owner, after every split (the barrier).
	combines := make([]*task, n)
	for p := range combines {
		spec, err := encodeGob(groupSplitSpec{Shuffle: shuffleSpec{Run: run, Part: p, N: n, NIn: nin}})
		if err != nil {
			return nil, "", fmt.Errorf("encode groupby task: %w", err)
		}
		combines[p] = &task{key: fmt.Sprintf("%s-combine-%d", run, p), spec: taskSpec{Kind: kindGroupSplitCombine, Chunk: spec},
			deps: splits, restrict: []string{ownerNames[p]}, maxRetries: c.retries, refs: 1, priority: c.priority}
	}
	if err := c.s.add(combines); err != nil {
		return nil, "", err
	}
	cf := make([]*Future, n)
	for p, t := range combines {
		cf[p] = c.newFuture(t, nil)
		futures = append(futures, cf[p])
	}
	out := make([]*hashagg.Partial, n)
	combineBar := display.NewProgress("groupby: output partitions combined", int64(n))
	for p, f := range cf {
		if err := c.waitShuffleTask(ctx, f.t, ws); err != nil {
			return nil, "", fmt.Errorf("output partition %d: %w", p, err)
		}
		v, err := f.Result(ctx)
		if err != nil {
			return nil, "", c.lostOr(ws, fmt.Errorf("output partition %d: %w", p, err))
		}
		r, err := decodeGroupResult(v)
		if err != nil {
			return nil, "", fmt.Errorf("output partition %d: %w", p, err)
		}
		out[p] = r.P
		mergeWhere(where, r.Where)
		combineBar.Add(1)
	}
	combineBar.Done()
	moved.update()
	done = true
	lines := make([]string, 0, len(where))
	for _, k := range sortedKeys(where) {
		name, what, _ := strings.Cut(k, "\x00")
		lines = append(lines, fmt.Sprintf("%s: %d %s", name, where[k], what))
	}
	note := fmt.Sprintf("groupby split out: partial aggregates of %d partitions on the workers holding them, split by key hash into %d output partitions and sent worker to worker (shuffle, %d partial groups), combined on each output partition's owner; the %d combined partials came here to be finalized (%s)",
		nin, n, groups, n, strings.Join(lines, "; "))
	return out, note, nil
}
