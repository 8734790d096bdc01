package cluster

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// The set-up that GroupPartials (groupby.go), groupSplitRun (groupsplit.go) and shuffleRun
// (shuffle.go) share: one task per input partition that runs where the partition's kept
// chunks are, and for a shuffle run the owners of its output partitions and the clean-up of
// its tasks and data.

// inputTask returns the task key, of kind with the encoded spec, over the i-th chunks of the
// kept columns in: it depends on the tasks that hold them, so it runs where they are, and
// reads them by reference.
func (c *Client) inputTask(key, kind string, spec []byte, in [][]plan.Kept, i int) (*task, error) {
	t := &task{key: key, spec: taskSpec{Kind: kind, Chunk: spec}, maxRetries: c.retries, refs: 1, priority: c.priority}
	for j := range in {
		ref := in[j][i].Ref()
		keptMu.Lock()
		d := kept[keptID{c.s, ref}]
		keptMu.Unlock()
		if d == nil {
			return nil, fmt.Errorf("column %d's chunk %d (%s) is not held by this cluster (released?)", j, i, ref)
		}
		t.deps = append(t.deps, d)
		t.spec.Inputs = append(t.spec.Inputs, ref)
	}
	return t, nil
}

// shuffleOwners assigns the n output partitions of a shuffle run to the workers ws in turn
// (partition p to ws[p%len(ws)]): the data address that each partition's pieces are pushed to,
// and that worker's name.
func shuffleOwners(ws []WorkerInfo, n int) (owners, names []string, err error) {
	owners, names = make([]string, n), make([]string, n)
	for p := range owners {
		w := ws[p%len(ws)]
		if w.DataAddress == "" {
			return nil, nil, fmt.Errorf("worker %s serves no data port", w.Name)
		}
		owners[p], names[p] = w.DataAddress, w.Name
	}
	return owners, names, nil
}

// endShuffleRun ends shuffle run run on the workers ws: where it did not finish (!done) the
// futures' tasks are cancelled and then unfinished runs (nil for nothing more); the futures
// are released, and the workers drop the run's data.
func (c *Client) endShuffleRun(run string, ws []WorkerInfo, futures []*Future, done bool, unfinished func()) {
	if !done {
		var keys []string
		for _, f := range futures {
			keys = append(keys, f.Key())
		}
		c.s.cancel(keys)
		if unfinished != nil {
			unfinished()
		}
	}
	for _, f := range futures {
		f.Release()
	}
	c.dropShuffle(run, ws)
}
