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

// notedShuffler is a columnShuffler that also says where the partitioning ran, for Path
// (cluster.Client.ShuffleColumnsNote: on a GPU worker's GPU or on a worker's CPU).
type notedShuffler interface {
	ShuffleColumnsNote(ctx context.Context, cols []*gpuarray.Array, keys, valid []int, n int) ([]*gpuarray.Array, []int, string, error)
}

// clusterShuffle hash-partitions a frame's columns on its workers when opts name a cluster
// that shuffles (On(c)): the columns are persisted there first (those persisted already
// stay), then moved worker to worker. String and categorical keys are hashed by their bytes,
// which are in this process (Path says so); the hashes join the columns moved. It returns
// nil, nil when it does not apply. full reports that no partition came out empty.
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
		if _, err := f.field(name); err != nil {
			return nil, false, err
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
	rc := &runCtx{opts: opts, target: tg}
	var keys, valid, extra []int
	for _, name := range on {
		for i, c := range t.cols {
			if c.name != name {
				continue
			}
			k := valIdx[i]
			if c.dt == String || c.dt == Category {
				// Strings hash by their bytes, which are in this process: the hashes go to
				// the workers as a key column, as the host shuffle encodes them.
				h, err := stringHashes(rc, t, c)
				if err != nil {
					return nil, false, err
				}
				k = add(h)
				extra = append(extra, k)
			}
			keys, valid = append(keys, k), append(valid, validIdx[i])
		}
	}
	ctx := tg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	var moved []*gpuarray.Array
	var parts []int
	note := ""
	if ns, ok := sh.(notedShuffler); ok {
		moved, parts, note, err = ns.ShuffleColumnsNote(ctx, arrs, keys, valid, n)
	} else {
		moved, parts, err = sh.ShuffleColumns(ctx, arrs, keys, valid, n)
	}
	if err != nil {
		return nil, false, err
	}
	for _, k := range extra {
		moved[k].Release()
		arrs[k].Release()
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
	rc.mu.Lock()
	line := fmt.Sprintf("shuffle: hash partitioning on the cluster's workers into %d partitions, moved worker to worker", n)
	if note != "" {
		line += "; " + note
	}
	rc.notes = append(rc.notes, line)
	rc.mu.Unlock()
	return rc.computed(f, res), len(parts) == n, nil
}

// stringHashes returns the FNV-1a hashes of a string or categorical column's rows (0 for a
// null), as partitionKeys hashes them, persisted where t's columns are. The column's
// positions or codes come to this process for it, which Path names.
func stringHashes(rc *runCtx, t *table, c *column) (*gpuarray.Array, error) {
	ht, err := rc.toHost(&table{cols: []*column{c}, rows: t.rows})
	if err != nil {
		return nil, err
	}
	h := ht.cols[0]
	v := make([]int64, h.vals.Len())
	for i := range v {
		if h.isValid(i) {
			v[i] = fnv(h.stringAt(i))
		}
	}
	rc.host("shuffle: string key %q hashed on the host (its strings are in this process); rows moved worker to worker", c.name)
	a := gpuarray.FromSliceInt64(v, gpuarray.ChunkSizes(partLens(t))).Persist(rc.opts...)
	return a, a.Err()
}
