package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// shuffleAttempts bounds the runs of one shuffle: a run that loses a worker starts again.
const shuffleAttempts = 4

// ShuffleColumns hash-partitions the rows of 1-D arrays persisted on this cluster (the columns
// of a frame, each chunk a partition) into n partitions, moving them worker to worker over the
// workers' data ports, never through the scheduler or this process: a transfer task per input
// partition hash-splits it where it is held (on a GPU worker with its GPU's hash
// partitioning kernel) and pushes each piece to the worker owning its output partition, which
// keeps it in its store (counted in its memory limit from its first byte received, spilled to
// disk beyond it; on a GPU worker in device memory first); then an unpack task per output
// partition and column joins the pieces there, as a kept chunk (on a GPU worker, on its
// device). keys are the columns hashed, valid their validity columns (-1: none), encoded
// as dataframe's host shuffle encodes them so equal keys land in partitions of one number.
//
// Output partitions with no rows are left out. It returns the shuffled columns, held on the
// workers, and each output partition's number. A worker lost mid-shuffle (killed, restarted)
// makes the run start again on the workers there are, after inputs it held are computed
// again from the graph; the result equals that of a run without the loss. It is plumbing for
// package dataframe (Frame.Shuffle on a cluster).
func (c *Client) ShuffleColumns(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, n int) ([]*gpuarray.Array, []int, error) {
	out, parts, _, err := c.shuffleColumns(ctx, cols, keys, valid, n, nil)
	return out, parts, err
}

// ShuffleColumnsNote is ShuffleColumns that also returns a note for Path: where each
// worker's input partitions were partitioned (on a GPU worker's GPU with the hash
// partitioning kernel, else on its CPU, and why). It is plumbing for package dataframe.
func (c *Client) ShuffleColumnsNote(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, n int) ([]*gpuarray.Array, []int, string, error) {
	return c.shuffleColumns(ctx, cols, keys, valid, n, nil)
}

// shuffleColumns is ShuffleColumnsNote, by range of the first key when rg is not nil.
func (c *Client) shuffleColumns(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, n int, rg *shuffleRange) ([]*gpuarray.Array, []int, string, error) {
	ctx = ctxOr(ctx)
	if len(cols) == 0 || n < 1 {
		return nil, nil, "", fmt.Errorf("cluster: shuffle: %d columns into %d partitions", len(cols), n)
	}
	in := make([][]plan.Kept, len(cols))
	for j, a := range cols {
		if in[j] = gpuarray.KeptChunks(a, c); in[j] == nil {
			return nil, nil, "", fmt.Errorf("cluster: shuffle: column %d is not persisted on this cluster", j)
		}
		if len(in[j]) != len(in[0]) || !slices.Equal(a.Chunks()[0], cols[0].Chunks()[0]) {
			return nil, nil, "", fmt.Errorf("cluster: shuffle: column %d is not partitioned as column 0", j)
		}
	}
	var out []*gpuarray.Array
	var parts []int
	var note string
	err := c.rerunLost(ctx, "shuffle", func(ws []WorkerInfo) (err error) {
		out, parts, note, err = c.shuffleRun(ctx, ws, cols, in, keys, valid, n, rg)
		return err
	})
	return out, parts, note, err
}

// partitionNote says where the transfers partitioned their input partitions: per worker and
// place, how many.
func partitionNote(where map[string]int) string {
	lines := make([]string, 0, len(where))
	for _, k := range sortedKeys(where) {
		name, what, _ := strings.Cut(k, "\x00")
		lines = append(lines, fmt.Sprintf("%s: %d input partitions, %s", name, where[k], what))
	}
	return "partitioned where held (" + strings.Join(lines, "; ") + ")"
}

// rerunLost calls run with the workers of the moment until it succeeds, at most
// shuffleAttempts times; it runs again only when the failure was a lost worker (the parts the
// dead worker held are recomputed from the graph on the next run). The error names what ran
// ("cluster: WHAT: ...") and every attempt's failure.
func (c *Client) rerunLost(ctx context.Context, what string, run func(ws []WorkerInfo) error) error {
	var errs []error
	for attempt := 0; attempt < shuffleAttempts; attempt++ {
		ws := c.WorkerInfo()
		err := run(ws)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
		// A peer that a transfer could not reach may be a worker the scheduler has not yet
		// seen go: wait for the workers to change before calling it a failure.
		if !errors.Is(err, errShuffleLost) && !c.waitLost(ctx, ws, shuffleLostWait) {
			break // not a lost worker: running again would fail again
		}
	}
	return fmt.Errorf("cluster: %s: %w", what, errors.Join(errs...))
}

// shuffleLostWait bounds the wait, after a run failed, for the workers to change; past it the
// failure is the run's own.
const shuffleLostWait = 30 * time.Second

// errShuffleLost marks a run that failed because a worker went away.
var errShuffleLost = errors.New("a worker was lost during the shuffle")

func workerIncarnations(ws []WorkerInfo) map[string]int {
	m := map[string]int{}
	for _, w := range ws {
		m[w.Name] = w.PID
	}
	return m
}

// shuffleRun is one run of a shuffle on the workers there are now.
func (c *Client) shuffleRun(ctx context.Context, ws []WorkerInfo, cols []*gpuarray.Array, in [][]plan.Kept, keys, valid []int, n int, rg *shuffleRange) ([]*gpuarray.Array, []int, string, error) {
	if len(ws) == 0 {
		return nil, nil, "", errors.New("no workers")
	}
	run := c.s.newKey("shuffle")
	owners, ownerNames, err := shuffleOwners(ws, n)
	if err != nil {
		return nil, nil, "", err
	}
	var futures []*Future
	var unpacked []*task
	done := false
	defer func() {
		c.endShuffleRun(run, ws, futures, done, func() {
			for _, t := range unpacked {
				c.s.release(t.key)
			}
		})
	}()
	nin := len(in[0])
	transfers := make([]*task, nin)
	for i := range transfers {
		spec, err := encodeShuffleSpec(shuffleSpec{Run: run, Part: i, N: n, NIn: nin, Owners: owners, Keys: keys, Valid: valid, Range: rg})
		if err != nil {
			return nil, nil, "", err
		}
		t, err := c.inputTask(fmt.Sprintf("%s-transfer-%d", run, i), kindShuffleTransfer, spec, in, i)
		if err != nil {
			return nil, nil, "", err
		}
		transfers[i] = t
	}
	if err := c.s.add(transfers); err != nil {
		return nil, nil, "", err
	}
	counts := make([]int64, n)
	where := map[string]int{}
	for _, t := range transfers {
		futures = append(futures, c.newFuture(t, nil))
	}
	// In a cell, bars of the shuffle's tasks and the bytes each worker sent and received (also
	// in the cluster's reprs and dashboard, since the workers started).
	sentBar := display.NewProgress("shuffle: input partitions sent", int64(len(futures)))
	moved := newShuffleBytes(c, ws)
	for i, f := range futures {
		if err := c.waitShuffleTask(ctx, f.t, ws); err != nil {
			return nil, nil, "", fmt.Errorf("input partition %d: %w", i, err)
		}
		v, err := f.Result(ctx)
		if err != nil {
			return nil, nil, "", c.lostOr(ws, fmt.Errorf("input partition %d: %w", i, err))
		}
		got, err := decodeShuffleDone(v, n)
		if err != nil {
			return nil, nil, "", fmt.Errorf("input partition %d: %w", i, err)
		}
		for p, k := range got.Counts {
			counts[p] += k
		}
		where[f.workerName()+"\x00"+got.Where]++
		sentBar.Add(1)
		moved.update()
	}
	sentBar.Done()
	var parts []int
	var lens []int
	for p, k := range counts {
		if k > 0 {
			parts = append(parts, p)
			lens = append(lens, int(k))
		}
	}
	if len(parts) == 0 {
		return nil, nil, "", errors.New("the columns have no rows")
	}
	// One unpack task per output partition and column, on the partition's owner, after every
	// transfer (its inputs: the barrier).
	byCol := make([][]*task, len(cols))
	for j := range cols {
		for _, p := range parts {
			spec, err := encodeShuffleSpec(shuffleSpec{Run: run, Part: p, N: n, NIn: nin, Col: j, Rows: counts[p]})
			if err != nil {
				return nil, nil, "", err
			}
			t := &task{key: fmt.Sprintf("%s-unpack-%d-%d", run, p, j), spec: taskSpec{Kind: kindShuffleUnpack, Chunk: spec, Keep: true},
				deps: transfers, restrict: []string{ownerNames[p]}, maxRetries: c.retries, refs: 1, priority: c.priority}
			byCol[j] = append(byCol[j], t)
			unpacked = append(unpacked, t)
		}
	}
	if err := c.s.add(unpacked); err != nil {
		unpacked = nil
		return nil, nil, "", err
	}
	kepts := make([][]plan.Kept, len(cols))
	keptMu.Lock()
	for j, ts := range byCol {
		for _, t := range ts {
			kept[keptID{c.s, t.key}] = t
			kepts[j] = append(kepts[j], &keptChunk{f: c.newFuture(t, nil)})
		}
	}
	keptMu.Unlock()
	fail := func(err error) ([]*gpuarray.Array, []int, string, error) {
		for _, ks := range kepts {
			for _, k := range ks {
				k.Release()
			}
		}
		unpacked = nil
		return nil, nil, "", err
	}
	unpackBar := display.NewProgress("shuffle: output pieces stored", int64(len(unpacked)))
	for j, ks := range kepts {
		for q, k := range ks {
			if err := c.waitShuffleTask(ctx, k.(*keptChunk).f.t, ws); err != nil {
				return fail(fmt.Errorf("output partition %d, column %d: %w", parts[q], j, err))
			}
			unpackBar.Add(1)
		}
	}
	unpackBar.Done()
	moved.update()
	out := make([]*gpuarray.Array, len(cols))
	for j := range cols {
		a, err := gpuarray.FromKept(c, cols[j].DType(), lens, kepts[j])
		if err != nil {
			for _, a := range out[:j] {
				a.Release()
			}
			for _, ks := range kepts[j:] {
				for _, k := range ks {
					k.Release()
				}
			}
			unpacked = nil
			return nil, nil, "", err
		}
		out[j] = a
	}
	done = true
	return out, parts, partitionNote(where), nil
}

// lostOr marks err as a lost worker's when a worker of ws is gone or was restarted.
func (c *Client) lostOr(ws []WorkerInfo, err error) error {
	if c.lost(ws) {
		return fmt.Errorf("%w: %w", errShuffleLost, err)
	}
	return err
}

// lost reports whether a worker of ws is gone or was restarted (workers that joined since
// do not count).
func (c *Client) lost(ws []WorkerInfo) bool {
	now := workerIncarnations(c.WorkerInfo())
	for _, w := range ws {
		if pid, ok := now[w.Name]; !ok || pid != w.PID {
			return true
		}
	}
	return false
}

// stateChanges returns a channel closed at the scheduler's next change (nil when the client's
// scheduler is remote: then only the tasks' own changes wake the waits).
func (c *Client) stateChanges() <-chan struct{} {
	s, ok := c.s.(*scheduler)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// waitShuffleTask waits for t to finish; a worker of ws lost meanwhile ends the wait with
// errShuffleLost (a task bound to it would wait for ever).
func (c *Client) waitShuffleTask(ctx context.Context, t *task, ws []WorkerInfo) error {
	mu := c.s.locker()
	for {
		sched := c.stateChanges()
		mu.Lock()
		st, ch, err := t.state, t.changed, t.err
		mu.Unlock()
		switch st {
		case StateMemory:
			return nil
		case StateErred, StateCancelled:
			return c.lostOr(ws, err)
		}
		if c.lost(ws) {
			return errShuffleLost
		}
		select {
		case <-ch:
		case <-sched:
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", t.key, ctx.Err())
		}
	}
}

// waitLost waits at most d for a worker of ws to be lost, and reports whether one was.
func (c *Client) waitLost(ctx context.Context, ws []WorkerInfo, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond) // remote schedulers: no change events here
	defer tick.Stop()
	for {
		sched := c.stateChanges()
		if c.lost(ws) {
			return true
		}
		select {
		case <-sched:
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}

// dropShuffle tells every worker to forget the run's shards and refuse late ones.
func (c *Client) dropShuffle(run string, ws []WorkerInfo) {
	spec, err := encodeShuffleSpec(shuffleSpec{Run: run})
	if err != nil {
		return
	}
	// The workers there are now: a shard pushed to a restarted worker by a transfer of this
	// run is dropped with the rest.
	names := map[string]bool{}
	for _, w := range c.WorkerInfo() {
		names[w.Name] = true
	}
	var ts []*task
	for _, name := range sortedKeys(names) {
		ts = append(ts, &task{key: fmt.Sprintf("%s-drop-%s", run, name), spec: taskSpec{Kind: kindShuffleDrop, Chunk: spec},
			restrict: []string{name}, refs: 1, priority: c.priority})
	}
	if err := c.s.add(ts); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shuffleLostWait)
	defer cancel()
	for _, t := range ts {
		f := c.newFuture(t, nil)
		if f.wait(ctx) != nil {
			f.Cancel()
		}
		f.Release()
	}
}
