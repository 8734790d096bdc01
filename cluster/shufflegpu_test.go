package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
)

// hostPartition is partitionDevice over the host's partitioning, or failing with err.
type hostPartition struct {
	err   error
	calls int
}

func (h *hostPartition) index() int { return 0 }

func (h *hostPartition) hashPartition(_ context.Context, keys [][]int64, parts int) ([]int32, error) {
	h.calls++
	if h.err != nil {
		return nil, h.err
	}
	return hashjoin.Partition(keys, parts)
}

// TestHashPartsOnGPUWorker partitions keys as a GPU worker does (over a host emulation of
// the device kernel) and as a CPU worker does: the same partitions, the GPU's when it works,
// the CPU's with the GPU's error named when it fails, and the CPU's on a worker without one.
func TestHashPartsOnGPUWorker(t *testing.T) {
	dev := &hostPartition{}
	defer func(open func() (partitionDevice, error)) { openPartitionDevice = open }(openPartitionDevice)
	openPartitionDevice = func() (partitionDevice, error) { return dev, nil }
	keys := hashjoin.Keys{make([]int64, 1000), make([]int64, 1000)}
	for i := range keys[0] {
		keys[0][i], keys[1][i] = int64(i*7919%313), int64(i%7/6)
	}
	want, err := hashjoin.Partition(keys, 7)
	if err != nil {
		t.Fatal(err)
	}
	gpu := &worker{cfg: WorkerConfig{Name: "gpu0", GPU: "emulated"}}
	cpu := &worker{cfg: WorkerConfig{Name: "cpu0"}}
	cases := []struct {
		w     *worker
		err   error
		where string
		calls int
	}{
		{gpu, nil, "hash partitioning on its GPU 0", 1},
		{gpu, errors.New("out of memory"), "hash partitioning on the CPU (its GPU: out of memory)", 1},
		{cpu, nil, "hash partitioning on the CPU (no GPU on this worker)", 0},
	}
	for _, c := range cases {
		dev.err, dev.calls = c.err, 0
		got, where, err := c.w.hashParts(context.Background(), keys, 7)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || !strings.HasPrefix(where, c.where) || dev.calls != c.calls {
			t.Errorf("%s (device error %v): where %q, %d device calls, same partitions %v; want %q, %d calls", c.w.cfg.Name, c.err, where, dev.calls, slices.Equal(got, want), c.where, c.calls)
		}
	}
}
