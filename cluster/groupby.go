package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// GroupBy task kinds (taskSpec.Kind); their groupSpec is gob-encoded in taskSpec.Chunk.
const (
	kindGroupPartial = "groupby-partial" // aggregate one partition where it is held
	kindGroupCombine = "groupby-combine" // combine partials (one level of the tree)
)

// groupFanIn is how many partials one combine task merges (dask's split_every).
const groupFanIn = 8

// groupSpec says what one groupby task does: which of its inputs are the keys, the values,
// their validity (-1: none) and the rows' positions (-1: none), and the aggregations.
type groupSpec struct {
	Keys, KeyValid []int
	Vals, ValValid []int
	Pos            int
	Specs          []hashagg.Spec
}

// groupResult is the value of a groupby task: the partial and where its steps ran (per
// worker name, a NUL, and the kind of step: how many partitions or combines took it).
type groupResult struct {
	P     *hashagg.Partial
	Where map[string]int
}

func encodeGob(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeGroupResult(v any) (*groupResult, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("a groupby task returned %T", v)
	}
	var r groupResult
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&r); err != nil {
		return nil, fmt.Errorf("decode a partial aggregate: %w", err)
	}
	if r.P == nil {
		return nil, fmt.Errorf("a groupby task returned no partial")
	}
	return &r, nil
}

// GroupPartials aggregates 1-D arrays persisted on this cluster (the columns of a frame, each
// chunk a partition) on the workers that hold them: a task per partition groups its rows and
// folds the values into a hashagg.Partial where the chunks are (on a GPU worker whose chunks
// are held in device memory, with the dense-code group-aggregate kernel when the keys and
// aggregations allow it; on the CPU with hashagg otherwise), and combine tasks merge the
// partials on the workers, groupFanIn at a time, as a tree (dask's tree reduction); only the
// partials move, and only the last comes to this process. keys, vals and pos index cols
// (keyValid and valValid: the validity columns, -1 for none; pos: the rows' global
// positions for First and Last, -1 for none); specs read vals by position. It returns the
// combined partial and a note of where each step ran. A worker lost meanwhile has its tasks
// and the chunks it held computed again from the graph. It is plumbing for package dataframe
// (GroupBy on a cluster).
func (c *Client) GroupPartials(ctx context.Context, cols []*gpuarray.Array, keys, keyValid, vals, valValid []int, pos int, specs []hashagg.Spec) (*hashagg.Partial, string, error) {
	ctx = ctxOr(ctx)
	if len(cols) == 0 || len(keys) == 0 {
		return nil, "", fmt.Errorf("cluster: groupby: %d columns, %d keys", len(cols), len(keys))
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
	spec, err := encodeGob(groupSpec{Keys: keys, KeyValid: keyValid, Vals: vals, ValValid: valValid, Pos: pos, Specs: specs})
	if err != nil {
		return nil, "", fmt.Errorf("cluster: groupby: encode task: %w", err)
	}
	run := c.s.newKey("groupby")
	var futures []*Future
	defer func() {
		for _, f := range futures {
			f.Release()
		}
	}()
	level := make([]*task, len(in[0]))
	for i := range level {
		t, err := c.inputTask(fmt.Sprintf("%s-partial-%d", run, i), kindGroupPartial, spec, in, i)
		if err != nil {
			return nil, "", fmt.Errorf("cluster: groupby: %w", err)
		}
		level[i] = t
	}
	all := slices.Clone(level)
	depth := 0
	for len(level) > 1 {
		depth++
		var next []*task
		for lo := 0; lo < len(level); lo += groupFanIn {
			hi := min(lo+groupFanIn, len(level))
			t := &task{key: fmt.Sprintf("%s-combine-%d-%d", run, depth, len(next)), spec: taskSpec{Kind: kindGroupCombine},
				deps: slices.Clone(level[lo:hi]), maxRetries: c.retries, refs: 1, priority: c.priority}
			for _, d := range level[lo:hi] {
				t.spec.Inputs = append(t.spec.Inputs, d.key)
			}
			next = append(next, t)
		}
		all = append(all, next...)
		level = next
	}
	if err := c.s.add(all); err != nil {
		return nil, "", fmt.Errorf("cluster: groupby: %w", err)
	}
	for _, t := range all {
		futures = append(futures, c.newFuture(t, nil))
	}
	v, err := futures[len(futures)-1].Result(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: groupby: %w", err)
	}
	r, err := decodeGroupResult(v)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: groupby: %w", err)
	}
	lines := make([]string, 0, len(r.Where))
	for _, k := range sortedKeys(r.Where) {
		name, what, _ := strings.Cut(k, "\x00")
		lines = append(lines, fmt.Sprintf("%s: %d %s", name, r.Where[k], what))
	}
	note := fmt.Sprintf("groupby: partial aggregates of %d partitions on the workers holding them, combined there as a tree (fan-in %d, %d levels), only the partials moved (%s)",
		len(in[0]), groupFanIn, depth, strings.Join(lines, "; "))
	return r.P, note, nil
}

// mergeWhere adds the step counts of b into a.
func mergeWhere(a, b map[string]int) {
	for k, n := range b {
		a[k] += n
	}
}
