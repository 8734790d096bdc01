package cluster_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// keyedFrame is a frame of rows rows in parts partitions: an int64 key k of keys values in
// [0, keys) with nulls, floats x and strings s with nulls (211 distinct values).
func keyedFrame(rows, keys, parts int) *dataframe.Frame {
	k := make([]int64, rows)
	ok := make([]bool, rows)
	x := make([]float64, rows)
	s := make([]string, rows)
	sok := make([]bool, rows)
	for i := range k {
		k[i], ok[i], x[i], s[i], sok[i] = int64(i*7919%keys), i%17 != 0, float64(i)/3, fmt.Sprintf("r%d", i%211), i%13 != 0
	}
	return dataframe.FromSlices([]string{"k", "x", "s"}, []any{dataframe.Nullable(k, ok), x, dataframe.Nullable(s, sok)}, dataframe.NPartitions(parts))
}

// busiestWorker returns the worker holding the most results (a persisted frame's partitions),
// failing when none holds any.
func busiestWorker(t *testing.T, c *cluster.LocalCUDA) cluster.WorkerInfo {
	t.Helper()
	var victim cluster.WorkerInfo
	for _, w := range c.WorkerInfo() {
		if w.InMemory > victim.InMemory {
			victim = w
		}
	}
	if victim.InMemory == 0 {
		t.Fatalf("no worker holds the persisted partitions: %+v", c.WorkerInfo())
	}
	return victim
}

// shuffleAllRows shuffles cols (shuffleInput's, keyed on column 0) into n partitions on c and
// fails unless the output holds rows rows.
func shuffleAllRows(t *testing.T, ctx context.Context, c *cluster.LocalCUDA, cols []*gpuarray.Array, rows, n int) []*gpuarray.Array {
	t.Helper()
	out, _, err := c.ShuffleColumns(ctx, cols, []int{0}, []int{-1}, n)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, l := range out[0].Chunks()[0] {
		total += l
	}
	if total != rows {
		t.Fatalf("%d rows after the shuffle, want %d", total, rows)
	}
	return out
}
